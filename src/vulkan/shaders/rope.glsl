// The rotation angle of RoPE (rope.comp, and the attention kernels that
// take in their query's and new key's rope: attn_rope.glsl).
// theta_i = p * theta_scale^i by repeated multiplication (as ggml does),
// divided by the frequency factor, times freq_scale.
#define ROPE_NORM 0u
#define ROPE_NEOX 1u
#define ROPE_IMROPE 2u

// pos * theta_scale^i, carried from pair to pair: a thread that rotates
// several pairs in order pays the multiplications of the first once (the
// same products, so the same floats, as the loop from pos).
struct RopeTh {
    uint i; // the pair th holds (0xffffffff: none yet)
    float th;
};
const RopeTh ROPE_TH0 = RopeTh(0xffffffffu, 0.0);

float rope_th(inout RopeTh c, uint i, float pos, float theta_scale) {
    if (c.i > i) { // none yet, or behind: from pos
        c.i = 0u;
        c.th = pos;
    }
    for (; c.i < i; c.i++) c.th *= theta_scale;
    return c.th;
}

// (cos, sin) of pair i's angle at position pos. secs: the 4 IMRoPE
// sections, 8 bits each (a dead pair's angle is 0); ff: the frequency
// factors (0: none).
vec2 rope_cs_at(inout RopeTh c, uint i, float pos, uint mode, uint secs, float theta_scale, float freq_scale,
                uint64_t ff) {
    float th = rope_th(c, i, pos, theta_scale);
    if (mode == ROPE_IMROPE) {
        const uint sec0 = secs & 255u, sec1 = (secs >> 8) & 255u, sec2 = (secs >> 16) & 255u, sec3 = secs >> 24;
        const uint s = i % (sec0 + sec1 + sec2 + sec3), m = s % 3u;
        const bool live = (m == 0u && s < 3u * sec0) || (m == 1u && s < 3u * sec1) || (m == 2u && s < 3u * sec2);
        if (!live) th = 0.0;
    }
    if (ff != 0) th /= F32(ff).v[i];
    th *= freq_scale;
    return vec2(cos(th), sin(th));
}

vec2 rope_cs(uint i, float pos, uint mode, uint secs, float theta_scale, float freq_scale, uint64_t ff) {
    RopeTh c = ROPE_TH0;
    return rope_cs_at(c, i, pos, mode, secs, theta_scale, freq_scale, ff);
}
