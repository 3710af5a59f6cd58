#version 450
// The mat-vec of matvec.comp (same push constants, grid, grouped / expert /
// epilogue features) for the quantised weight types, on integer dot
// products: x comes quantised (blocks of 32 int8 with a scale d and
// d * sum q), so a lane's weights are multiplied four at a time
// by dotPacked4x8EXT without converting any quant to float, and x costs a
// quarter of the bytes of f32 x. Each subgroup owns NR rows; a lane takes
// one "step" of each row (32 values, 64 for Q6_K) with one 16-byte load per
// weight plane, and the x of that step (shared by the NR rows).
// Two ways to get x. XB = 0: p.x is x quantised by quantx.comp in global
// memory, and p.x_stride / p.x_slot_stride count its rows (vkop_matvec
// sets them). XB > 0 (rows of at most XB blocks of 32): p.x is the f32 x
// (mm_push.glsl, x mode and all) and each workgroup quantises its row
// itself into shared memory first (q8x.glsl, as quantx.comp would): in
// decode that saves a dispatch and a barrier per mat-vec, which cost more
// than the workgroups' redundant reads of x from L2. Workgroups then loop
// over row blocks (grid smaller than the rows: fewer copies of that work).
// PF > 0 (fused only): before quantising x, each thread touches PF 32-byte
// sectors of the workgroup's first row blocks, so that DRAM streams weights
// into L2 while the workgroups quantise x instead of idling until the first
// row block's loads.
// PN > 0: at the start of each row block, each thread touches up to PN
// sectors of the block and of the workgroup's next one, so that the
// block's later steps and the next block find their weights in L2 (one
// 4-byte load per 32 bytes: far fewer registers per byte in flight than
// more rows or steps per iteration).
// Routed (flags bit 5, p.ids a Route block of mm_store.glsl): each
// subgroup picks token t's experts from the router's logits itself
// (route_pick), so the routing needs no dispatch and no barrier of its own.
// KS > 0 (a MoE layer's experts' down with the layer's tail, p.ids a Tail
// block of mm_store.glsl): a workgroup of KS subgroups takes one token,
// subgroup s its expert slot s, all of them the same rows; each slot's
// row of x is quantised into shared memory (rows of XB / KS blocks), and
// the rows' results, weighted by the routing, summed in slot order, plus
// the gated shared expert and the residual, are stored by the workgroup:
// the experts' outputs never reach memory and the tail needs no dispatch
// (nor a barrier) of its own. PF and PN are 0.
// NT > 1 (matmuls without per-token experts: dense, or the grouped stack;
// n_slots 1): a workgroup takes nt <= NT consecutive tokens (n_tok split
// evenly over the z groups), loads each weight step once into registers
// (load_w) and dots it with each token's x (dot_w), so batched decode
// reads the weights once per NT tokens instead of once per token. XB > 0:
// it quantises its nt rows of x into NT rows of shared memory.
#extension GL_EXT_integer_dot_product : require
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint TYPE = 0;
layout(constant_id = 2) const uint NR = 2;
layout(constant_id = 3) const uint SG = 32;
layout(constant_id = 4) const uint U = 1; // steps per loop iteration (their loads issued together)
layout(constant_id = 5) const uint XB = 0; // x quantised in shared memory: its capacity in blocks of 32
layout(constant_id = 6) const uint PF = 0; // sectors per thread prefetched before x is quantised (XB > 0)
layout(constant_id = 7) const uint PN = 0; // sectors per thread prefetched per row block (this and the next)
layout(constant_id = 8) const uint NT = 1; // tokens per workgroup (1: a (token, slot) pair per z)
layout(constant_id = 9) const uint KS = 0; // expert slots per workgroup, one per subgroup (a MoE tail; 0: off)
layout(constant_id = 10) const uint RT = 0; // the routing compiled in (flags bit 5 then picks it)
layout(constant_id = 11) const uint GN = 0; // the gated norm compiled in (flags bits 12-15 then pick it)
layout(constant_id = 12) const uint CV = 0; // a group's conv compiled in (the Group block's conv_w then picks it)
layout(local_size_x_id = 0) in;

#define MM_CONV (CV != 0u)
#include "mm_push.glsl"

#define NV 1
#include "reduce.glsl"
#include "q8x.glsl"
#include "intdot.glsl"

// The quantised x rows (XB > 0): qs as 16-byte halves of blocks, (d, d * sum q) per block; row j at j * XB blocks.
shared uvec4 xs_q[NT * 2u * XB + 1u];
shared vec2 xs_d[NT * XB + 1u];
// Blocks between x rows in shared memory: KS > 0 splits the XB blocks among the slots.
const uint XR = XB / (KS > 0u ? KS : 1u);
// The gated norm (flags bits 12-15): per block of 32 of x's row j, the sum of aux's squares, at j * XR + block.
shared float gsum[GN != 0u ? NT * XB + 1u : 1u];
// KS > 0: each slot's results of a row block (mm_epi applied), before the tail sums them.
shared float ys[KS * SG * NR + 1u];

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer V2 { vec2 v[]; };

uint STEP() { return TYPE == T_Q6_K ? 64u : 32u; }

// The x of one step: up to four 16-byte runs of int8 quants with their
// blocks' scales d, and per run either d * sum q of the block (s) or, for
// Q6_K with NT 1, the integer sum of the run's 16 quants (is).
struct XS {
    uvec4 q[4];
    vec4 d, s;
    ivec4 is;
};

// 16 bytes of quants (half h of block b) and a block's (d, d * sum q) of
// x row xr: XB > 0 the row's index in shared memory, else the address of
// the row (nb blocks) in global memory.
uvec4 xq16(uint64_t xr, uint b, uint h) {
    return XB > 0u ? xs_q[2u * (uint(xr) * XR + b) + h] : U32x4(xr + 32ul * b + 16u * h).v[0];
}
vec2 xds(uint64_t xr, uint nb, uint b) { return XB > 0u ? xs_d[uint(xr) * XR + b] : V2(xr + 32ul * nb + 8ul * b).v[0]; }

XS load_x(uint64_t xr, uint nb, uint s) {
    XS x;
    if (TYPE == T_Q8_0 || TYPE == T_Q4_0) {
        x.q[0] = xq16(xr, s, 0u);
        x.q[1] = xq16(xr, s, 1u);
        vec2 a = xds(xr, nb, s);
        x.d.x = a.x;
        x.s.x = a.y;
    } else if (TYPE == T_Q4_K || TYPE == T_Q5_K) { // blocks 2 pair, 2 pair + 1 of super-block ib; half h
        const uint b0 = 8u * (s >> 3) + 2u * ((s & 7u) >> 1), h = s & 1u;
        x.q[0] = xq16(xr, b0, h);
        x.q[1] = xq16(xr, b0 + 1u, h);
        const vec4 a = XB > 0u ? vec4(xds(xr, nb, b0), xds(xr, nb, b0 + 1u)) : F32x4(xr + 32ul * nb + 8ul * b0).v[0];
        x.d.xy = a.xz;
        x.s.xy = a.yw;
    } else { // Q6_K: blocks b0 .. b0+3 (one 128-value half), 16 quants each
        const uint b0 = 8u * (s >> 2) + 4u * ((s >> 1) & 1u), lg = s & 1u;
        const uvec4 ones = uvec4(0x01010101u);
        for (uint k = 0; k < 4u; k++) {
            x.q[k] = xq16(xr, b0 + k, lg);
            x.is[k] = NT == 1u ? idot(x.q[k], ones) : 0; // NT > 1: load_w takes 32 off the weights
        }
        if (XB > 0u) x.d = vec4(xds(xr, nb, b0).x, xds(xr, nb, b0 + 1u).x, xds(xr, nb, b0 + 2u).x, xds(xr, nb, b0 + 3u).x);
        else {
            const uint64_t ds = xr + 32ul * nb + 8ul * b0;
            const vec4 a = F32x4(ds).v[0], c = F32x4(ds + 16u).v[0];
            x.d = vec4(a.x, a.z, c.x, c.z);
        }
    }
    return x;
}

// One step of a row's weights, unpacked: held in registers while each
// token's x of the step is dotted with it (with NT tokens, the unpacking
// is paid once for all of them). q: the quants widened to int8 runs that
// line up with XS.q; a, b, h0: their scales, per type (dot_w).
struct WS {
    uvec4 q[4];
    vec4 a;
    vec2 b;
    bool h0;
};

// Step s of the row at `row` (GPU layout, vk_quant.h).
WS load_w(uint64_t row, uint s, uint n) {
    const uvec4 M4 = uvec4(0x0f0f0f0fu);
    WS w;
    w.a = vec4(0.0);
    w.b = vec2(0.0);
    w.h0 = true;
    if (TYPE == T_Q8_0) { // planes: qs [nb][32], d [nb]
        const uint nb = n / 32u;
        w.q[0] = U32x4(row + 32ul * s).v[0];
        w.q[1] = U32x4(row + 32ul * s + 16u).v[0];
        w.a.x = float(F16(row + 32ul * nb + 2ul * s).v[0]);
    } else if (TYPE == T_Q4_0) { // planes: qs [nb][16], d [nb]; value = q - 8
        const uint nb = n / 32u;
        const uvec4 q = U32x4(row + 16ul * s).v[0];
        w.q[0] = q & M4;
        w.q[1] = (q >> 4) & M4;
        w.a.x = float(F16(row + 16ul * nb + 2ul * s).v[0]);
    } else if (TYPE == T_Q4_K || TYPE == T_Q5_K) {
        // value = d * sc * q - dmin * m; the low nibbles of the 16 bytes are
        // half h of sub-block 2 pair, the high ones of sub-block 2 pair + 1
        const uint q = s & 7u, pair = q >> 1, h = q & 1u;
        const uint64_t b = row + uint64_t(s >> 3) * (TYPE == T_Q4_K ? 144u : 176u);
        const uvec4 hd = U32x4(b).v[0]; // d, dmin | scales[0..11]
        const uvec4 qs = U32x4(b + (TYPE == T_Q4_K ? 16u : 48u) + 32u * pair + 16u * h).v[0];
        w.q[0] = qs & M4;
        w.q[1] = (qs >> 4) & M4;
        if (TYPE == T_Q5_K) {
            const uvec4 qh = U32x4(b + 16u + 16u * h).v[0] >> (2u * pair);
            w.q[0] |= (qh & 0x01010101u) << 4;
            w.q[1] |= ((qh >> 1) & 0x01010101u) << 4;
        }
        vec2 sc, m;
        kscales(hd.yzw, pair, sc, m);
        w.a = vec4(sc, m);
        w.b = unpackHalf2x16(hd.x);
        w.h0 = h == 0u;
    } else { // Q6_K planes: ql [nb][128], qh [nb][64], scales [nb][16], d [nb]; value = d * sc * (q - 32)
        const uint nb = n / 256u, ib = s >> 2, hf = (s >> 1) & 1u, lg = s & 1u;
        const uint64_t ql = row + 128ul * ib + 64u * hf + 16u * lg;
        const uvec4 l0 = U32x4(ql).v[0], l1 = U32x4(ql + 32u).v[0];
        const uvec4 hh = U32x4(row + 128ul * nb + 64ul * ib + 32u * hf + 16u * lg).v[0];
        const uvec2 scw = U32x2(row + 192ul * nb + 16ul * ib + 8u * hf).v[0];
        // run k (values 32 k .. 32 k + 15 of this lane's 16-value column) has scale byte 2 k + lg
        w.q[0] = (l0 & M4) | ((hh & 0x03030303u) << 4);
        w.q[1] = (l1 & M4) | ((hh & 0x0c0c0c0cu) << 2);
        w.q[2] = ((l0 >> 4) & M4) | (hh & 0x30303030u);
        w.q[3] = ((l1 >> 4) & M4) | ((hh & 0xc0c0c0c0u) >> 2);
        // several tokens: q - 32 as int8 once here, instead of each token's
        // x paying the sum of its quants (XS.is): q ^ 32 is q - 32 in 6-bit
        // two's complement, whose sign bit 5 then fills bits 6 and 7
        if (NT > 1u)
            for (uint k = 0; k < 4u; k++) {
                const uvec4 t = w.q[k] ^ 0x20202020u;
                w.q[k] = t | ((t & 0x20202020u) * 6u);
            }
        w.a = vec4(bitfieldExtract(int(scw.x), int(8u * lg), 8), bitfieldExtract(int(scw.x), int(8u * lg + 16u), 8),
                   bitfieldExtract(int(scw.y), int(8u * lg), 8), bitfieldExtract(int(scw.y), int(8u * lg + 16u), 8));
        w.b.x = float(F16(row + 208ul * nb + 2ul * ib).v[0]);
    }
    return w;
}

// A step's weights w dotted with a token's x of that step.
float dot_w(const WS w, const XS x) {
    if (TYPE == T_Q8_0) return w.a.x * x.d.x * float(idot(w.q[0], x.q[0]) + idot(w.q[1], x.q[1]));
    if (TYPE == T_Q4_0) return w.a.x * (x.d.x * float(idot(w.q[0], x.q[0]) + idot(w.q[1], x.q[1])) - 8.0 * x.s.x);
    if (TYPE == T_Q4_K || TYPE == T_Q5_K) { // a: the two sub-blocks' scales and mins, b: (d, dmin)
        const float v = w.b.x * (w.a.x * x.d.x * float(idot(w.q[0], x.q[0])) + w.a.y * x.d.y * float(idot(w.q[1], x.q[1])));
        // the min terms cover whole blocks of x: once, by the lane of half 0
        return w.h0 ? v - w.b.y * dot(w.a.zw, x.s.xy) : v;
    }
    ivec4 dt; // Q6_K: a the four runs' scales, b.x d
    for (uint k = 0; k < 4u; k++) dt[k] = idot(w.q[k], x.q[k]) - 32 * x.is[k];
    return w.b.x * dot(w.a * x.d, vec4(dt));
}

// The gated norm's factor for vec4 i (< ncols / 4) of row j's aux: 1 / the
// rms of its group of 2^gl2 values (their blocks' sums in gsum, in order),
// times the weight of its 4 values.
vec4 gn_scale(uint j, uint i, uint gl2) {
    const uint G = 1u << gl2, c = 4u * i, b0 = j * XR + ((c >> gl2) << (gl2 - 5u));
    float s = 0.0;
    for (uint b = 0; b < G / 32u; b++) s += gsum[b0 + b];
    const float inv = 1.0 / sqrt(s / float(G) + p.eps);
    const uint k = c & (G - 1u);
    return inv * vec4(F32(p.aux_w).v[k], F32(p.aux_w).v[k + 1u], F32(p.aux_w).v[k + 2u], F32(p.aux_w).v[k + 3u]);
}

// Quantises row (t, slot) of x into row j of xs_q / xs_d (XB > 0; the
// whole workgroup; the caller's barrier makes it visible). With the gated
// norm (XM_SWIGLU, flags bits 12-15) aux is normed per group first: a pass
// of its squares' block sums into gsum, a barrier, then gn_scale. XK vec4s of x
// (and of aux) per thread are loaded at a time, all in flight together;
// the RMS norm's first XK stay in registers from its sum of squares on.
#define XK 8u
void x_to_shared(uint t, uint slot, uint j) {
    const uint nv = p.ncols / 4u, mode = mm_xmode(), tid = gl_LocalInvocationID.x, iters = (nv + WG - 1u) / WG;
    const uint64_t xo = 4ul * (uint64_t(t) * p.x_stride + uint64_t(slot) * p.x_slot_stride), x = p.x + xo;
    const uint64_t aux = q8_aux(mode, xo);
    vec4 xv[XK], av[XK];
    float inv = 1.0;
    const uint gl2 = GN != 0u && mode == XM_SWIGLU ? mm_gn_log2() : 0u;
    if (gl2 != 0u) { // every lane of a block shuffles: lanes past the end add zeros
        for (uint k = 0; k < iters; k++) {
            const uint i = tid + k * WG;
            const vec4 a = i < nv ? q8_load4(aux, i) : vec4(0.0);
            const float s = cluster8_addf(dot(a, a));
            if (i < nv && i % 8u == 0u) gsum[j * XR + i / 8u] = s;
        }
        barrier();
    }
    if (mode == XM_RMSNORM) {
        float s[1];
        s[0] = 0.0;
        for (uint k = 0; k < XK; k++) {
            const uint i = tid + k * WG;
            xv[k] = i < nv ? q8_load4(x, i) : vec4(0.0);
            av[k] = i < nv ? q8_load4(aux, i) : vec4(0.0);
            s[0] += dot(xv[k], xv[k]);
        }
        for (uint i = tid + XK * WG; i < nv; i += WG) {
            const vec4 v = q8_load4(x, i);
            s[0] += dot(v, v);
        }
        wg_sum(s);
        inv = 1.0 / sqrt(s[0] / float(p.ncols) + p.eps);
    }
    // every lane runs the same iterations (all 8 lanes of a block shuffle):
    // lanes past the end quantise zeros
    for (uint k0 = 0; k0 < iters; k0 += XK) {
        if (k0 > 0u || mode != XM_RMSNORM)
            for (uint k = 0; k < XK; k++) {
                const uint i = tid + (k0 + k) * WG;
                xv[k] = i < nv ? q8_load4(x, i) : vec4(0.0);
                av[k] = i < nv && mode != XM_PLAIN ? q8_load4(aux, i) : vec4(0.0);
                if (gl2 != 0u && i < nv) av[k] *= gn_scale(j, i, gl2);
            }
        for (uint k = 0; k < XK; k++) {
            if (k0 + k >= iters) break;
            const uint i = tid + (k0 + k) * WG;
            vec2 ds;
            const uint q = q8_quant(q8_apply(xv[k], av[k], mode, inv), ds);
            if (i >= nv) continue;
            xs_q[2u * j * XR + i / 4u][i % 4u] = q;
            if (i % 8u == 0u) xs_d[j * XR + i / 8u] = ds;
        }
    }
}

// The x row of token t + j, slot `slot` (as xq16 takes it): XB > 0 row j
// of shared memory (KS > 0: row slot), else its row quantised by quantx.comp.
uint64_t x_row(uint t, uint slot, uint j, uint nb) {
    return XB > 0u ? uint64_t(KS > 0u ? slot : j) : p.x + uint64_t((t + j) * p.x_stride + slot * p.x_slot_stride) * ((40u * nb + 15u) & ~15u);
}

// The accumulators: row r, token j at r * NT + j, padded to VP (a power of
// two) for the transposed reduction (sg_sums).
const uint NV0 = NR * NT - 1u, NV1 = NV0 | (NV0 >> 1), NV2 = NV1 | (NV1 >> 2), NV3 = NV2 | (NV2 >> 4);
const uint VP = (NV3 | (NV3 >> 8)) + 1u;

// U steps of the NR rows from r0 (rows past the end repeat the last one)
// from step s on (every L-th), dotted with the x of the nt tokens from t.
// Each weight step is loaded once for all tokens. tail: fewer than U steps
// left, steps past the row repeat the last one and count nothing. Tokens
// past nt (the last group's) read token nt - 1's x (in bounds, loads
// unconditional, so the compiler may issue them all together) and skip
// its dot products: a branch every lane takes alike (nt is the
// workgroup's), cheaper than a pipeline per group size, and no wasted ALU.
void steps(uint64_t w, uint r0, uint s, uint nsteps, uint L, bool tail, uint t, uint slot, uint nt, uint nb,
           inout float acc[VP]) {
    WS ws[U * NR]; // one-dimensional: lavapipe (Mesa 22.3) got ws[U][NR] wrong for NR 2 (sums off, U >= 2)
    for (uint r = 0; r < NR; r++) {
        const uint64_t row = w + uint64_t(min(r0 + r, p.nrows - 1u)) * p.row_bytes;
        for (uint u = 0; u < U; u++) ws[u * NR + r] = load_w(row, tail ? min(s + u * L, nsteps - 1u) : s + u * L, p.ncols);
    }
    for (uint j = 0; j < NT; j++)
        for (uint u = 0; u < U; u++) {
            const XS x = load_x(x_row(t, slot, min(j, nt - 1u), nb), nb, tail ? min(s + u * L, nsteps - 1u) : s + u * L);
            if (j >= nt) continue;
            for (uint r = 0; r < NR; r++) {
                const float d = dot_w(ws[u * NR + r], x);
                acc[r * NT + j] += !tail || s + u * L < nsteps ? d : 0.0;
            }
        }
}

// Transposed reduction of the VP values v over the subgroup (NT > 1, one
// row group per subgroup): each step exchanges half of the values still
// held with the lane o apart and adds, so a lane ends up with the sums of
// values (lane * VP) / SG + k, k < max(VP / SG, 1); VP + log2 SG shuffles
// where a subgroupAdd of each value takes VP log2 SG.
void sg_sums(inout float v[VP]) {
    for (uint o = SG / 2u, c = VP; o > 0u; o >>= 1) {
        const bool up = (gl_SubgroupInvocationID & o) != 0u;
        if (c == 1u) {
            v[0] += subgroupShuffleXor(v[0], o);
            continue;
        }
        c >>= 1;
        for (uint i = 0; i < c; i++) {
            const float keep = up ? v[i + c] : v[i], give = up ? v[i] : v[i + c];
            v[i] = keep + subgroupShuffleXor(give, o);
        }
    }
}

// Token t's routing as moe_route.comp makes it (softmax over the logits,
// k rounds of argmax of the probabilities, ties to the lower index, the k
// weights renormalised and scaled), by one subgroup alone: every subgroup
// of the dispatch gets the same experts. Returns slot's; with write (one
// invocation per token) stores the token's routing row. A lane holds the
// experts lane, lane + SG, ... (at most 64: ZN_MAX_EXPERTS / 8).
uint route_pick(uint t, uint slot, bool write) {
    Route rb = Route(p.ids);
    const uint n = rb.n_expert, k = rb.k, lane = gl_SubgroupInvocationID;
    const uint64_t lg = rb.logits + 4ul * uint64_t(t * n), dst = rb.dst + 8ul * uint64_t(t * k);
    float mx = -1.0 / 0.0;
    for (uint e = lane; e < n; e += SG) mx = max(mx, F32(lg).v[e]);
    mx = subgroupMax(mx);
    float s = 0.0;
    for (uint e = lane; e < n; e += SG) s += exp(F32(lg).v[e] - mx);
    s = subgroupAdd(s);
    uvec2 taken = uvec2(0u);
    uint pick = 0u;
    float sum = 0.0;
    for (uint r = 0; r < k; r++) {
        float bv = -2.0;
        uint bi = 0xffffffffu;
        for (uint j = 0, e = lane; e < n; j++, e += SG) {
            if ((taken[j >> 5] >> (j & 31u) & 1u) != 0u) continue;
            const float pv = exp(F32(lg).v[e] - mx) / s;
            if (pv > bv) bv = pv, bi = e;
        }
        const float m = subgroupMax(bv);
        const uint mi = subgroupMin(bv == m ? bi : 0xffffffffu);
        if (mi % SG == lane) taken[(mi / SG) >> 5] |= 1u << ((mi / SG) & 31u);
        sum += m;
        if (r == slot) pick = mi;
        if (write) {
            F32(dst).v[r] = float(mi);
            F32(dst).v[k + r] = m;
        }
    }
    if (write)
        for (uint r = 0; r < k; r++) {
            float w = F32(dst).v[k + r];
            if (rb.norm != 0u) w /= max(sum, 6.103515625e-5);
            if (rb.wscale != 0.0 && rb.wscale != 1.0) w *= rb.wscale;
            F32(dst).v[k + r] = w;
        }
    return pick;
}

// KS > 0: the tail of row block rb's rows for token t, from each slot's
// results in ys (the whole workgroup; the first G * NR threads store).
// The arithmetic of eltwise.comp's MOE_TAIL: the weighted sum in slot
// order, then the gated shared expert and the residual, unfused.
void moe_tail(uint t, uint rb, uint G) {
    barrier();
    const uint i = gl_LocalInvocationID.x, n = G * NR;
    if (i < n && rb + i < p.nrows) {
        Tail tb = Tail(p.ids);
        const uint R = rb + i, yi = t * p.y_stride + R;
        float v = 0.0;
        for (uint s = 0; s < KS; s++) v += F32(tb.route).v[t * p.ids_stride + KS + s] * ys[s * n + i];
        precise float sum = v;
        if (tb.b != 0ul) {
            precise float gated = F32(tb.b).v[yi] * sigmoid(F32(tb.gate).v[t * tb.b_cols + (tb.b_cols == 1u ? 0u : R)]);
            sum = sum + gated;
        }
        precise float o = F32(p.res).v[yi] + sum;
        F32(p.y).v[yi] = o;
    }
    barrier(); // ys is the next row block's
}

void main() {
    // Rows shorter than a subgroup's lanes (few steps: MoE experts' down
    // matrices) split the subgroup into G groups of L lanes, each with its
    // own NR rows (matvec_q_groups in vk_ops.c picks G; flags bits 8-11).
    const uint G = 1u << ((p.flags >> 8) & 15u), L = SG / G, lane = gl_SubgroupInvocationID, sl = lane % L;
    // NT 1: z is a (token, slot) pair. NT > 1: tokens t .. t + nt - 1 of
    // n_tok split evenly over the z groups (at most NT each: the host
    // dispatches ceil(n_tok / NT) groups); slot 0.
    const uint z = gl_WorkGroupID.z, nz = gl_NumWorkGroups.z;
    // KS > 0: z is the token, the subgroup the slot.
    const uint t = KS > 0u ? z : NT == 1u ? z / p.n_slots : z * p.n_tok / nz;
    const uint slot = KS > 0u ? gl_SubgroupID : NT == 1u ? z % p.n_slots : 0u;
    const uint nt = NT == 1u ? 1u : min((z + 1u) * p.n_tok / nz - t, NT);
    uint e = 0;
    if (KS > 0u) e = uint(F32(Tail(p.ids).route).v[t * p.ids_stride + slot]);
    else if (RT != 0u && NT == 1u && mm_routed())
        e = route_pick(t, slot, Route(p.ids).write != 0u && slot == 0u && gl_WorkGroupID.x == 0u &&
                                    gl_WorkGroupID.y == 0u && gl_LocalInvocationIndex == 0u);
    else if (NT == 1u && p.ids != 0 && !mm_grouped()) e = uint(F32(p.ids).v[t * p.ids_stride + slot]);
    const uint64_t w = p.w + uint64_t(e) * p.expert_bytes;
    // row blocks of WG / SG subgroups; the grid may have fewer workgroups
    const uint blk0 = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x, nwg = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
    // One word of each of PF 32-byte sectors per thread of the workgroup's
    // row blocks (blk0, blk0 + nwg, ...) in order, in flight while x is
    // quantised; sectors past the matrix read its first word.
    uint pf[PF + 1u];
    const uint bb = (WG / SG) * G * NR * p.row_bytes;
    for (uint k = 0; k < PF; k++) {
        const uint o = 32u * (k * WG + gl_LocalInvocationID.x), i = o / bb;
        const uint64_t at = uint64_t(blk0 + i * nwg) * bb + (o - i * bb);
        pf[k] = U32(w + (at < uint64_t(p.nrows) * p.row_bytes ? at : 0ul)).v[0];
    }
    if (XB > 0u) {
        if (KS > 0u)
            for (uint j = 0; j < KS; j++) x_to_shared(t, j, j);
        else
            for (uint j = 0; j < NT; j++)
                if (j < nt) x_to_shared(t + j, slot, j);
        barrier();
    }
    uint h = 0u; // the prefetched words, all folded in (never used: see the end)
    for (uint k = 0; k < PF; k++) h ^= pf[k];
    const uint nb = p.ncols / 32u, nsteps = p.ncols / STEP();
    for (uint blk = blk0;; blk += nwg) {
        const uint rb = (KS > 0u ? blk : blk * (WG / SG) + gl_SubgroupID) * G * NR;
        if (rb >= p.nrows) break;
        uint pn[PN + 1u];
        for (uint k = 0; k < PN; k++) {
            const uint o = 32u * (k * WG + gl_LocalInvocationID.x);
            const uint64_t at = uint64_t(o < bb ? blk : blk + nwg) * bb + (o < bb ? o : o - bb);
            pn[k] = o < 2u * bb && at < uint64_t(p.nrows) * p.row_bytes ? U32(w + at).v[0] : 0u;
        }
        const uint r0 = rb + (lane / L) * NR;
        float acc[VP];
        for (uint i = 0; i < VP; i++) acc[i] = 0.0;
        // Rows past the end repeat the last one (their results are not
        // stored) and full iterations have no bounds checks, so nothing
        // stands between the loads of U steps x NR rows and the compiler
        // can issue them all before the first use.
        uint s = sl;
        for (; s + (U - 1u) * L < nsteps; s += U * L) steps(w, r0, s, nsteps, L, false, t, slot, nt, nb, acc);
        // fewer than U steps left: one more iteration, all its loads in
        // flight together too
        if (U > 1u && s < nsteps) steps(w, r0, s, nsteps, L, true, t, slot, nt, nb, acc);
        if (NT > 1u && G == 1u) {
            sg_sums(acc);
            const uint per = VP > SG ? VP / SG : 1u;
            if (VP >= SG || lane % (SG / VP) == 0u)
                for (uint k = 0; k < per; k++) {
                    const uint i = lane * VP / SG + k, r = i / NT, j = i % NT;
                    if (r < NR && j < nt && r0 + r < p.nrows) mv_store(t + j, slot, e, r0 + r, acc[k]);
                }
        } else {
            for (uint i = 0; i < NR * NT; i++) {
                if (i % NT >= nt) continue;
                if (G == 1u) acc[i] = subgroupAdd(acc[i]);
                else
                    for (uint o = L / 2u; o > 0u; o >>= 1) acc[i] += subgroupShuffleXor(acc[i], o);
            }
            if (KS > 0u) {
                if (sl == 0u)
                    for (uint r = 0; r < NR; r++) ys[(slot * G + lane / L) * NR + r] = mm_epi(min(r0 + r, p.nrows - 1u), e, acc[r]);
                moe_tail(t, rb, G);
            } else if (sl == 0u)
                for (uint r = 0; r < NR && r0 + r < p.nrows; r++)
                    for (uint j = 0; j < NT; j++)
                        if (j < nt) mv_store(t + j, slot, e, r0 + r, acc[r * NT + j]);
        }
        for (uint k = 0; k < PN; k++) h ^= pn[k];
        if (XB == 0u) break; // one row block per workgroup
    }
    // never true (eps >= 0): a store the compiler cannot drop keeps the
    // prefetch loads alive
    if ((PF > 0u || PN > 0u) && h == 0x5bd1e995u && p.eps < 0.0) mv_store(t, slot, e, 0u, 0.0);
}
