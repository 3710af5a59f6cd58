/* Sub-commands of the zinc binary. Each returns a process exit code; only
 * main() exits. Each lives in its own cli_*.c file. */
#ifndef ZINC_CLI_H
#define ZINC_CLI_H

int cli_inspect(int argc, char **argv);     /* cli_inspect.c */
int cli_eval(int argc, char **argv);        /* cli_eval.c */
int cli_bench(int argc, char **argv);       /* cli_bench.c */
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

/* Whether a is one of the NULL-terminated names (an option table). */
int cli_opt_in(const char *a, const char *const *names); /* cli_args.c */
/* A whole-string decimal integer in [lo, hi] -> *out; 0 on anything else. */
int cli_parse_long(const char *s, long lo, long hi, long *out); /* cli_args.c */
/* opt, or for NULL/"auto" the default backend (logged on stderr). */
const char *cli_backend_or_default(const char *opt);     /* cli_args.c */

#endif
