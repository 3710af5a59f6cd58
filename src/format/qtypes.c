/* The ggml type table: names and block geometry for every id a GGUF may
 * carry, so files with types we cannot compute on are still read and
 * validated; `compute` marks the ones zinc implements. */
#include <stdio.h>

#include "quant.h"

static const zn_type_info type_table[ZN_TYPE_COUNT] = {
    [ZN_TYPE_F32] = {"F32", 1, 4, true},
    [ZN_TYPE_F16] = {"F16", 1, 2, true},
    [ZN_TYPE_Q4_0] = {"Q4_0", 32, 18, true},
    [ZN_TYPE_Q4_1] = {"Q4_1", 32, 20, true},
    [ZN_TYPE_Q5_0] = {"Q5_0", 32, 22, true},
    [ZN_TYPE_Q5_1] = {"Q5_1", 32, 24, true},
    [ZN_TYPE_Q8_0] = {"Q8_0", 32, 34, true},
    [ZN_TYPE_Q8_1] = {"Q8_1", 32, 36, false},
    [ZN_TYPE_Q2_K] = {"Q2_K", 256, 84, false},
    [ZN_TYPE_Q3_K] = {"Q3_K", 256, 110, false},
    [ZN_TYPE_Q4_K] = {"Q4_K", 256, 144, true},
    [ZN_TYPE_Q5_K] = {"Q5_K", 256, 176, true},
    [ZN_TYPE_Q6_K] = {"Q6_K", 256, 210, true},
    [ZN_TYPE_Q8_K] = {"Q8_K", 256, 292, true},
    [ZN_TYPE_IQ2_XXS] = {"IQ2_XXS", 256, 66, false},
    [ZN_TYPE_IQ2_XS] = {"IQ2_XS", 256, 74, false},
    [ZN_TYPE_IQ3_XXS] = {"IQ3_XXS", 256, 98, false},
    [ZN_TYPE_IQ1_S] = {"IQ1_S", 256, 50, false},
    [ZN_TYPE_IQ4_NL] = {"IQ4_NL", 32, 18, false},
    [ZN_TYPE_IQ3_S] = {"IQ3_S", 256, 110, false},
    [ZN_TYPE_IQ2_S] = {"IQ2_S", 256, 82, false},
    [ZN_TYPE_IQ4_XS] = {"IQ4_XS", 256, 136, false},
    [ZN_TYPE_I8] = {"I8", 1, 1, false},
    [ZN_TYPE_I16] = {"I16", 1, 2, false},
    [ZN_TYPE_I32] = {"I32", 1, 4, false},
    [ZN_TYPE_I64] = {"I64", 1, 8, false},
    [ZN_TYPE_F64] = {"F64", 1, 8, false},
    [ZN_TYPE_IQ1_M] = {"IQ1_M", 256, 56, false},
    [ZN_TYPE_BF16] = {"BF16", 1, 2, true},
    [ZN_TYPE_TQ1_0] = {"TQ1_0", 256, 54, false},
    [ZN_TYPE_TQ2_0] = {"TQ2_0", 256, 66, false},
    [ZN_TYPE_MXFP4] = {"MXFP4", 32, 17, false},
};

const zn_type_info *zn_type_get(uint32_t id) {
    if (id >= ZN_TYPE_COUNT || !type_table[id].name) return NULL;
    return &type_table[id];
}

const char *zn_type_name(uint32_t id) {
    const zn_type_info *ti = zn_type_get(id);
    return ti ? ti->name : "unknown";
}

size_t zn_row_size(zn_type t, int64_t n) {
    const zn_type_info *ti = zn_type_get((uint32_t)t);
    if (!ti || n < 0 || n % ti->blck) return 0;
    return (size_t)(n / ti->blck) * ti->size;
}
