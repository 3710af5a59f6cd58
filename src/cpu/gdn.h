/* Reference kernels for the Qwen3.5 hybrid layers (Gated DeltaNet linear
 * attention and the interleaved multi-section RoPE of its full-attention
 * layers). Plain C over f32 arrays, no allocation; the CPU backend calls
 * them and the Vulkan shaders are checked against them.
 *
 * Layout conventions (row-major, the last index is contiguous):
 *   activations  [T][C]        one row of C floats per token, row stride ld
 *   conv weight  [C][K]        as GGUF stores ssm_conv1d.weight (ne0 = K)
 *   conv state   [C][K-1]      the last K-1 inputs per channel, oldest first
 *   delta state  [H_v][Dv][Dk] per value head: row j (value index) holds the
 *                              Dk key coefficients; this is ggml's layout
 *                              ({S_v, S_v, H_v}, ne0 = key index) so a state
 *                              saved by one is valid for the other.
 * Semantics follow llama.cpp (src/models/qwen35.cpp, delta-net-base.cpp,
 * ggml-cpu/ops.cpp: ssm_conv, gated_delta_net, rope_multi with IMROPE). */
#ifndef ZINC_GDN_H
#define ZINC_GDN_H

#include <stdbool.h>
#include <stdint.h>

/* ---- causal depthwise conv1d + SiLU ------------------------------------
 * For token t and channel c, with xin = (state[c][0..K-2], x[0..T-1][c]):
 *   y[t][c] = silu( sum_{j<K} w[c][j] * xin[t + j] )
 * so w[c][K-1] weighs the current token. On return state[c] holds the last
 * K-1 entries of xin (T = 1 is the decode step; any split of a prompt into
 * calls gives the same y). x and y rows have stride ld >= n_ch; y must not
 * overlap x. To split channels across threads pass x + c0, y + c0,
 * w + c0*K, state + c0*(K-1) and n_ch = c1 - c0 with the full ld. */
void gdn_conv1d_silu(float *y, const float *x, int64_t n_tokens, int64_t n_ch, int64_t ld,
                     const float *w, int kernel, float *state);

/* ---- normalisations ---------------------------------------------------- */
/* x[i] /= sqrt(sum x^2 + eps), in place, over n elements. This is llama.cpp's
 * build_gdn_l2_norm (rms_norm with eps/n, scaled by 1/sqrt(n)), not ggml's
 * l2_norm (which divides by max(norm, eps)). */
void gdn_l2_norm(float *x, int64_t n, float eps);

/* Gated RMSNorm of the delta-rule output, per value head:
 *   y[h][i] = x[h][i] / sqrt(mean_i(x[h]^2) + eps) * w[i] * silu(z[h][i])
 * x, z, y: [n_heads][d]; w: [d] (ssm_norm.weight, shared by all heads).
 * y may alias x or z. */
void gdn_gated_rmsnorm(float *y, const float *x, const float *z, const float *w,
                       int64_t n_heads, int64_t d, float eps);

/* Gates of one token from the raw projections, per value head h < n_heads:
 *   g[h]    = softplus(alpha[h] + dt_bias[h]) * a[h]   (log of the decay;
 *             ssm_a is stored as -exp(A_log), so g <= 0 on real models)
 *   beta[h] = sigmoid(beta_raw[h])
 * softplus(x) = x for x > 20, else log(1 + exp(x)), as ggml. g / beta may
 * alias alpha / beta_raw. */
void gdn_gates(float *g, float *beta, const float *alpha, const float *beta_raw,
                   const float *dt_bias, const float *a, int64_t n_heads);

/* ---- gated delta rule --------------------------------------------------
 * One sequence of T tokens; for each value head h in [h0, h1) with key head
 * hk = h mod H_k (the key heads are tiled, not interleaved: ggml broadcast),
 * for t = 0..T-1 with S = state[h] (Dv x Dk, S[j][i]):
 *   S      *= exp(g[t][h])
 *   u[j]    = sum_i S[j][i] * k[t][hk][i]
 *   d[j]    = (v[t][h][j] - u[j]) * beta[t][h]
 *   S[j][i] += k[t][hk][i] * d[j]
 *   o[t][h][j] = sum_i S[j][i] * q[t][hk][i] / sqrt(Dk)
 * With l2_qk, q and k are first L2-normalised per head (gdn_l2_norm with
 * l2_eps); otherwise they must be normalised already. With dt_bias and a
 * non-NULL, g and beta hold the raw projections (alpha, beta logits) and are
 * turned into gates as gdn_gates does; otherwise they are the gates.
 * Strides are in floats between consecutive tokens' rows (heads are
 * contiguous inside a row): q[t][hk][i] is q[t*ld_qk + hk*Dk + i], likewise
 * k; v[t*ld_v + h*Dv + j]; o[t*ld_o + h*Dv + j]; g[t*ld_g + h], beta
 * likewise. out must not overlap the inputs. Heads are independent, so
 * [h0, h1) splits work across threads; inputs are never written. */
typedef struct gdn_args {
    const float *q, *k, *v;   /* see above */
    const float *g, *beta;    /* gates, or raw projections (dt_bias != NULL) */
    const float *dt_bias, *a; /* [H_v] each, or NULL */
    float *state;             /* [H_v][Dv][Dk], updated */
    float *out;               /* [T][..][Dv] */
    int64_t n_tokens;
    int64_t h_k, h_v;         /* h_v % h_k == 0 */
    int64_t d_k, d_v;         /* d_k <= ZN_SSM_MAX_HEAD_DIM */
    int64_t ld_qk, ld_v, ld_o, ld_g;
    bool l2_qk;
    float l2_eps;
    const struct gdn_kernel *kernel; /* NULL: the scalar reference */
} gdn_args;

/* One token of one value head, on S [dv][dk]: the update above with the
 * decay exp(g) and the gate b given, o[j] scaled by `scale`. */
typedef struct gdn_kernel {
    void (*step)(float *S, const float *k, const float *q, const float *v, float decay, float b,
                 float scale, float *o, int64_t dk, int64_t dv);
} gdn_kernel;

/* The fastest kernel the running CPU supports (AVX2+FMA, else scalar). Its
 * sums run in another order than the reference: results differ in the last
 * bits, not bit for bit. */
const gdn_kernel *gdn_kernel_best(void);
#ifdef __x86_64__
void gdn_step_avx2(float *S, const float *k, const float *q, const float *v, float decay, float b,
                       float scale, float *o, int64_t dk, int64_t dv); /* gdn_avx2.c */
#endif

/* Token-by-token recurrence (the definition; used for decode). */
void gdn_recurrent(const gdn_args *a, int64_t h0, int64_t h1);

/* ---- IMRoPE (interleaved multi-section rotary embedding) ---------------
 * Rotation pair i (i < n_dims/2) pairs x[i] with x[i + n_dims/2] (NEOX
 * order) and uses angle pos[c] * freq_scale * base^(-2i/n_dims), where the
 * position component c (0 = t, 1 = h, 2 = w, 3 = e) is chosen by
 * gdn_imrope_component. For text tokens llama.cpp passes pos = {p, p, p, 0}.
 * Dimensions n_dims..head_dim-1 pass through unchanged. */
int gdn_imrope_component(int64_t i, const int sections[4]);

/* cos/sin table for one token: cs[2i] = cos, cs[2i+1] = sin, i < n_dims/2. */
void gdn_imrope_cache(float *cs, int64_t n_dims, const int sections[4], const int32_t pos[4],
                      float freq_base, float freq_scale);

/* Rotates the first n_dims floats of n_heads rows (row stride ld) in place
 * with a table from gdn_imrope_cache (NEOX pairing). */
void gdn_rope_neox_apply(float *x, int64_t n_heads, int64_t ld, int64_t n_dims, const float *cs);

#endif
