/* The mask thread: grammar masks (gmask_prepare) of the slots that sample
 * after the engine step, computed while the step runs instead of after it.
 *
 *   maskpipe_init(&p, &err);           // once, with the scheduler: the thread
 *   maskpipe_start(&p, gms, n);        // engine thread, just before engine_step
 *   engine_step(...);
 *   int done = maskpipe_wait(&p);      // after it, before any gmask_sample
 *   maskpipe_free(&p);
 *
 * Between start and wait the gmasks belong to the mask thread: the engine
 * thread must not touch them (the step does not), and wait's handoff under
 * the mutex orders the memory both ways. One condition variable round trip
 * per step, no allocation. A mask that fails to prepare keeps its error in
 * the gmask (gmask_sample returns it). */
#ifndef ZINC_MASKPIPE_H
#define ZINC_MASKPIPE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "gmask.h"
#include "limits.h"
#include "status.h"

typedef struct zn_maskpipe {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    zn_gmask *work[ZN_SRV_MAX_PARALLEL];
    int n_work;
    int n_done;               /* masks prepared in the last batch */
    uint64_t posted, finished; /* batches handed over / completed */
    bool quit, started;
} zn_maskpipe;

zn_status maskpipe_init(zn_maskpipe *p, zn_err *err);
/* Joins the thread (after a wait, or with nothing posted). */
void maskpipe_free(zn_maskpipe *p);
/* Hands gms[0..n) (n <= ZN_SRV_MAX_PARALLEL) to the mask thread; n == 0
 * posts nothing. Not again before maskpipe_wait. */
void maskpipe_start(zn_maskpipe *p, zn_gmask *const *gms, int n);
/* Waits for the batch of the last start; how many masks it prepared (0
 * when nothing was posted). */
int maskpipe_wait(zn_maskpipe *p);

#endif
