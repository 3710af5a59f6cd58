/* Pipelines from embedded SPIR-V (see vk_pipeline.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "shaders_embed.h"
#include "vk_pipeline.h"

static const zn_spv_blob *find_blob(const char *name) {
    for (const zn_spv_blob *b = zn_spv_blobs; b->name; b++)
        if (!strcmp(b->name, name)) return b;
    return NULL;
}

void vkpipes_default_cache_path(const vkdev *d, char *buf, size_t cap) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg) snprintf(buf, cap, "%s/zinc/pipelines-%04x-%04x.bin", xdg, d->info.vendor_id, d->info.device_id);
    else if (home && *home) snprintf(buf, cap, "%s/.cache/zinc/pipelines-%04x-%04x.bin", home, d->info.vendor_id, d->info.device_id);
    else if (cap) buf[0] = 0;
}

/* The cache file is only a hint: any failure to read it is ignored and the
 * driver validates the header (vendor, device, driver UUID) itself. */
static void *read_file(const char *path, size_t *n) {
    FILE *f;
    zn_err err; /* a FIFO or directory there is not waited on or read, only ignored */
    if (zn_file_fopen_regular(path, &f, &err)) return NULL;
    void *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long len = ftell(f);
        if (len > 0 && len < (64l << 20) && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)len))) {
            if (fread(buf, 1, (size_t)len, f) == (size_t)len) *n = (size_t)len;
            else { free(buf); buf = NULL; }
        }
    }
    fclose(f);
    return buf;
}

zn_status vkpipes_init(vkpipes *ps, vkdev *d, const char *cache_path, zn_err *err) {
    memset(ps, 0, sizeof *ps);
    ps->d = d;
    if (cache_path) snprintf(ps->cache_path, sizeof ps->cache_path, "%s", cache_path);
    VkPushConstantRange pr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = ZN_VK_PUSH_MAX};
    VkPipelineLayoutCreateInfo lci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                      .pushConstantRangeCount = 1, .pPushConstantRanges = &pr};
    zn_status st = vkdev_check(d->fn.vkCreatePipelineLayout(d->dev, &lci, NULL, &ps->layout), err, "vkCreatePipelineLayout");
    if (st) return st;
    size_t n = 0;
    void *data = ps->cache_path[0] ? read_file(ps->cache_path, &n) : NULL;
    VkPipelineCacheCreateInfo cci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO, .initialDataSize = n,
                                     .pInitialData = data};
    if (d->fn.vkCreatePipelineCache(d->dev, &cci, NULL, &ps->cache) != VK_SUCCESS) {
        cci.initialDataSize = 0;
        cci.pInitialData = NULL;
        st = vkdev_check(d->fn.vkCreatePipelineCache(d->dev, &cci, NULL, &ps->cache), err, "vkCreatePipelineCache");
    }
    free(data);
    if (st) vkpipes_free(ps);
    return st;
}

static void mkdir_parents(const char *path) {
    char tmp[ZN_PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return;
        *p = '/';
    }
}

static void save_cache(vkpipes *ps) {
    if (!ps->cache_path[0] || !ps->cache || !ps->n_created) return;
    size_t n = 0;
    vkdev *d = ps->d;
    if (d->fn.vkGetPipelineCacheData(d->dev, ps->cache, &n, NULL) != VK_SUCCESS || !n) return;
    void *buf = malloc(n);
    if (buf && d->fn.vkGetPipelineCacheData(d->dev, ps->cache, &n, buf) == VK_SUCCESS) {
        mkdir_parents(ps->cache_path);
        /* engines of one process and other processes may save at once: a
         * temporary file of each its own, renamed over the cache atomically */
        char tmp[ZN_PATH_MAX + 64];
        snprintf(tmp, sizeof tmp, "%s.%ld.%p.tmp", ps->cache_path, (long)getpid(), (void *)ps);
        FILE *f;
        zn_err err;
        if (!zn_file_create_regular(tmp, O_WRONLY | O_TRUNC, "wb", &f, &err)) {
            bool ok = fwrite(buf, 1, n, f) == n;
            if (fclose(f) == 0 && ok) rename(tmp, ps->cache_path);
            else remove(tmp);
        }
    }
    free(buf);
}

void vkpipes_free(vkpipes *ps) {
    if (!ps->d) return;
    save_cache(ps);
    if (ps->cache) ps->d->fn.vkDestroyPipelineCache(ps->d->dev, ps->cache, NULL);
    if (ps->layout) ps->d->fn.vkDestroyPipelineLayout(ps->d->dev, ps->layout, NULL);
    memset(ps, 0, sizeof *ps);
}

static zn_status create(vkpipes *ps, vkpipe *p, const char *shader, const uint32_t *spec, uint32_t n_spec,
                        uint32_t subgroup, zn_err *err) {
    memset(p, 0, sizeof *p);
    vkdev *d = ps->d;
    const zn_spv_blob *b = find_blob(shader);
    if (!b) return zn_errf(err, ZN_ERR_NOT_FOUND, "vulkan: no embedded shader '%s'", shader);
    if (n_spec > ZN_VK_MAX_SPEC) return zn_errf(err, ZN_ERR_ARG, "vulkan: %s: %u spec constants", shader, n_spec);
    VkShaderModuleCreateInfo smi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                    .codeSize = (size_t)(b->end - b->code) * 4, .pCode = b->code};
    VkShaderModule mod;
    zn_status st = vkdev_check(d->fn.vkCreateShaderModule(d->dev, &smi, NULL, &mod), err, "vkCreateShaderModule");
    if (st) return zn_err_prefix(err, "shader %s", shader);
    VkSpecializationMapEntry ent[ZN_VK_MAX_SPEC];
    for (uint32_t i = 0; i < n_spec; i++) ent[i] = (VkSpecializationMapEntry){.constantID = i, .offset = 4 * i, .size = 4};
    VkSpecializationInfo si = {.mapEntryCount = n_spec, .pMapEntries = ent, .dataSize = 4 * n_spec, .pData = spec};
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfo rs = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO, .requiredSubgroupSize = subgroup};
    bool req = subgroup && d->info.subgroup_size_control && subgroup >= d->info.subgroup_min && subgroup <= d->info.subgroup_max;
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, .pNext = req ? &rs : NULL,
                  .flags = req ? VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT : 0,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT, .module = mod, .pName = "main",
                  .pSpecializationInfo = n_spec ? &si : NULL},
        .layout = ps->layout};
    st = vkdev_check(d->fn.vkCreateComputePipelines(d->dev, ps->cache, 1, &ci, NULL, &p->pipe), err,
                     "vkCreateComputePipelines");
    d->fn.vkDestroyShaderModule(d->dev, mod, NULL);
    if (st) return zn_err_prefix(err, "shader %s", shader);
    p->shader = b->name;
    return ZN_OK;
}

zn_status vkpipe_create(vkpipes *ps, vkpipe *p, const char *shader, const uint32_t *spec, uint32_t n_spec,
                        uint32_t subgroup, zn_err *err) {
    zn_status st = create(ps, p, shader, spec, n_spec, subgroup, err);
    if (!st) ps->n_created++;
    return st;
}

typedef struct create_all_ctx {
    vkpipes *ps;
    vkpipe_job *jobs;
    int n;
    atomic_int next, created;
} create_all_ctx;

static void *create_worker(void *arg) {
    create_all_ctx *a = arg;
    for (int i; (i = atomic_fetch_add(&a->next, 1)) < a->n;) {
        const vkpipe_job *j = &a->jobs[i];
        zn_err err = {0};
        if (!create(a->ps, j->p, j->shader, j->spec, j->n_spec, j->subgroup, &err)) atomic_fetch_add(&a->created, 1);
    }
    return NULL;
}

void vkpipe_create_all(vkpipes *ps, vkpipe_job *jobs, int n, int threads) {
    create_all_ctx a = {.ps = ps, .jobs = jobs, .n = n};
    atomic_init(&a.next, 0);
    atomic_init(&a.created, 0);
    pthread_t th[ZN_VK_BUILD_THREADS];
    int nt = 0;
    if (threads > ZN_VK_BUILD_THREADS) threads = ZN_VK_BUILD_THREADS;
    for (; nt < threads - 1 && nt < n - 1; nt++)
        if (pthread_create(&th[nt], NULL, create_worker, &a)) break;
    create_worker(&a); /* this thread too; alone when no thread started */
    for (int i = 0; i < nt; i++) pthread_join(th[i], NULL);
    ps->n_created += atomic_load(&a.created);
}

void vkpipe_destroy(vkpipes *ps, vkpipe *p) {
    if (p->pipe) ps->d->fn.vkDestroyPipeline(ps->d->dev, p->pipe, NULL);
    memset(p, 0, sizeof *p);
}
