/* zinc --list-devices: the devices zinc can use, in --device order, and
 * the tuning the default one gets. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

int cli_list_devices(int argc, char **argv) {
    (void)argc;
    (void)argv;
    const zn_backend_ops *vk = backend_find("vulkan");
    zn_device_info devs[ZN_MAX_DEVICES];
    int n = 0, def = -1;
    zn_err err = {0};
    if (!vk || !vk->devices || vk->devices(devs, ZN_MAX_DEVICES, &n, &def, &err)) {
        fprintf(stderr, "zinc: %s\n", err.msg);
        return 1;
    }
    printf("Vulkan devices (--device N; * = default):\n");
    for (int i = 0; i < n; i++) printf("%s\n", devs[i].line);
    return 0;
}
