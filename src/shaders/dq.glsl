// Dequantisation of 32 consecutive weights (one "step") of a row, for every
// weight type zinc computes on. The row starts at byte address `row`; step s
// covers elements [32 s, 32 s + 32). Block layouts are GGUF's (src/quant.h).
// TYPE is a specialisation constant of the including shader.

uint byte_at(uint64_t a) { return uint(U8(a).v[0]); }

// 6-bit scale and min j of a Q4_K/Q5_K super-block (ggml get_scale_min_k4).
void scale_min_k4(uint64_t sc, uint j, out float d, out float m) {
    if (j < 4) {
        d = float(byte_at(sc + j) & 63u);
        m = float(byte_at(sc + j + 4) & 63u);
    } else {
        uint a = byte_at(sc + j + 4), lo = byte_at(sc + j - 4), hi = byte_at(sc + j);
        d = float((a & 15u) | ((lo >> 6) << 4));
        m = float((a >> 4) | ((hi >> 6) << 4));
    }
}

// Bytes per block and elements per block of TYPE.
uint type_block_bytes() {
    switch (TYPE) {
    case T_F32: return 4u; case T_F16: return 2u; case T_BF16: return 2u;
    case T_Q4_0: return 18u; case T_Q8_0: return 34u;
    case T_Q4_K: return 144u; case T_Q5_K: return 176u; default: return 210u; // Q6_K
    }
}

// Dequantises step s of the row at `row` (n = row length, used to clip the
// last step of float rows whose length is not a multiple of 32).
void dq32(uint64_t row, uint s, uint n, out float v[32]) {
    if (TYPE == T_F32 || TYPE == T_F16 || TYPE == T_BF16) {
        uint i0 = 32u * s;
        for (uint j = 0; j < 32u; j++) {
            uint i = i0 + j;
            float x = 0.0;
            if (i < n) {
                if (TYPE == T_F32) x = F32(row).v[i];
                else if (TYPE == T_F16) x = float(F16(row).v[i]);
                else x = bf16_to_f32(uint(U16(row).v[i]));
            }
            v[j] = x;
        }
    } else if (TYPE == T_Q4_0) {
        uint64_t b = row + uint64_t(s) * 18u;
        float d = f16_at(b);
        for (uint j = 0; j < 8u; j++) {
            uint w = uint(U16(b + 2u + 2u * j).v[0]);
            v[2u * j] = d * (float(w & 15u) - 8.0);
            v[2u * j + 1u] = d * (float((w >> 8) & 15u) - 8.0);
            v[2u * j + 16u] = d * (float((w >> 4) & 15u) - 8.0);
            v[2u * j + 17u] = d * (float(w >> 12) - 8.0);
        }
    } else if (TYPE == T_Q8_0) {
        uint64_t b = row + uint64_t(s) * 34u;
        float d = f16_at(b);
        for (uint j = 0; j < 16u; j++) {
            uint w = uint(U16(b + 2u + 2u * j).v[0]);
            v[2u * j] = d * float(int(w << 24) >> 24);
            v[2u * j + 1u] = d * float(int(w << 16) >> 24);
        }
    } else if (TYPE == T_Q4_K || TYPE == T_Q5_K) {
        uint ib = s >> 3, sub = s & 7u;
        uint64_t b = row + uint64_t(ib) * (TYPE == T_Q4_K ? 144u : 176u);
        float sc, mn;
        scale_min_k4(b + 4u, sub, sc, mn);
        float d = f16_at(b) * sc, m = f16_at(b + 2u) * mn;
        uint64_t qs = b + (TYPE == T_Q4_K ? 16u : 48u) + 32u * (sub >> 1);
        uint shift = 4u * (sub & 1u);
        for (uint j = 0; j < 8u; j++) {
            uint w = (U32(qs + 4u * j).v[0] >> shift) & 0x0f0f0f0fu;
            uvec4 q = uvec4(w & 255u, (w >> 8) & 255u, (w >> 16) & 255u, w >> 24);
            if (TYPE == T_Q5_K) {
                uint h = (U32(b + 16u + 4u * j).v[0] >> sub) & 0x01010101u;
                q += uvec4(h & 1u, (h >> 8) & 1u, (h >> 16) & 1u, h >> 24) * 16u;
            }
            for (uint k = 0; k < 4u; k++) v[4u * j + k] = d * float(q[k]) - m;
        }
    } else { // Q6_K: ql[128] qh[64] scales[16] d
        uint ib = s >> 3, sub = s & 7u, half_ = sub >> 2, quarter = sub & 3u;
        uint64_t b = row + uint64_t(ib) * 210u;
        float d = f16_at(b + 208u);
        uint64_t ql = b + 64u * half_ + 32u * (quarter & 1u), qh = b + 128u + 32u * half_;
        uint lshift = 4u * (quarter >> 1), hshift = 2u * quarter;
        float d0 = d * float(I8(b + 192u).v[8u * half_ + 2u * quarter]);
        float d1 = d * float(I8(b + 192u).v[8u * half_ + 2u * quarter + 1u]);
        for (uint j = 0; j < 16u; j++) {
            uint l = uint(U16(ql + 2u * j).v[0]) >> lshift, h = uint(U16(qh + 2u * j).v[0]) >> hshift;
            int q0 = int((l & 15u) | ((h & 3u) << 4)) - 32;
            int q1 = int(((l >> 8) & 15u) | (((h >> 8) & 3u) << 4)) - 32;
            float dd = j < 8u ? d0 : d1;
            v[2u * j] = dd * float(q0);
            v[2u * j + 1u] = dd * float(q1);
        }
    }
}
