/* Context-free grammars over bytes, written in GBNF (llama.cpp's notation):
 *
 *   root   ::= "{" ws pair ("," ws pair)* "}"
 *   pair   ::= [a-z]+ ":" ws ( [0-9]{1,3} | "\"" [^"\\]* "\"" )   # comment
 *
 * Literals and classes are Unicode text; both are compiled to UTF-8 bytes
 * (a class over code points becomes alternatives of byte ranges), so the
 * matcher (gmatch.h) works on the bytes tokens are made of, partial UTF-8
 * sequences included. Escapes: \n \r \t \\ \" \] \- \^ \xHH \uHHHH
 * \UHHHHHHHH; `.` is any code point. Postfix * + ? {m} {m,} {m,n} apply to
 * the item before them, parentheses group. Repetitions become right-recursive
 * rules, which the matcher runs in constant stack depth. Left recursion is
 * refused (the matcher could not expand it), as are undefined rules.
 *
 * Compiled form: every rule's alternatives as runs of elements in one array,
 * each run ended by ZN_GEL_END; an element >= 0 is a byte set (an index into
 * sets), ZN_GEL_REF(r) refers to rule r. */
#ifndef ZINC_GRAMMAR_H
#define ZINC_GRAMMAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

#define ZN_GEL_END (-1)
#define ZN_GEL_REF(r) (-2 - (int32_t)(r))
#define ZN_GEL_RULE(e) (-2 - (e))

typedef struct zn_grammar {
    int32_t *el;        /* [n_el] */
    int n_el;
    int32_t *alt;       /* [n_alt]: where each alternative starts in el */
    int n_alt;
    int32_t *rule_alt;  /* [n_rules + 1]: rule r's alternatives are alt[rule_alt[r] .. rule_alt[r+1]) */
    int n_rules;
    int root;
    uint64_t (*set)[4]; /* [n_set]: 256-bit byte sets */
    int n_set;
    char **name;        /* [n_rules]: "root", "pair", or "pair~3" for rules made from groups and repetitions */
} zn_grammar;

/* Parses and compiles text[0..n); root names the start rule (NULL: "root"). */
zn_status grammar_parse(zn_grammar *g, const char *text, size_t n, const char *root, zn_err *err);
void grammar_free(zn_grammar *g);

static inline bool grammar_set_has(const zn_grammar *g, int32_t set, unsigned char b) {
    return (g->set[set][b >> 6] >> (b & 63)) & 1;
}

#endif
