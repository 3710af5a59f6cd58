/* Stop strings and the reasoning/answer split over streamed text. */
#include "textstream.h"

#include <string.h>

void stopper_init(zn_stopper *s, const char *const *stop, int n_stop) {
    memset(s, 0, sizeof *s);
    for (int i = 0; i < n_stop && i < ZN_SRV_MAX_STOP; i++)
        if (stop[i] && *stop[i]) s->stop[s->n_stop++] = stop[i];
}

/* Length of the longest suffix of p[0..n) that is a proper prefix of a stop string. */
static size_t partial_suffix(const zn_stopper *s, const char *p, size_t n) {
    size_t best = 0;
    for (int i = 0; i < s->n_stop; i++) {
        size_t L = strlen(s->stop[i]);
        for (size_t k = (n < L ? n : L - 1); k > best; k--)
            if (!memcmp(p + n - k, s->stop[i], k)) {
                best = k;
                break;
            }
    }
    return best;
}

size_t stopper_push(zn_stopper *s, const char *text, size_t n, char *out) {
    if (s->matched) return 0;
    if (n > ZN_STOPPER_CAP - s->n_held) n = ZN_STOPPER_CAP - s->n_held; /* cannot happen within the documented sizes */
    memcpy(s->held + s->n_held, text, n);
    s->n_held += n;
    if (s->n_stop == 0) {
        size_t k = s->n_held;
        memcpy(out, s->held, k);
        s->n_held = 0;
        return k;
    }
    const char *first = NULL;
    for (int i = 0; i < s->n_stop; i++) {
        const char *m = memmem(s->held, s->n_held, s->stop[i], strlen(s->stop[i]));
        if (m && (!first || m < first)) first = m, s->hit = s->stop[i];
    }
    if (first) {
        size_t k = (size_t)(first - s->held);
        memcpy(out, s->held, k);
        s->n_held = 0;
        s->matched = true;
        return k;
    }
    size_t keep = partial_suffix(s, s->held, s->n_held), k = s->n_held - keep;
    memcpy(out, s->held, k);
    memmove(s->held, s->held + k, keep);
    s->n_held = keep;
    return k;
}

size_t stopper_flush(zn_stopper *s, char *out) {
    size_t k = s->matched ? 0 : s->n_held;
    memcpy(out, s->held, k);
    s->n_held = 0;
    return k;
}

/* ---- reasoning / answer ---- */

enum { T_START, T_REASON, T_ANSWER };

static const char OPEN[] = "<think>", CLOSE[] = "</think>";

static bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

void thinker_init(zn_thinker *t, bool in_thinking, bool enabled) {
    memset(t, 0, sizeof *t);
    t->mode = !enabled ? T_ANSWER : in_thinking ? T_REASON : T_START;
    t->at_start = enabled;
}

typedef struct outs {
    zn_think_out *o;
    int n;
    size_t len[2];
    zn_thinker *t;
} outs;

/* Appends to channel ch's piece, dropping leading whitespace while at_start. */
static void emit(outs *w, int ch, const char *p, size_t n) {
    zn_thinker *t = w->t;
    if (t->at_start) {
        while (n && is_ws(*p)) p++, n--;
        if (!n) return;
        t->at_start = false;
    }
    memcpy(t->buf[ch] + w->len[ch], p, n);
    w->len[ch] += n;
}

static int finish(outs *w) {
    int k = 0;
    for (int ch = ZN_CH_REASONING; ch >= ZN_CH_CONTENT; ch--)  /* reasoning comes first */
        if (w->len[ch]) w->o[k++] = (zn_think_out){ch, w->t->buf[ch], w->len[ch]};
    return k;
}

/* Consumes held as far as the mode allows; returns false when it must wait. */
static void step(outs *w) {
    zn_thinker *t = w->t;
    for (;;) {
        char *h = t->held;
        size_t n = t->n_held;
        if (t->mode == T_ANSWER) {
            emit(w, ZN_CH_CONTENT, h, n);
            t->n_held = 0;
            return;
        }
        if (t->mode == T_START) {
            size_t i = 0;
            while (i < n && is_ws(h[i])) i++;
            size_t rest = n - i, m = rest < 7 ? rest : 7;
            if (rest >= 7 && !memcmp(h + i, OPEN, 7)) {
                memmove(h, h + i + 7, rest - 7);
                t->n_held = rest - 7;
                t->mode = T_REASON;
                t->at_start = true;
                continue;
            }
            if (!memcmp(h + i, OPEN, m) && rest < 7 && i <= ZN_THINK_HOLD) return; /* may still open */
            t->mode = T_ANSWER;
            t->at_start = false;  /* no tag: the answer is the text as written */
            continue;
        }
        /* reasoning */
        char *c = memmem(h, n, CLOSE, 8);
        if (c) {
            size_t r = (size_t)(c - h);
            while (r && is_ws(h[r - 1])) r--;
            emit(w, ZN_CH_REASONING, h, r);
            size_t after = (size_t)(c + 8 - h);
            memmove(h, h + after, n - after);
            t->n_held = n - after;
            t->mode = T_ANSWER;
            t->at_start = true;
            continue;
        }
        /* keep a possible start of </think> and the whitespace before it */
        size_t keep = 0;
        for (size_t k = n < 7 ? n : 7; k > 0; k--)
            if (!memcmp(h + n - k, CLOSE, k)) {
                keep = k;
                break;
            }
        size_t ws = 0;
        while (ws < ZN_THINK_HOLD && n - keep - ws > 0 && is_ws(h[n - keep - ws - 1])) ws++;
        keep += ws;
        emit(w, ZN_CH_REASONING, h, n - keep);
        memmove(h, h + n - keep, keep);
        t->n_held = keep;
        return;
    }
}

int thinker_push(zn_thinker *t, const char *text, size_t n, zn_think_out out[2]) {
    outs w = {out, 0, {0, 0}, t};
    size_t room = sizeof t->held - t->n_held;
    if (n > room) n = room; /* cannot happen within the documented sizes */
    memcpy(t->held + t->n_held, text, n);
    t->n_held += n;
    step(&w);
    return finish(&w);
}

int thinker_flush(zn_thinker *t, zn_think_out out[2]) {
    outs w = {out, 0, {0, 0}, t};
    if (t->mode == T_START) {  /* a reply that is only (part of) "<think>" or whitespace */
        t->mode = T_ANSWER;
        t->at_start = false;
    }
    if (t->mode == T_REASON) {  /* unclosed: all reasoning, trailing whitespace trimmed */
        size_t n = t->n_held;
        while (n && is_ws(t->held[n - 1])) n--;
        emit(&w, ZN_CH_REASONING, t->held, n);
        t->n_held = 0;
    } else {
        step(&w);
    }
    return finish(&w);
}

/* ---- reasoning tokens ---- */

void thinkcount_init(zn_think_count *c, bool in_thinking, bool enabled) {
    thinker_init(&c->t, in_thinking, enabled);
    c->pending = c->n = 0;
}

void thinkcount_push(zn_think_count *c, const char *text, size_t n) {
    int before = c->t.mode;
    zn_think_out ignored[2];
    thinker_push(&c->t, text, n, ignored);
    int after = c->t.mode;
    if (after == T_START) {
        c->pending++;
    } else if (before == T_START) { /* decided with this token */
        /* reasoning opened, or opened and closed within this token */
        if (after == T_REASON || memmem(text, n, CLOSE, 8)) c->n += c->pending + 1;
        c->pending = 0;
    } else if (before == T_REASON) { /* inside, or the one that closes it */
        c->n++;
    }
}

bool thinkcount_in_reasoning(const zn_think_count *c) { return c->t.mode == T_REASON; }
