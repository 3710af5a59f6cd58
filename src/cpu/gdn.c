/* Reference kernels for Gated DeltaNet layers and IMRoPE; see gdn.h. */
#include "gdn.h"

#include <math.h>
#include <string.h>

#include "limits.h"

static inline float silu(float x) { return x / (1.0f + expf(-x)); }

void gdn_conv1d_silu(float *y, const float *x, int64_t n_tokens, int64_t n_ch, int64_t ld,
                     const float *w, int kernel, float *state) {
    const int64_t ns = kernel - 1; /* state entries per channel */
    for (int64_t t = 0; t < n_tokens; t++) {
        float *yt = y + t * ld;
        for (int64_t c = 0; c < n_ch; c++) {
            const float *wc = w + c * kernel;
            float sum = 0.0f;
            for (int64_t j = 0; j < kernel; j++) {
                /* input index in token time; negative = from the state */
                const int64_t ti = t - ns + j;
                const float xv = ti < 0 ? state[c * ns + ns + ti] : x[ti * ld + c];
                sum += wc[j] * xv;
            }
            yt[c] = silu(sum);
        }
    }
    /* New state: the last K-1 inputs. Entry m comes from token T-ns+m, or from
     * old state entry T+m >= m when the batch is shorter than the state, so a
     * forward copy never reads an entry it already overwrote. */
    for (int64_t c = 0; c < n_ch; c++) {
        float *sc = state + c * ns;
        for (int64_t m = 0; m < ns; m++) {
            const int64_t ti = n_tokens - ns + m;
            sc[m] = ti < 0 ? sc[n_tokens + m] : x[ti * ld + c];
        }
    }
}

void gdn_l2_norm(float *x, int64_t n, float eps) {
    double ss = 0.0;
    for (int64_t i = 0; i < n; i++) ss += (double)x[i] * x[i];
    const float r = 1.0f / sqrtf((float)ss + eps);
    for (int64_t i = 0; i < n; i++) x[i] *= r;
}

void gdn_gated_rmsnorm(float *y, const float *x, const float *z, const float *w,
                       int64_t n_heads, int64_t d, float eps) {
    for (int64_t h = 0; h < n_heads; h++) {
        const float *xh = x + h * d, *zh = z + h * d;
        float *yh = y + h * d;
        double ss = 0.0;
        for (int64_t i = 0; i < d; i++) ss += (double)xh[i] * xh[i];
        const float r = 1.0f / sqrtf((float)(ss / (double)d) + eps);
        for (int64_t i = 0; i < d; i++) yh[i] = xh[i] * r * w[i] * silu(zh[i]);
    }
}

void gdn_gates(float *g, float *beta, const float *alpha, const float *beta_raw,
                   const float *dt_bias, const float *a, int64_t n_heads) {
    for (int64_t h = 0; h < n_heads; h++) {
        const float s = alpha[h] + dt_bias[h];
        const float sp = s > 20.0f ? s : logf(1.0f + expf(s));
        g[h] = sp * a[h];
        beta[h] = 1.0f / (1.0f + expf(-beta_raw[h]));
    }
}

static inline float dot(const float *a, const float *b, int64_t n) {
    float s = 0.0f;
    for (int64_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* Each value row of S evolves on its own: decay, read with k, write back
 * the beta-weighted error, read with q. */
static void gdn_step_scalar(float *S, const float *k, const float *q, const float *v, float decay, float b,
                            float scale, float *o, int64_t dk, int64_t dv) {
    for (int64_t j = 0; j < dv; j++) {
        float *Sj = S + j * dk;
        for (int64_t i = 0; i < dk; i++) Sj[i] *= decay;
        const float d = (v[j] - dot(Sj, k, dk)) * b;
        for (int64_t i = 0; i < dk; i++) Sj[i] += k[i] * d;
        o[j] = dot(Sj, q, dk) * scale;
    }
}

static const gdn_kernel gdn_scalar = {gdn_step_scalar};
#ifdef __x86_64__
static const gdn_kernel gdn_avx2 = {gdn_step_avx2};
#endif

const gdn_kernel *gdn_kernel_best(void) {
#ifdef __x86_64__
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return &gdn_avx2;
#endif
    return &gdn_scalar;
}

void gdn_recurrent(const gdn_args *a, int64_t h0, int64_t h1) {
    const int64_t dk = a->d_k, dv = a->d_v;
    const float scale = 1.0f / sqrtf((float)dk);
    const gdn_kernel *kern = a->kernel ? a->kernel : &gdn_scalar;
    float qn[ZN_SSM_MAX_HEAD_DIM], kn[ZN_SSM_MAX_HEAD_DIM];
    for (int64_t h = h0; h < h1; h++) {
        const int64_t hk = h % a->h_k;
        float *S = a->state + h * dv * dk;
        for (int64_t t = 0; t < a->n_tokens; t++) {
            const float *q = a->q + t * a->ld_qk + hk * dk;
            const float *k = a->k + t * a->ld_qk + hk * dk;
            if (a->l2_qk) {
                /* recomputed per value head: O(Dk) beside the O(Dk*Dv) update */
                memcpy(qn, q, (size_t)dk * sizeof(float));
                memcpy(kn, k, (size_t)dk * sizeof(float));
                gdn_l2_norm(qn, dk, a->l2_eps);
                gdn_l2_norm(kn, dk, a->l2_eps);
                q = qn;
                k = kn;
            }
            float g = a->g[t * a->ld_g + h], b = a->beta[t * a->ld_g + h];
            if (a->dt_bias) gdn_gates(&g, &b, &g, &b, a->dt_bias + h, a->a + h, 1);
            kern->step(S, k, q, a->v + t * a->ld_v + h * dv, expf(g), b, scale, a->out + t * a->ld_o + h * dv,
                       dk, dv);
        }
    }
}

int gdn_imrope_component(int64_t i, const int sections[4]) {
    const int64_t total = (int64_t)sections[0] + sections[1] + sections[2] + sections[3];
    if (total <= 0) return 0;
    const int64_t s = i % total;
    /* Sections interleave t,h,w,t,h,w,... while each still has entries;
     * whatever is left over goes to the fourth (e) component. */
    if (s % 3 == 0 && s < 3 * (int64_t)sections[0]) return 0;
    if (s % 3 == 1 && s < 3 * (int64_t)sections[1]) return 1;
    if (s % 3 == 2 && s < 3 * (int64_t)sections[2]) return 2;
    return 3;
}

void gdn_imrope_cache(float *cs, int64_t n_dims, const int sections[4], const int32_t pos[4],
                      float freq_base, float freq_scale) {
    const float theta_scale = powf(freq_base, -2.0f / (float)n_dims);
    /* The angle of every component advances by the same factor; ggml forms
     * it by repeated multiplication, and so do we to stay bit-close. */
    float theta[4] = {(float)pos[0], (float)pos[1], (float)pos[2], (float)pos[3]};
    for (int64_t i = 0; i < n_dims / 2; i++) {
        const float th = theta[gdn_imrope_component(i, sections)] * freq_scale;
        cs[2 * i] = cosf(th);
        cs[2 * i + 1] = sinf(th);
        for (int c = 0; c < 4; c++) theta[c] *= theta_scale;
    }
}

void gdn_rope_neox_apply(float *x, int64_t n_heads, int64_t ld, int64_t n_dims, const float *cs) {
    const int64_t half = n_dims / 2;
    for (int64_t h = 0; h < n_heads; h++) {
        float *xh = x + h * ld;
        for (int64_t i = 0; i < half; i++) {
            const float c = cs[2 * i], s = cs[2 * i + 1];
            const float x0 = xh[i], x1 = xh[i + half];
            xh[i] = x0 * c - x1 * s;
            xh[i + half] = x0 * s + x1 * c;
        }
    }
}
