/* Hardware profiles: names from detected devices (real devices' PCI ids,
 * names and heap sizes), the memory estimate, and model shapes read from a
 * file against the backends' own sizes. */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "model.h"
#include "profile.h"

#define MIB (1ull << 20)
#define GIB (1ull << 30)

static void name_of(const zn_hw *hw, const char *want) {
    zn_profile p;
    profile_from_hw(hw, &p);
    CHECK_EQ_STR(p.name, want);
}

static void test_names(void) {
    /* an H200 reports a 143,771 MiB heap: 140.4 GiB, sold as 141 GB */
    name_of(&(zn_hw){.gpu = true, .vendor_id = 0x10DE, .device_id = 0x2335, .name = "NVIDIA H200", .mem_bytes = 143771 * MIB},
            "nvidia-hopper-141gb");
    name_of(&(zn_hw){.gpu = true, .vendor_id = 0x10DE, .device_id = 0x2330, .name = "NVIDIA H100 80GB HBM3",
                     .mem_bytes = 81559 * MIB}, "nvidia-hopper-80gb");
    name_of(&(zn_hw){.gpu = true, .vendor_id = 0x10DE, .device_id = 0x2684, .name = "NVIDIA GeForce RTX 4090",
                     .mem_bytes = 24564 * MIB}, "nvidia-ada-24gb");
    name_of(&(zn_hw){.gpu = true, .vendor_id = 0x10DE, .device_id = 0x20B2, .name = "NVIDIA A100-SXM4-80GB",
                     .mem_bytes = 81920 * MIB}, "nvidia-ampere-80gb");
    /* RADV names the GFX IP; a 32 GB R9700 reports a little under 32 GiB */
    name_of(&(zn_hw){.gpu = true, .vendor_id = 0x1002, .device_id = 0x7551, .name = "AMD Radeon AI PRO R9700 (RADV GFX1201)",
                     .mem_bytes = 32624 * MIB}, "amd-rdna4-32gb");
    name_of(&(zn_hw){.gpu = true, .vendor_id = 0x1002, .device_id = 0x7550, .name = "AMD Radeon RX 9070 XT",
                     .mem_bytes = 16304 * MIB}, "amd-rdna4-16gb");
    name_of(&(zn_hw){.gpu = true, .vendor_id = 0x1002, .device_id = 0x744c, .name = "AMD Radeon RX 7900 XTX (RADV GFX1100)",
                     .mem_bytes = 24560 * MIB}, "amd-rdna3-24gb");
    name_of(&(zn_hw){.gpu = true, .vendor_id = 0x106B, .name = "Apple M3 Max", .mem_bytes = 48 * GIB, .integrated = true},
            "apple-silicon");
    name_of(&(zn_hw){.gpu = true, .vendor_id = 0x8086, .name = "Intel(R) Arc(tm) A770 Graphics", .mem_bytes = 16 * GIB},
            "intel-arc-16gb");
    name_of(&(zn_hw){.gpu = true, .vendor_id = 0x1234, .name = "Some GPU", .mem_bytes = 8 * GIB}, "gpu-8gb");
    /* a 24 GB machine: MemTotal is a little less */
    name_of(&(zn_hw){.gpu = false, .name = "cpu", .mem_bytes = 25300000000ull}, "cpu-24gb");
    name_of(&(zn_hw){.gpu = false, .name = "cpu", .mem_bytes = 16 * GIB}, "cpu-16gb");
    zn_profile p;
    profile_from_hw(&(zn_hw){.gpu = false, .mem_bytes = 16 * GIB}, &p);
    CHECK_EQ_STR(p.backend, "cpu");
    CHECK_EQ_INT(p.budget, 16 * GIB / 100 * ZN_FIT_MEM_PERCENT);
    CHECK_EQ_INT(p.scratch, ZN_FIT_ACT_BYTES);
    profile_from_hw(&(zn_hw){.gpu = true, .vendor_id = 0x10DE, .mem_bytes = 143771 * MIB}, &p);
    CHECK_EQ_STR(p.backend, "vulkan");
    CHECK_EQ_INT(p.scratch, ZN_FIT_ACT_BYTES + ZN_VK_MM_SCRATCH_MAX);  /* 1/64 of 140 GiB, capped */
}

static void test_fit(void) {
    const zn_catalog_entry *m = catalog_find("qwen35-35b-a3b-q4k-m"), *ud = catalog_find("qwen35-35b-a3b-ud-q4k-xl");
    CHECK(m && ud);
    if (!m || !ud) return;
    zn_profile h200, cpu24, cpu64;
    profile_from_hw(&(zn_hw){.gpu = true, .vendor_id = 0x10DE, .device_id = 0x2335, .mem_bytes = 143771 * MIB}, &h200);
    profile_from_hw(&(zn_hw){.mem_bytes = 25300000000ull}, &cpu24);
    profile_from_hw(&(zn_hw){.mem_bytes = 64 * GIB}, &cpu64);
    zn_fit f;
    /* the H200 holds the whole trained context: 10 KV layers x 2 x 512 x 2 bytes = 20 KiB a token */
    profile_fit(&h200, m->size, &m->shape, &f);
    CHECK(f.known && f.fits);
    CHECK_EQ_INT(f.kv_per_token, 20480);
    CHECK_EQ_INT(f.ctx, 262144);
    CHECK_EQ_INT(f.fixed, m->size + m->shape.state_bytes + h200.scratch);
    /* 24 GB of RAM: the Q4_K_M fits with the context what is left holds */
    profile_fit(&cpu24, m->size, &m->shape, &f);
    uint64_t left = cpu24.budget - (m->size + m->shape.state_bytes + cpu24.scratch);
    CHECK(f.fits);
    CHECK_EQ_INT(f.ctx, left / 20480 / ZN_FIT_CTX_STEP * ZN_FIT_CTX_STEP);
    CHECK(f.ctx >= ZN_FIT_MIN_CTX && f.ctx < 262144);
    /* the UD file is 214 MB larger: not even its weights, state and scratch fit */
    profile_fit(&cpu24, ud->size, &ud->shape, &f);
    CHECK(f.known && !f.fits && f.ctx < ZN_FIT_MIN_CTX);
    profile_fit(&cpu64, ud->size, &ud->shape, &f);
    CHECK(f.fits && f.ctx == 262144);
    /* weights larger than the memory: no context at all */
    profile_fit(&(zn_profile){.budget = 10 * GIB, .scratch = ZN_FIT_ACT_BYTES}, m->size, &m->shape, &f);
    CHECK(!f.fits && f.ctx == 0);
    char text[64];
    profile_fit_text(&f, &cpu24, text, sizeof text);
    CHECK(strstr(text, "no, needs 22.") != NULL);
    /* an unknown shape says so */
    profile_fit(&cpu24, 1000, &(zn_model_shape){0}, &f);
    CHECK(!f.known);
    profile_fit_text(&f, &cpu24, text, sizeof text);
    CHECK(strstr(text, "pull to know") != NULL);
}

/* The shape read from a file is what the backends allocate: K/V rows of
 * n_head_kv x head_dim per attention layer, and the Gated DeltaNet state of
 * the recurrent ones (the catalog's QWEN35_STATE uses the same formula). */
static void test_shape_of_file(void) {
    const char *path = "models/zinc-demo-qwen35.gguf";
    zn_model_shape sh;
    uint64_t w = 0;
    zn_err err = {0};
    CHECK(profile_shape_of_file(path, &sh, &w, &err) == ZN_OK);
    zn_model m;
    CHECK(model_load(&m, path, &err) == ZN_OK);
    const zn_hparams *hp = &m.hp;
    CHECK_EQ_INT(sh.n_attn, model_n_attn_layers(&m));
    CHECK(sh.n_attn > 0 && sh.n_attn < (uint32_t)hp->n_layer);  /* a hybrid */
    CHECK_EQ_INT(sh.kv_k, hp->n_head_kv * hp->head_dim_k);
    CHECK_EQ_INT(sh.kv_v, hp->n_head_kv * hp->head_dim_v);
    uint64_t conv = 4ull * (2ull * hp->ssm_d_state * hp->ssm_n_group + hp->ssm_d_inner) * (uint64_t)(hp->ssm_d_conv - 1);
    uint64_t delta = 4ull * hp->ssm_d_inner * (uint64_t)hp->ssm_d_state;
    CHECK_EQ_INT(sh.state_bytes, (uint64_t)(hp->n_layer - (int)sh.n_attn) * (conv + delta));
    CHECK_EQ_INT(sh.ctx_train, hp->n_ctx_train);
    CHECK_EQ_INT(w, m.gguf.size);
    model_free(&m);
    CHECK(profile_shape_of_file("/nonexistent.gguf", &sh, &w, &err) != ZN_OK);
    /* the catalog's Qwen3.5-2B state: 18 recurrent layers of 16 key / 16 value heads of 128, conv 4 */
    const zn_catalog_entry *e = catalog_find("qwen3.5-2b");
    CHECK(e && e->shape.state_bytes == 18ull * (4ull * (2 * 128 * 16 + 128 * 16) * 3 + 4ull * 128 * 16 * 128));
}

int main(void) {
    RUN(test_names);
    RUN(test_fit);
    RUN(test_shape_of_file);
    return harness_report("profile");
}
