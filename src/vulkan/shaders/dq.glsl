// Dequantisation of one 32-value "step" of a weight row, for every weight
// type zinc computes on, in the GPU row layouts of vk_quant.c (GGUF blocks
// split into 16-byte aligned planes, rows padded to 16 bytes; see there).
// TYPE is a specialisation constant of the including shader; `row` is the
// row's byte address, n its length in elements.
//
// Step s covers 32 values in RUNS() runs of 32 / RUNS() contiguous
// positions each (run r starts at run_start(s, r)); v[] holds them run by
// run. The runs are chosen so each thread's loads are aligned, 8 or 16 bytes
// wide, and no two steps read the same bytes.

uint RUNS() { return TYPE == T_Q6_K ? 4u : TYPE == T_Q4_K || TYPE == T_Q5_K ? 2u : 1u; }

uint run_start(uint s, uint r) {
    if (TYPE == T_Q4_K || TYPE == T_Q5_K) {
        uint ib = s >> 3, q = s & 7u;
        return 256u * ib + 64u * (q >> 1) + 16u * (q & 1u) + 32u * r;
    }
    if (TYPE == T_Q6_K) {
        uint ib = s >> 3, q = s & 7u;
        return 256u * ib + 128u * (q >> 2) + 32u * r + 8u * (q & 3u);
    }
    return 32u * s;
}

// 6-bit scale and min j of a Q4_K/Q5_K super-block (ggml get_scale_min_k4), from
// its 12 scale bytes loaded as three words.
uint scb(uvec3 w, uint j) { // no dynamic vector index: that goes through memory on some compilers
    uint word = j < 4u ? w.x : j < 8u ? w.y : w.z;
    return (word >> (8u * (j & 3u))) & 255u;
}
void scale_min_k4w(uvec3 w, uint j, out float d, out float m) {
    if (j < 4u) {
        d = float(scb(w, j) & 63u);
        m = float(scb(w, j + 4u) & 63u);
    } else {
        uint a = scb(w, j + 4u), lo = scb(w, j - 4u), hi = scb(w, j);
        d = float((a & 15u) | ((lo >> 6) << 4));
        m = float((a >> 4) | ((hi >> 6) << 4));
    }
}

vec4 u8x4(uint w) { return vec4(float(w & 255u), float((w >> 8) & 255u), float((w >> 16) & 255u), float(w >> 24)); }
vec4 i8x4(uint w) { return vec4(float(int(w << 24) >> 24), float(int(w << 16) >> 24), float(int(w << 8) >> 24), float(int(w) >> 24)); }

// Q4_K / Q5_K step s of the block at b: the 16 low-nibble values (scale d0,
// min n0) and the 16 high-nibble ones (d1, n1), as unsigned quants.
void k45_step(uint64_t b, uint s, out vec4 lo[4], out vec4 hi[4], out float d0, out float n0, out float d1,
              out float n1) {
    const uint q = s & 7u, pair = q >> 1, half_ = q & 1u;
    uvec4 hd = U32x4(b).v[0]; // d, dmin | scales[0..11]
    vec2 dmf = unpackHalf2x16(hd.x);
    float sc0, m0, sc1, m1;
    scale_min_k4w(hd.yzw, 2u * pair, sc0, m0);
    scale_min_k4w(hd.yzw, 2u * pair + 1u, sc1, m1);
    d0 = dmf.x * sc0; n0 = dmf.y * m0; d1 = dmf.x * sc1; n1 = dmf.y * m1;
    uvec4 w = U32x4(b + (TYPE == T_Q4_K ? 16u : 48u) + 32u * pair + 16u * half_).v[0];
    uvec4 h = uvec4(0);
    if (TYPE == T_Q5_K) h = U32x4(b + 16u + 16u * half_).v[0] >> (2u * pair);
    for (uint k = 0; k < 4u; k++) {
        lo[k] = u8x4(w[k] & 0x0f0f0f0fu);
        hi[k] = u8x4((w[k] >> 4) & 0x0f0f0f0fu);
        if (TYPE == T_Q5_K) {
            lo[k] += 16.0 * u8x4(h[k] & 0x01010101u);
            hi[k] += 16.0 * u8x4((h[k] >> 1) & 0x01010101u);
        }
    }
}

// Q6_K step s of a row (planes, vk_quant.h): quarter r's 8 quants (minus 32)
// in f[r][0..1], its scale d * scales[..] in ds[r].
void q6_step(uint64_t row, uint s, uint n, out vec4 f[4][2], out vec4 ds) {
    uint nb = n / 256u, ib = s >> 3, q = s & 7u, hf = q >> 2, lg = q & 3u;
    uint64_t ql = row + 128ul * ib + 64u * hf + 8u * lg, qh = row + 128ul * nb + 64ul * ib + 32u * hf + 8u * lg;
    uint64_t sc = row + 192ul * nb + 16ul * ib + 8u * hf + (lg >> 1);
    float d = float(F16(row + 208ul * nb + 2ul * ib).v[0]);
    uvec2 l0 = U32x2(ql).v[0], l1 = U32x2(ql + 32u).v[0], hh = U32x2(qh).v[0];
    for (uint k = 0; k < 2u; k++) {
        f[0][k] = u8x4((l0[k] & 0x0f0f0f0fu) | ((hh[k] & 0x03030303u) << 4)) - 32.0;
        f[1][k] = u8x4((l1[k] & 0x0f0f0f0fu) | ((hh[k] & 0x0c0c0c0cu) << 2)) - 32.0;
        f[2][k] = u8x4(((l0[k] >> 4) & 0x0f0f0f0fu) | (hh[k] & 0x30303030u)) - 32.0;
        f[3][k] = u8x4(((l1[k] >> 4) & 0x0f0f0f0fu) | ((hh[k] & 0xc0c0c0c0u) >> 2)) - 32.0;
    }
    ds = d * vec4(float(I8(sc).v[0]), float(I8(sc + 2u).v[0]), float(I8(sc + 4u).v[0]), float(I8(sc + 6u).v[0]));
}

void dq32(uint64_t row, uint s, uint n, out float v[32]) {
    if (TYPE == T_F32) {
        uint64_t a = row + 128ul * s;
        for (uint j = 0; j < 8u; j++) {
            vec4 f = F32x4(a + 16u * j).v[0];
            for (uint k = 0; k < 4u; k++) v[4u * j + k] = f[k];
        }
    } else if (TYPE == T_F16 || TYPE == T_BF16) {
        uint64_t a = row + 64ul * s;
        for (uint j = 0; j < 4u; j++) {
            uvec4 w = U32x4(a + 16u * j).v[0];
            for (uint k = 0; k < 4u; k++) {
                vec2 f = TYPE == T_F16 ? unpackHalf2x16(w[k])
                                       : vec2(uintBitsToFloat(w[k] << 16), uintBitsToFloat(w[k] & 0xffff0000u));
                v[8u * j + 2u * k] = f.x;
                v[8u * j + 2u * k + 1u] = f.y;
            }
        }
    } else if (TYPE == T_Q4_0) { // planes: qs [nb][16], d [nb]
        uint nb = n / 32u;
        uvec4 w = U32x4(row + 16ul * s).v[0];
        float d = float(F16(row + 16ul * nb + 2ul * s).v[0]);
        for (uint k = 0; k < 4u; k++) {
            vec4 lo = u8x4(w[k] & 0x0f0f0f0fu) - 8.0, hi = u8x4((w[k] >> 4) & 0x0f0f0f0fu) - 8.0;
            for (uint i = 0; i < 4u; i++) {
                v[4u * k + i] = d * lo[i];
                v[16u + 4u * k + i] = d * hi[i];
            }
        }
    } else if (TYPE == T_Q8_0) { // planes: qs [nb][32], d [nb]
        uint nb = n / 32u;
        float d = float(F16(row + 32ul * nb + 2ul * s).v[0]);
        for (uint j = 0; j < 2u; j++) {
            uvec4 w = U32x4(row + 32ul * s + 16u * j).v[0];
            for (uint k = 0; k < 4u; k++) {
                vec4 q = i8x4(w[k]);
                for (uint i = 0; i < 4u; i++) v[16u * j + 4u * k + i] = d * q[i];
            }
        }
    } else if (TYPE == T_Q4_K || TYPE == T_Q5_K) { // GGUF blocks (144 / 176 bytes: already aligned)
        vec4 lo[4], hi[4];
        float d0, n0, d1, n1;
        k45_step(row + uint64_t(s >> 3) * (TYPE == T_Q4_K ? 144u : 176u), s, lo, hi, d0, n0, d1, n1);
        for (uint k = 0; k < 4u; k++)
            for (uint i = 0; i < 4u; i++) {
                v[4u * k + i] = d0 * lo[k][i] - n0;
                v[16u + 4u * k + i] = d1 * hi[k][i] - n1;
            }
    } else { // Q6_K planes: ql [nb][128], qh [nb][64], scales [nb][16], d [nb]
        vec4 f[4][2], ds;
        q6_step(row, s, n, f, ds);
        for (uint r = 0; r < 4u; r++)
            for (uint i = 0; i < 8u; i++) v[8u * r + i] = ds[r] * f[r][i >> 2][i & 3u];
    }
}

// The 32 activations of step s (positions as dq32's), zero past n; vec4
// loads when the caller vouches that x is 16-byte aligned.
void x32(uint64_t x, uint s, uint n, bool aligned, out float v[32]) {
    const uint R = RUNS(), L = 32u / R;
    if (aligned && 32u * (s + 1u) <= n) {
        for (uint r = 0; r < R; r++) {
            uint64_t a = x + 4ul * run_start(s, r);
            for (uint j = 0; j < L / 4u; j++) {
                vec4 f = F32x4(a + 16u * j).v[0];
                for (uint k = 0; k < 4u; k++) v[L * r + 4u * j + k] = f[k];
            }
        }
    } else {
        for (uint r = 0; r < R; r++)
            for (uint j = 0; j < L; j++) {
                uint i = run_start(s, r) + j;
                v[L * r + j] = i < n ? F32(x).v[i] : 0.0;
            }
    }
}

// Dot product of step s of the row with the activations xv (in dq32's
// order) without materialising the weights: sums of q * x per scale group,
// scaled once. xs[r] = sum of run r of xv (row-independent: the caller
// computes it once for all rows), used by the types with an offset/min.
float dot32(uint64_t row, uint s, uint n, const float xv[32], const float xs[4]) {
    if (TYPE == T_Q4_K || TYPE == T_Q5_K) {
        vec4 lo[4], hi[4];
        float d0, n0, d1, n1;
        k45_step(row + uint64_t(s >> 3) * (TYPE == T_Q4_K ? 144u : 176u), s, lo, hi, d0, n0, d1, n1);
        float s0 = 0.0, s1 = 0.0;
        for (uint k = 0; k < 4u; k++)
            for (uint i = 0; i < 4u; i++) { // scalar fmas: dot() over array elements is slow on lavapipe
                s0 = fma(lo[k][i], xv[4u * k + i], s0);
                s1 = fma(hi[k][i], xv[16u + 4u * k + i], s1);
            }
        return d0 * s0 + d1 * s1 - n0 * xs[0] - n1 * xs[1];
    } else if (TYPE == T_Q6_K) {
        vec4 f[4][2], ds;
        q6_step(row, s, n, f, ds);
        vec4 acc = vec4(0.0); // per quarter (run); f already has the -32 offset
        for (uint r = 0; r < 4u; r++)
            for (uint i = 0; i < 8u; i++) acc[r] = fma(f[r][i >> 2][i & 3u], xv[8u * r + i], acc[r]);
        return dot(acc, ds);
    } else if (TYPE == T_Q4_0) {
        uint nb = n / 32u;
        uvec4 w = U32x4(row + 16ul * s).v[0];
        float d = float(F16(row + 16ul * nb + 2ul * s).v[0]);
        float a = 0.0;
        for (uint k = 0; k < 4u; k++) {
            vec4 lo = u8x4(w[k] & 0x0f0f0f0fu), hi = u8x4((w[k] >> 4) & 0x0f0f0f0fu);
            for (uint i = 0; i < 4u; i++) a = fma(lo[i], xv[4u * k + i], fma(hi[i], xv[16u + 4u * k + i], a));
        }
        return d * (a - 8.0 * xs[0]);
    } else if (TYPE == T_Q8_0) {
        uint nb = n / 32u;
        float d = float(F16(row + 32ul * nb + 2ul * s).v[0]);
        float a = 0.0;
        for (uint j = 0; j < 2u; j++) {
            uvec4 w = U32x4(row + 32ul * s + 16u * j).v[0];
            for (uint k = 0; k < 4u; k++) {
                vec4 q = i8x4(w[k]);
                for (uint i = 0; i < 4u; i++) a = fma(q[i], xv[16u * j + 4u * k + i], a);
            }
        }
        return d * a;
    } else {
        float v[32];
        dq32(row, s, n, v);
        float a = 0.0;
        for (uint j = 0; j < 32u; j++) a = fma(v[j], xv[j], a);
        return a;
    }
}

// Values k .. k+7 of a row (k a multiple of 8, below the row's padded
// length) as eight f16, two per word: the f16 GEMMs read their A tiles
// from the weights through this instead of from a dequantised copy
// (mm_prep.comp). Computed in f32 as dq32 does, rounded once, so both
// paths give the same f16 operands. Each call loads 8 bytes of quants
// (16 for F16/BF16) and its block's scales.
uvec4 pack8h(vec4 a, vec4 b) {
    return uvec4(packHalf2x16(a.xy), packHalf2x16(a.zw), packHalf2x16(b.xy), packHalf2x16(b.zw));
}

// dq8h in two halves: dq8h_load issues the loads (raw words, nothing
// computed from them), dq8h_conv turns them into the eight f16, so a GEMM
// can have the next tile's loads in flight while it multiplies this one.
struct dq8raw { uvec4 a, b; };

dq8raw dq8h_load(uint64_t row, uint k, uint n) {
    dq8raw r = dq8raw(uvec4(0), uvec4(0));
    if (TYPE == T_F16 || TYPE == T_BF16) {
        r.a = U32x4(row + 2ul * k).v[0];
    } else if (TYPE == T_Q4_0) {
        const uint nb = n / 32u, b = k >> 5, j = k & 31u;
        r.a.xy = U32x2(row + 16ul * b + (j & 15u)).v[0];
        r.a.z = uint(U16(row + 16ul * nb + 2ul * b).v[0]);
    } else if (TYPE == T_Q8_0) {
        const uint nb = n / 32u, b = k >> 5;
        r.a.xy = U32x2(row + 32ul * b + (k & 31u)).v[0];
        r.a.z = uint(U16(row + 32ul * nb + 2ul * b).v[0]);
    } else if (TYPE == T_Q4_K || TYPE == T_Q5_K) {
        const uint l = k & 255u, g = l >> 6, i = l & 31u;
        const uint64_t b = row + uint64_t(k >> 8) * (TYPE == T_Q4_K ? 144u : 176u);
        r.a = U32x4(b).v[0];
        r.b.xy = U32x2(b + (TYPE == T_Q4_K ? 16u : 48u) + 32u * g + i).v[0];
        if (TYPE == T_Q5_K) r.b.zw = U32x2(b + 16u + i).v[0];
    } else {
        const uint nb = n / 256u, ib = k >> 8, l = k & 255u, h = l >> 7, q = (l >> 5) & 3u, i = l & 31u;
        r.a.xy = U32x2(row + 128ul * ib + 64u * h + 32u * (q & 1u) + i).v[0];
        r.a.zw = U32x2(row + 128ul * nb + 64ul * ib + 32u * h + i).v[0];
        r.b.x = uint(U16(row + 208ul * nb + 2ul * ib).v[0]);
        r.b.y = uint(int(I8(row + 192ul * nb + 16ul * ib + 8u * h + 2u * q + (i >> 4)).v[0]));
    }
    return r;
}

// an f16 held in the low half of a word, converted as an F16 load would
float h16(uint w) { return float(uint16BitsToFloat16(uint16_t(w))); }

uvec4 dq8h_conv(dq8raw r, uint k) {
    const uint M4 = 0x0f0f0f0fu;
    if (TYPE == T_F16) return r.a;
    if (TYPE == T_BF16) {
        const uvec4 w = r.a;
        return pack8h(vec4(bf16_to_f32(w.x & 0xffffu), bf16_to_f32(w.x >> 16), bf16_to_f32(w.y & 0xffffu), bf16_to_f32(w.y >> 16)),
                      vec4(bf16_to_f32(w.z & 0xffffu), bf16_to_f32(w.z >> 16), bf16_to_f32(w.w & 0xffffu), bf16_to_f32(w.w >> 16)));
    }
    if (TYPE == T_Q4_0) { // value j of a block: low nibble of byte j (j < 16), else high nibble of byte j - 16
        const uvec2 w = (r.a.xy >> ((k & 31u) >= 16u ? 4u : 0u)) & M4;
        const float d = h16(r.a.z);
        return pack8h(d * (u8x4(w.x) - 8.0), d * (u8x4(w.y) - 8.0));
    }
    if (TYPE == T_Q8_0) {
        const float d = h16(r.a.z);
        return pack8h(d * i8x4(r.a.x), d * i8x4(r.a.y));
    }
    if (TYPE == T_Q4_K || TYPE == T_Q5_K) {
        // value l of a super-block: 64-value group g, sub-block 2 g + hi;
        // nibble hi of byte 32 g + i (i = l % 32), Q5_K's fifth bit in bit
        // 2 g + hi of qh[i]
        const uint l = k & 255u, g = l >> 6, hi = (l >> 5) & 1u;
        const vec2 dm = unpackHalf2x16(r.a.x);
        float sc, m;
        scale_min_k4w(r.a.yzw, 2u * g + hi, sc, m);
        uvec2 w = (r.b.xy >> (4u * hi)) & M4;
        if (TYPE == T_Q5_K) w |= ((r.b.zw >> (2u * g + hi)) & 0x01010101u) << 4;
        const float d = dm.x * sc, mn = dm.y * m;
        return pack8h(d * u8x4(w.x) - mn, d * u8x4(w.y) - mn);
    }
    // Q6_K planes: value l of super-block ib: half h, quarter q, i = l % 32;
    // low bits: nibble q / 2 of ql[64 h + 32 (q % 2) + i], high bits:
    // bits 2 q of qh[32 h + i], scale scales[8 h + 2 q + i / 16]
    const uint q = (k >> 5) & 3u;
    const uvec2 ql = (r.a.xy >> (4u * (q >> 1))) & M4;
    const uvec2 qh = (r.a.zw >> (2u * q)) & 0x03030303u;
    const float d = h16(r.b.x) * float(int(r.b.y));
    return pack8h(d * (u8x4(ql.x | (qh.x << 4)) - 32.0), d * (u8x4(ql.y | (qh.y << 4)) - 32.0));
}

uvec4 dq8h(uint64_t row, uint k, uint n) { return dq8h_conv(dq8h_load(row, k, n), k); }
