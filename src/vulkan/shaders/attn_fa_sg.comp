#version 450
// attn_fa_sg.glsl on KHR cooperative matrices (f16 x f16 -> f32, 16x16x16).
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#define CM 1
#include "attn_fa_sg.glsl"
