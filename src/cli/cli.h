/* Sub-commands of the zinc binary. Each returns a process exit code; only
 * main() exits. Each lives in its own cli_*.c file. */
#ifndef ZINC_CLI_H
#define ZINC_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "engine.h"

int cli_inspect(int argc, char **argv);     /* cli_inspect.c */
int cli_eval(int argc, char **argv);        /* cli_eval.c */
int cli_bench(int argc, char **argv);       /* cli_bench.c */
int cli_bench_parallel(int argc, char **argv); /* cli_bench_par.c: zinc bench --parallel N / -npl LIST */
int cli_synth(int argc, char **argv);       /* cli_synth.c */
int cli_tokenize(int argc, char **argv);    /* cli_tokenize.c */
int cli_detokenize(int argc, char **argv);  /* cli_tokenize.c */
int cli_generate(int argc, char **argv);    /* cli_generate.c: zinc -m MODEL -p PROMPT */
int cli_list_devices(int argc, char **argv);/* cli_devices.c */
int cli_model(int argc, char **argv);       /* cli_model.c: zinc model list|pull|use|active|rm */
int cli_check(int argc, char **argv);       /* cli_check.c: zinc --check, the doctor */
int cli_serve(int argc, char **argv);       /* cli_serve.c: zinc serve, the OpenAI-compatible server */
int cli_chat(int argc, char **argv);        /* cli_serve.c: zinc chat, the same on port 9090 + the browser */

/* The model a command runs: m when non-NULL, else the active model, else the
 * shipped demo model (said on stderr). NULL after printing what to do. */
const char *cli_resolve_model(const char *m, char buf[4096]); /* cli_model.c */
/* The installed file of a catalog id or alias (--model-id); NULL after
 * saying what is wrong (unknown id, not installed: the pull to run). */
const char *cli_resolve_model_id(const char *id, char buf[4096]); /* cli_model.c */

/* A whole-string decimal integer in [lo, hi] -> *out; 0 on anything else. */
int cli_parse_long(const char *s, long lo, long hi, long *out); /* cli_args.c */
/* opt, or for NULL/"auto" the default backend (logged on stderr). */
const char *cli_backend_or_default(const char *opt);     /* cli_args.c */

/* The hardware profile of this machine (profile.h): the default backend's
 * device. */
struct zn_profile;
struct zn_hw;
void cli_detect_profile(struct zn_profile *p, struct zn_hw *hw); /* cli_args.c */

/* The engine options of the commands that run a model, as given. */
#define CLI_TUNE_MAX (2 * ZN_TUNE_TEXT_MAX) /* ZN_TUNE and --tune together */
typedef struct cli_engine_args {
    const char *backend;  /* --backend (NULL / "auto": the default) */
    const char *device;   /* --device, as typed (NULL: the backend's choice) */
    const char *tune;     /* --tune key=value,... */
    const char *kv_type;  /* --kv-type f16|q8_0|q4_0|q4_0r|q3_0r (NULL: f16) */
    long threads;         /* --threads (0: all cores) */
    bool profile;         /* --profile */
    bool trace;           /* --trace */
} cli_engine_args;
/* $ZN_TUNE, the Vulkan tuning overrides every run starts from (NULL: unset). */
const char *cli_tune_env(void);                        /* cli_args.c */
/* 1 when a (with value v) is --backend, --device, --tune or --kv-type, stored in ea; 0 otherwise. */
int cli_engine_arg(const char *a, const char *v, cli_engine_args *ea); /* cli_args.c */
/* The engine options from ea: the backend (--device implies vulkan), the
 * device checked against the backend's list, the tuning overrides (ZN_TUNE,
 * then --tune) checked against that device's keys, into tune[tune_cap].
 * 0, or 2 after a message naming the option and what is available. */
int cli_engine_opts(const char *cmd, const cli_engine_args *ea, zn_engine_opts *o, char *tune, size_t tune_cap);

#endif
