/* Qwen3.5 through the engine, beyond the golden fixtures (test_golden.c):
 * - a synthetic qwen35 with H_v = 2*H_k (value head h reads key head
 *   h mod H_k), partial rotary dims and an IMRoPE pair on the 4th position
 *   component, against an independent numpy forward pass
 *   (tests/ref/qwen35_synth_ref.py, which keeps K/V in f16 as the cache
 *   does; EXP_SYNTH_LOGITS is its output), to 1e-5;
 * - the recurrent state carries across steps exactly: a prompt in pieces
 *   gives the logits of one batch, and seq_reset forgets the state. */
#include <unistd.h>

#include "engine.h"
#include "gguf.h"
#include "harness.h"

/* A CPU engine on n threads. */
#define CPU_OPTS(n) (&(zn_engine_opts){.backend = "cpu", .be = {.n_threads = (n), .device = -1}})

/* ---- output of /usr/bin/python3 tests/ref/qwen35_synth_ref.py ---- */
static const float EXP_SYNTH_LOGITS[112] = {0.63916719, -0.15908971, 0.20459009, 0.74896402, 0.46373022, -0.087326172, -0.58969216, -1.7803641, -1.0481584, 0.60470201, 0.52585948, -1.563628, 0.74676486, -0.56806598, 0.59264758, 0.021969, 0.91733657, 0.48482959, 0.18156912, 0.22443551, -0.86781224, 0.77053202, -0.31493446, -0.73657703, 0.44760455, 0.64460915, 2.1567149, -0.37681111, 0.77280179, -1.5243225, -0.70046891, -0.39919544, 0.43259335, -0.66433417, 0.23369596, -0.16947499, 1.0266935, -0.12263596, -0.24177, 0.76054036, 1.0308673, 0.36849224, 1.2042226, 0.74607113, 1.8577088, 1.5965011, 1.6578619, 0.1274492, -0.57728391, 0.1847409, 1.0691192, -0.50058381, 0.14046748, 0.51135923, -0.18715569, 0.71726532, -0.3393367, -0.32050189, 2.3027486, -0.10857969, 2.1632419, 1.1240459, -0.43909284, 0.92598974, -1.2821852, -0.49022407, -0.15884525, -0.23010932, 0.081671033, -0.82084957, -1.0448927, 1.1115254, -0.1800247, 0.59322157, 1.2920903, 0.36779589, 2.1443913, 1.1691358, 2.2501315, 0.89844701, 0.24113954, -0.99113411, -0.56380727, 0.25570603, 0.7326677, 1.3072885, -1.2597391, 0.62120319, -1.569075, 0.25357091, 1.3066721, 0.30605481, 0.38442051, -0.70992216, 0.27827741, 0.6624165, -0.0067868407, 0.77367646, 0.50207494, 1.6420143, 0.26674401, 0.79647631, -1.0180859, -0.28145611, 1.3635593, 0.043669074, -1.0994891, -0.87562522, -0.76530844, 0.18502272, -0.92460646, 0.13393079};

/* The synthetic model: the same sizes, tensor table and LCG as the oracle. */
enum { E = 32, V = 16, FF = 48, NH = 2, NKV = 1, HD = 16, NROT = 8, KC = 4, DS = 8, HK = 2, HV = 4 };
enum { CONV = 2 * HK * DS + HV * DS };
static const int32_t PROMPT[5] = {3, 14, 1, 9, 7}, DECODE[2] = {12, 5};

typedef struct synth_tensor {
    const char *name;
    uint64_t ne0, ne1;
    double scale, offset;
} synth_tensor;

static const synth_tensor SYNTH_TENSORS[] = {
    {"token_embd.weight", E, V, 2.0, 0}, {"output_norm.weight", E, 1, 0.2, 1}, {"output.weight", E, V, 0.5, 0},
    /* layer 0: Gated DeltaNet */
    {"blk.0.attn_norm.weight", E, 1, 0.2, 1}, {"blk.0.post_attention_norm.weight", E, 1, 0.2, 1},
    {"blk.0.attn_qkv.weight", E, CONV, 0.5, 0}, {"blk.0.attn_gate.weight", E, HV * DS, 0.5, 0},
    {"blk.0.ssm_conv1d.weight", KC, CONV, 1.0, 0}, {"blk.0.ssm_dt.bias", HV, 1, 1.0, 0},
    {"blk.0.ssm_a", HV, 1, 1.0, -1}, {"blk.0.ssm_beta.weight", E, HV, 1.0, 0},
    {"blk.0.ssm_alpha.weight", E, HV, 1.0, 0}, {"blk.0.ssm_norm.weight", DS, 1, 0.2, 1},
    {"blk.0.ssm_out.weight", HV * DS, E, 0.5, 0},
    {"blk.0.ffn_gate.weight", E, FF, 0.5, 0}, {"blk.0.ffn_up.weight", E, FF, 0.5, 0},
    {"blk.0.ffn_down.weight", FF, E, 0.5, 0},
    /* layer 1: gated attention */
    {"blk.1.attn_norm.weight", E, 1, 0.2, 1}, {"blk.1.post_attention_norm.weight", E, 1, 0.2, 1},
    {"blk.1.attn_q.weight", E, 2 * NH * HD, 0.5, 0}, {"blk.1.attn_k.weight", E, NKV * HD, 0.5, 0},
    {"blk.1.attn_v.weight", E, NKV * HD, 0.5, 0}, {"blk.1.attn_output.weight", NH * HD, E, 0.5, 0},
    {"blk.1.attn_q_norm.weight", HD, 1, 0.2, 1}, {"blk.1.attn_k_norm.weight", HD, 1, 0.2, 1},
    {"blk.1.ffn_gate.weight", E, FF, 0.5, 0}, {"blk.1.ffn_up.weight", E, FF, 0.5, 0},
    {"blk.1.ffn_down.weight", FF, E, 0.5, 0},
};
enum { N_SYNTH = sizeof SYNTH_TENSORS / sizeof SYNTH_TENSORS[0] };

static void synth_fill(float *dst, size_t n, uint32_t seed, double scale, double offset) {
    uint32_t x = seed;
    for (size_t i = 0; i < n; i++) {
        x = (x * 1103515245u + 12345u) & 0x7fffffffu;
        dst[i] = (float)(offset + scale * ((double)x / 2147483648.0 - 0.5));
    }
}

/* Writes the synthetic GGUF to a temporary file; path receives its name. */
static bool synth_write(char *path, size_t cap, float **data) {
    zn_err err = {0};
    gguf_writer *w;
    if (gguf_writer_init(&w, 32, &err) != ZN_OK) return false;
    const int32_t sections[4] = {1, 1, 1, 1}, recurrent[2] = {1, 0};
    bool ok = gguf_writer_set_str(w, "general.architecture", "qwen35") == ZN_OK;
    static const struct { const char *key; int64_t v; } ints[] = {
        {"qwen35.context_length", 64}, {"qwen35.embedding_length", E}, {"qwen35.block_count", 2},
        {"qwen35.feed_forward_length", FF}, {"qwen35.attention.head_count", NH},
        {"qwen35.attention.head_count_kv", NKV}, {"qwen35.attention.key_length", HD},
        {"qwen35.attention.value_length", HD}, {"qwen35.rope.dimension_count", NROT},
        {"qwen35.ssm.conv_kernel", KC}, {"qwen35.ssm.inner_size", HV * DS}, {"qwen35.ssm.state_size", DS},
        {"qwen35.ssm.time_step_rank", HV}, {"qwen35.ssm.group_count", HK},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        ok &= gguf_writer_set_int(w, ints[i].key, GGUF_TYPE_UINT32, ints[i].v) == ZN_OK;
    ok &= gguf_writer_set_f32(w, "qwen35.attention.layer_norm_rms_epsilon", 1e-6f) == ZN_OK;
    ok &= gguf_writer_set_f32(w, "qwen35.rope.freq_base", 10000.0f) == ZN_OK;
    ok &= gguf_writer_set_arr(w, "qwen35.rope.dimension_sections", GGUF_TYPE_INT32, sections, 4) == ZN_OK;
    ok &= gguf_writer_set_arr(w, "qwen35.attention.recurrent_layers", GGUF_TYPE_INT32, recurrent, 2) == ZN_OK;
    size_t total = 0;
    for (int i = 0; i < N_SYNTH; i++) total += SYNTH_TENSORS[i].ne0 * SYNTH_TENSORS[i].ne1;
    float *buf = *data = malloc(sizeof *buf * total);
    ok &= buf != NULL;
    for (int i = 0, off = 0; ok && i < N_SYNTH; i++) {
        const synth_tensor *t = &SYNTH_TENSORS[i];
        const uint64_t ne[2] = {t->ne0, t->ne1};
        synth_fill(buf + off, t->ne0 * t->ne1, (uint32_t)i + 1, t->scale, t->offset);
        ok &= gguf_writer_add_tensor(w, t->name, ZN_TYPE_F32, t->ne1 > 1 ? 2 : 1, ne, buf + off, &err) == ZN_OK;
        off += (int)(t->ne0 * t->ne1);
    }
    snprintf(path, cap, "/tmp/zn_test_qwen35_XXXXXX");
    int fd = ok ? mkstemp(path) : -1;
    if (fd >= 0) close(fd);
    ok &= fd >= 0 && gguf_writer_write(w, path, &err) == ZN_OK;
    CHECK_MSG(ok, "writing the synthetic model: %s", err.msg);
    gguf_writer_free(w);
    return ok;
}

static void test_synthetic_tiled_heads(void) {
    char path[64];
    float *data = NULL;
    zn_model m;
    zn_err err = {0};
    if (!synth_write(path, sizeof path, &data)) {
        free(data);
        return;
    }
    zn_status st = model_load(&m, path, &err);
    CHECK_MSG(st == ZN_OK, "%s", err.msg);
    if (st == ZN_OK) {
        CHECK_EQ_INT(m.hp.ssm_n_group, HK);
        CHECK_EQ_INT(m.hp.ssm_dt_rank, HV);
        CHECK(m.layers[0].recurrent && !m.layers[1].recurrent);
        for (int threads = 1; threads <= 2; threads++) {
            float logits[7 * V];
            zn_engine e;
            zn_seq s;
            CHECK(engine_init(&e, &m, CPU_OPTS(threads), &err) == ZN_OK);
            CHECK(seq_init(&s, &e, 16, &err) == ZN_OK);
            CHECK(engine_decode(&e, &s, PROMPT, 5, logits, true, &err) == ZN_OK);
            for (int i = 0; i < 2; i++)
                CHECK(engine_decode(&e, &s, DECODE + i, 1, logits + (5 + i) * V, false, &err) == ZN_OK);
            double worst = 0;
            for (int i = 0; i < 7 * V; i++) {
                double d = fabs(logits[i] - EXP_SYNTH_LOGITS[i]);
                worst = d > worst ? d : worst;
            }
            CHECK_MSG(worst < 1e-5, "%d threads: max |logit - oracle| = %.3g", threads, worst);
            seq_free(&s);
            engine_free(&e);
        }
        model_free(&m);
    }
    unlink(path);
    free(data);
}

static double max_diff(const float *a, const float *b, size_t n) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        worst = d > worst ? d : worst;
    }
    return worst;
}

/* Prompt as one batch == 5 + 1 + ... token steps (conv and delta states
 * carried), bit for bit; after seq_reset the sequence starts afresh. */
static void test_state_across_steps(void) {
    static const char *const names[] = {"qwen35-dense-q8_0", "qwen35moe-moe-f32"};
    const int32_t toks[10] = {3, 99, 14, 15, 92, 65, 35, 89, 79, 32};
    for (size_t f = 0; f < sizeof names / sizeof names[0]; f++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s.gguf", shared_path("models/tiny"), names[f]);
        zn_model m;
        zn_err err = {0};
        if (model_load(&m, path, &err) != ZN_OK) {
            CHECK_MSG(0, "%s", err.msg);
            continue;
        }
        const size_t nv = (size_t)m.hp.n_vocab;
        float *all = malloc(sizeof *all * 10 * nv), *part = malloc(sizeof *part * 10 * nv);
        zn_engine e;
        zn_seq s;
        CHECK(engine_init(&e, &m, CPU_OPTS(2), &err) == ZN_OK);
        CHECK(seq_init(&s, &e, 16, &err) == ZN_OK);
        CHECK(engine_decode(&e, &s, toks, 10, all, true, &err) == ZN_OK);
        seq_reset(&s);
        CHECK(engine_decode(&e, &s, toks, 5, part, true, &err) == ZN_OK);
        for (int i = 5; i < 10; i++) CHECK(engine_decode(&e, &s, toks + i, 1, part + i * nv, false, &err) == ZN_OK);
        double d = max_diff(all, part, 10 * nv);
        CHECK_MSG(d == 0, "%s: split prompt differs by %.3g", names[f], d);
        /* a different history first, then reset: the same logits again */
        seq_reset(&s);
        CHECK(engine_decode(&e, &s, toks + 3, 4, NULL, false, &err) == ZN_OK);
        seq_reset(&s);
        CHECK(engine_decode(&e, &s, toks, 10, part, true, &err) == ZN_OK);
        d = max_diff(all, part, 10 * nv);
        CHECK_MSG(d == 0, "%s: after reset differs by %.3g", names[f], d);
        seq_free(&s);
        engine_free(&e);
        free(all);
        free(part);
        model_free(&m);
    }
}

int main(void) {
    RUN(test_synthetic_tiled_heads);
    RUN(test_state_across_steps);
    return harness_report("qwen35");
}
