/* placeholder until the owning module lands */
#include <stdio.h>
#include "cli.h"
int cli_synth(int argc, char **argv) { (void)argc; fprintf(stderr, "zinc: %s: not built yet\n", argv[0]); return 2; }
