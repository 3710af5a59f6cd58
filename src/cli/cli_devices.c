/* zinc --list-devices: the Vulkan devices zinc can use, in --device order. */
#include <stdio.h>

#include "cli.h"
#include "vk_device.h"

int cli_list_devices(int argc, char **argv) {
    (void)argc;
    (void)argv;
    vkdev_info infos[ZN_VK_MAX_DEVICES];
    int n = 0;
    zn_err err = {0};
    if (vkdev_list(infos, ZN_VK_MAX_DEVICES, &n, &err)) {
        fprintf(stderr, "zinc: %s\n", err.msg);
        return 1;
    }
    int def = vkdev_default_index(infos, n);
    printf("Vulkan devices (--device N; * = default):\n");
    for (int i = 0; i < n; i++) {
        char line[1024];
        vkdev_describe(&infos[i], i, i == def, line, sizeof line);
        printf("%s\n", line);
    }
    return 0;
}
