/* Whether the tests have no Vulkan device to run on (why: the reason, for
 * harness_skip_suite / SKIP). */
#ifndef ZN_TEST_VK_ABSENT_H
#define ZN_TEST_VK_ABSENT_H

#include <stdbool.h>
#include <stdio.h>

#include "vk_device.h"

static inline bool vk_absent(char *why, size_t cap) {
    vkdev d;
    zn_err err = {0};
    if (vkdev_open(&d, -1, &err) == ZN_OK) {
        vkdev_close(&d);
        return false;
    }
    snprintf(why, cap, "no usable Vulkan device: %s", err.msg);
    return true;
}

#endif
