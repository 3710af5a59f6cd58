// Shared by every zinc shader: memory is reached through 64-bit buffer
// device addresses passed in push constants (no descriptor sets).
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference2 : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require

layout(buffer_reference, std430, buffer_reference_align = 1) readonly buffer U8 { uint8_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 1) readonly buffer I8 { int8_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 2) readonly buffer U16 { uint16_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer U32 { uint v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer U32x2 { uvec2 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer U32x4 { uvec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer F32 { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) buffer F32x4 { vec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 2) buffer F16 { float16_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer I32 { int v[]; };

// ggml type ids (src/quant.h)
#define T_F32 0
#define T_F16 1
#define T_Q4_0 2
#define T_Q8_0 8
#define T_Q4_K 12
#define T_Q5_K 13
#define T_Q6_K 14
#define T_BF16 30

float bf16_to_f32(uint b) { return uintBitsToFloat(b << 16); }
float f16_at(uint64_t a) { return float(F16(a).v[0]); }

float silu(float x) { return x / (1.0 + exp(-x)); }
float sigmoid(float x) { return 1.0 / (1.0 + exp(-x)); }
