// x for the integer mat-vec: a row of f32 x, through its fused x mode
// (mm_push.glsl's XM_*), quantised to blocks of 32 int8 with one scale
// d = max|v| / 127 and d * sum q (ggml's Q8_1). Shared by quantx.comp (into
// global memory) and matvec_q.comp (into shared memory). The includer's push
// block p has aux, flags (bit 1: x and aux 16-byte aligned; bits 2-3: the x
// mode) and eps, and it defines the XM_* modes. 8 consecutive lanes share a block, 4 values each
// (coalesced 16-byte loads, the block's max and sum by 3 shuffle steps), so
// the workgroup is a multiple of 8 lanes and every lane of a subgroup calls
// q8_quant the same number of times.

vec4 q8_load4(uint64_t a, uint i) { // floats 4i .. 4i+3 of the row at a
    if ((p.flags & 2u) != 0u) return F32x4(a + 16ul * i).v[0];
    return vec4(F32(a).v[4u * i], F32(a).v[4u * i + 1u], F32(a).v[4u * i + 2u], F32(a).v[4u * i + 3u]);
}

float cluster8_max(float v) {
    v = max(v, subgroupShuffleXor(v, 1u));
    v = max(v, subgroupShuffleXor(v, 2u));
    return max(v, subgroupShuffleXor(v, 4u));
}
float cluster8_addf(float v) {
    v += subgroupShuffleXor(v, 1u);
    v += subgroupShuffleXor(v, 2u);
    return v + subgroupShuffleXor(v, 4u);
}
int cluster8_add(int v) {
    v += subgroupShuffleXor(v, 1u);
    v += subgroupShuffleXor(v, 2u);
    return v + subgroupShuffleXor(v, 4u);
}

// The x mode's value of x v with its aux a (RMS: the norm weight, inv the
// row's 1 / norm; SwiGLU: the up value).
vec4 q8_apply(vec4 v, vec4 a, uint mode, float inv) {
    if (mode == XM_RMSNORM) return v * inv * a;
    if (mode == XM_SWIGLU) return vec4(silu(v.x), silu(v.y), silu(v.z), silu(v.w)) * a;
    if (mode == XM_SIGMUL) return v * vec4(sigmoid(a.x), sigmoid(a.y), sigmoid(a.z), sigmoid(a.w));
    return v;
}

// Where aux of the row at byte offset xo from p.x sits (SwiGLU: laid out like x).
uint64_t q8_aux(uint mode, uint64_t xo) { return mode == XM_SWIGLU || mode == XM_SIGMUL ? p.aux + xo : p.aux; }

// The x mode's value of vec4 i of a row (x row v).
vec4 q8_xmode(vec4 v, uint i, uint mode, float inv, uint64_t xo) {
    return mode == XM_PLAIN ? v : q8_apply(v, q8_load4(q8_aux(mode, xo), i), mode, inv);
}

// a / b correctly rounded (nearly always: one Newton step on the quotient;
// GLSL's division may be 2.5 ulp off, and a quant next to a rounding tie
// then lands one step away from the CPU backend's).
float q8_div(float a, float b) {
    const float q = a / b;
    return fma(fma(-q, b, a), 1.0 / b, q);
}

// Quantises v with its block's other 7 lanes: the 4 int8 packed, and the
// block's (d, d * sum q) in ds (the same in all 8 lanes).
uint q8_quant(vec4 v, out vec2 ds) {
    const float amax = cluster8_max(max(max(abs(v.x), abs(v.y)), max(abs(v.z), abs(v.w))));
    const float d = q8_div(amax, 127.0), id = d != 0.0 ? q8_div(1.0, d) : 0.0;
    const ivec4 qv = ivec4(roundEven(v * id));
    const int sum = cluster8_add(qv.x + qv.y + qv.z + qv.w);
    ds = vec2(d, d * float(sum));
    return uint(qv.x & 255) | uint(qv.y & 255) << 8 | uint(qv.z & 255) << 16 | uint(qv.w & 255) << 24;
}
