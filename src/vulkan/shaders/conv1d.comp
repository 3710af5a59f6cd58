#version 450
// Causal depthwise conv1d + SiLU with a rolling state (gdn.h
// gdn_conv1d_silu):
//   y[t][c] = silu(sum_{j<K} w[c][j] * xin[t + j]),  xin = (state[c], x[.][c])
// and state[c] ends holding the last K-1 entries of xin.
// Every output depends only on inputs, so threads split the tokens as well
// as the channels (a prefill of 512 tokens would otherwise be 512 dependent
// steps per thread): workgroup (cx, ty) owns WG channels x TB tokens, and a
// thread loads its TB inputs before the first store (loads after a store
// through another pointer may not be hoisted above it: one at a time, the
// 512-token conv of the 35B shape took 75 us on an H200). Only token
// block 0 reads the old state, so it alone writes the new one, after a
// barrier that orders its reads before the writes. seqs set: a batched
// decode step (seqs.glsl: the state in a), one token per sequence, the
// workgroup's z the sequence, x and y the step's rows.
#include "common.glsl"
#include "seqs.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;

#define MAXK 8
#define TB 16   // tokens per workgroup; >= MAXK - 1 so only block 0 touches the state

layout(push_constant) uniform PC {
    uint64_t x, y, w, state;
    uint n_tok, n_ch, ld, kernel;
    uint64_t seqs;                        // 0: one sequence (the fields above)
} p;

uint64_t state; // p's, or the sequence's
uint r0;        // the first row of x and y

float xin(uint i, uint c) { // xin[i] of channel c, i < K - 1 + n_tok
    const uint K1 = p.kernel - 1u;
    return i < K1 ? F32(state).v[c * K1 + i] : F32(p.x).v[(r0 + i - K1) * p.ld + c];
}

void main() {
    const uint c = gl_WorkGroupID.x * WG + gl_LocalInvocationID.x, t0 = gl_WorkGroupID.y * TB;
    const uint K = p.kernel, K1 = K - 1u;
    const bool live = c < p.n_ch;
    state = p.state, r0 = 0u;
    if (p.seqs != 0) {
        const SeqEnt e = SeqTab(p.seqs).v[gl_WorkGroupID.z];
        state = e.a, r0 = e.row;
    }
    float win[MAXK], w[MAXK], st[MAXK];
    if (live) {
        for (uint j = 0; j < MAXK; j++) {
            w[j] = j < K ? F32(p.w).v[c * K + j] : 0.0;
            win[j] = j < K1 ? xin(t0 + j, c) : 0.0;   // xin[t0 .. t0+K-2]
        }
        // the new state, read before anyone may overwrite the old one
        if (gl_WorkGroupID.y == 0u)
            for (uint j = 0; j < K1; j++) st[j] = xin(p.n_tok + j, c);
        const uint nt = min(t0 + TB, p.n_tok) - t0;
        float xv[TB];
        for (uint i = 0; i < TB; i++) xv[i] = i < nt ? F32(p.x).v[(r0 + t0 + i) * p.ld + c] : 0.0;
        for (uint i = 0; i < nt; i++) {
            win[K1] = xv[i];
            float s = 0.0;
            for (uint j = 0; j < K; j++) s = fma(w[j], win[j], s);
            F32(p.y).v[(r0 + t0 + i) * p.ld + c] = silu(s);
            for (uint j = 0; j < K1; j++) win[j] = win[j + 1u];
        }
    }
    if (gl_WorkGroupID.y != 0u) return;   // uniform per workgroup
    barrier();
    if (live)
        for (uint j = 0; j < K1; j++) F32(state).v[c * K1 + j] = st[j];
}
