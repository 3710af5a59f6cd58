#version 450
// attn_fa_sg.glsl with the 16x16 tile products in scalar code (no
// cooperative matrices): the tests of its tiling on devices without them.
#include "attn_fa_sg.glsl"
