#include "harness.h"
#include "status.h"
#include "quant.h"

static void test_errf_formats_and_returns(void) {
    zn_err e = {0};
    zn_status s = zn_errf(&e, ZN_ERR_FORMAT, "%s: bad %d", "f.gguf", 3);
    CHECK_EQ_INT(s, ZN_ERR_FORMAT);
    CHECK_EQ_STR(e.msg, "f.gguf: bad 3");
    zn_err_prefix(&e, "load");
    CHECK_EQ_STR(e.msg, "load: f.gguf: bad 3");
}

static void test_type_table(void) {
    CHECK_EQ_INT(zn_row_size(ZN_TYPE_Q4_K, 512), 288);
    CHECK_EQ_INT(zn_row_size(ZN_TYPE_Q4_K, 100), 0);
    CHECK_EQ_STR(zn_type_name(ZN_TYPE_BF16), "BF16");
    CHECK(zn_type_get(4) == NULL);
    CHECK(zn_type_get(1000) == NULL);
}

int main(void) {
    RUN(test_errf_formats_and_returns);
    RUN(test_type_table);
    return harness_report("status");
}
