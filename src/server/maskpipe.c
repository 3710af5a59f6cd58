/* The mask thread (see maskpipe.h). */
#include "maskpipe.h"

#include <string.h>

static void *mask_worker(void *arg) {
    zn_maskpipe *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && p->finished == p->posted) pthread_cond_wait(&p->cv, &p->mu);
        if (p->quit) break;
        const int n = p->n_work;
        pthread_mutex_unlock(&p->mu);
        int done = 0;
        for (int i = 0; i < n; i++) done += gmask_prepare(p->work[i], NULL) == ZN_OK;
        pthread_mutex_lock(&p->mu);
        p->n_done = done;
        p->finished = p->posted;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

zn_status maskpipe_init(zn_maskpipe *p, zn_err *err) {
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    if (pthread_create(&p->thread, NULL, mask_worker, p)) {
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv);
        memset(p, 0, sizeof *p);
        return zn_errf(err, ZN_ERR_NOMEM, "cannot start the grammar mask thread");
    }
    p->started = true;
    return ZN_OK;
}

void maskpipe_free(zn_maskpipe *p) {
    if (!p->started) return;
    pthread_mutex_lock(&p->mu);
    p->quit = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    memset(p, 0, sizeof *p);
}

void maskpipe_start(zn_maskpipe *p, zn_gmask *const *gms, int n) {
    if (n <= 0) return;
    if (n > ZN_SRV_MAX_PARALLEL) n = ZN_SRV_MAX_PARALLEL;
    pthread_mutex_lock(&p->mu);
    memcpy(p->work, gms, sizeof *gms * (size_t)n);
    p->n_work = n;
    p->posted++;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

int maskpipe_wait(zn_maskpipe *p) {
    pthread_mutex_lock(&p->mu);
    if (p->finished == p->posted && p->n_work == 0) {
        pthread_mutex_unlock(&p->mu);
        return 0;
    }
    while (p->finished != p->posted) pthread_cond_wait(&p->cv, &p->mu);
    const int done = p->n_done;
    p->n_work = 0;
    p->n_done = 0;
    pthread_mutex_unlock(&p->mu);
    return done;
}
