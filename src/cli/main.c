/* zinc: local LLM inference. Dispatches to the sub-commands in cli_*.c. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

typedef struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *help;
} command;

static const command commands[] = {
    {"inspect", cli_inspect, "show a GGUF file's metadata and tensors"},
    {"eval", cli_eval, "evaluate token ids, print logits and greedy tokens as JSON"},
    {"bench", cli_bench, "measure prefill and decode speed"},
    {"synth", cli_synth, "write a random-weight GGUF of a real model's shape"},
    {"tokenize", cli_tokenize, "print the token ids of a text"},
    {"detokenize", cli_detokenize, "print the text of token ids"},
    {"model", cli_model, "the model catalog: list, pull, use, active, rm"},
    {"serve", cli_serve, "OpenAI-compatible server (and the chat UI at /); port 8080"},
    {"chat", cli_chat, "the server on port 9090, opened in the browser"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: zinc [-m MODEL] -p PROMPT [options]   generate text (zinc --help-generate)\n"
               "       zinc COMMAND [args]                    (zinc COMMAND --help)\n"
               "       zinc --list-devices                    list Vulkan devices\n"
               "       zinc --check                           check the setup; ends in READY [OK] or NOT READY [FAIL]\n"
               "without -m, zinc runs the active model (zinc model use), else the demo model shipped with it\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].help);
}

int main(int argc, char **argv) {
    if (argc >= 2) {
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
            if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
        if (!strcmp(argv[1], "--list-devices")) return cli_list_devices(argc - 1, argv + 1);
        if (!strcmp(argv[1], "--check")) return cli_check(argc - 1, argv + 1);
        if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
            usage(stdout);
            return 0;
        }
        /* generation takes only options: a bare word is a mistyped command */
        if (argv[1][0] != '-') {
            fprintf(stderr, "zinc: unknown command '%s'\n\n", argv[1]);
            usage(stderr);
            return 2;
        }
    }
    return cli_generate(argc, argv);
}
