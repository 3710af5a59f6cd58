/* Thread pool for the CPU backend: workers are created once; a job runs the
 * same function on every thread, which step through the graph together,
 * separated by a barrier that spins first (a token's ops take microseconds)
 * and then sleeps on a futex, so a thread whose peer was descheduled on a
 * busy machine stops burning the core that peer needs. Between jobs workers
 * spin briefly, then sleep. */
#include <linux/futex.h>
#include <stdint.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cpu.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
static inline void cpu_relax(void) { _mm_pause(); }
#else
static inline void cpu_relax(void) {}
#endif

#define SPIN_BEFORE_YIELD 4096
#define SPIN_BEFORE_SLEEP 4000 /* between jobs: a decode step follows within microseconds */
#define BARRIER_SPINS 2000 /* ~100 us of pause before a barrier sleeps */

/* Separate cache lines for the counters every thread hammers. */
typedef struct cpu_pool {
    _Alignas(64) atomic_int arrived;
    _Alignas(64) atomic_int phase;
    atomic_int sleepers;              /* threads asleep on phase */
    _Alignas(64) atomic_int job;      /* generation of the current job */
    _Alignas(64) atomic_int done;     /* workers finished with the job */
    int n;
    cpu_pool_fn fn;
    void *arg;
    bool quit;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t *threads;
    struct worker { cpu_pool *p; int ith; } *workers;
} cpu_pool;

static void futex_wait(atomic_int *addr, int expected) {
    syscall(SYS_futex, (int *)addr, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

static void futex_wake_all(atomic_int *addr) {
    syscall(SYS_futex, (int *)addr, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

void cpu_pool_barrier(cpu_pool *p) {
    if (p->n == 1) return;
    int ph = atomic_load_explicit(&p->phase, memory_order_acquire);
    if (atomic_fetch_add_explicit(&p->arrived, 1, memory_order_acq_rel) == p->n - 1) {
        atomic_store_explicit(&p->arrived, 0, memory_order_relaxed);
        atomic_fetch_add_explicit(&p->phase, 1, memory_order_acq_rel);
        if (atomic_load_explicit(&p->sleepers, memory_order_acquire) > 0) futex_wake_all(&p->phase);
        return;
    }
    for (int spins = 0; atomic_load_explicit(&p->phase, memory_order_acquire) == ph; spins++) {
        if (spins < BARRIER_SPINS) {
            cpu_relax();
            continue;
        }
        /* registered before re-checking, so the last thread either sees us
         * and wakes us or bumped the phase before we check it */
        atomic_fetch_add_explicit(&p->sleepers, 1, memory_order_acq_rel);
        if (atomic_load_explicit(&p->phase, memory_order_acquire) == ph) futex_wait(&p->phase, ph);
        atomic_fetch_sub_explicit(&p->sleepers, 1, memory_order_acq_rel);
    }
}

static void *worker_main(void *arg) {
    struct worker *w = arg;
    cpu_pool *p = w->p;
    int seen = 0;
    for (;;) {
        int spins = 0;
        while (atomic_load_explicit(&p->job, memory_order_acquire) == seen && spins < SPIN_BEFORE_SLEEP) {
            cpu_relax();
            if (++spins % SPIN_BEFORE_YIELD == 0) sched_yield();
        }
        if (atomic_load_explicit(&p->job, memory_order_acquire) == seen) {
            pthread_mutex_lock(&p->mu);
            while (atomic_load_explicit(&p->job, memory_order_acquire) == seen && !p->quit)
                pthread_cond_wait(&p->cv, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        pthread_mutex_lock(&p->mu);
        bool quit = p->quit;
        pthread_mutex_unlock(&p->mu);
        if (quit) return NULL;
        seen = atomic_load_explicit(&p->job, memory_order_acquire);
        p->fn(p->arg, w->ith, p->n);
        atomic_fetch_add_explicit(&p->done, 1, memory_order_release);
    }
}

zn_status cpu_pool_init(cpu_pool **out, int n_threads, zn_err *err) {
    *out = NULL;
    if (n_threads < 1 || n_threads > ZN_MAX_THREADS)
        return zn_errf(err, ZN_ERR_ARG, "cpu: %d threads out of range [1, %d]", n_threads, ZN_MAX_THREADS);
    cpu_pool *p = aligned_alloc(64, (sizeof *p + 63) / 64 * 64);
    if (!p) return zn_errf(err, ZN_ERR_NOMEM, "cpu: out of memory for the thread pool");
    *p = (cpu_pool){.n = n_threads};
    atomic_init(&p->arrived, 0);
    atomic_init(&p->phase, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->job, 0);
    atomic_init(&p->done, 0);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->threads = calloc((size_t)n_threads, sizeof *p->threads);
    p->workers = calloc((size_t)n_threads, sizeof *p->workers);
    if (!p->threads || !p->workers) {
        cpu_pool_free(p);
        return zn_errf(err, ZN_ERR_NOMEM, "cpu: out of memory for the thread pool");
    }
    for (int i = 1; i < n_threads; i++) {
        p->workers[i] = (struct worker){p, i};
        if (pthread_create(&p->threads[i], NULL, worker_main, &p->workers[i]) != 0) {
            p->n = i; /* the ones started so far are joined by free */
            cpu_pool_free(p);
            return zn_errf(err, ZN_ERR_NOMEM, "cpu: cannot start thread %d of %d", i, n_threads);
        }
    }
    *out = p;
    return ZN_OK;
}

void cpu_pool_free(cpu_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->quit = true;
    atomic_fetch_add(&p->job, 1);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++)
        if (p->threads && p->threads[i]) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->threads);
    free(p->workers);
    free(p);
}

void cpu_pool_run(cpu_pool *p, cpu_pool_fn fn, void *arg) {
    if (p->n == 1) {
        fn(arg, 0, 1);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add_explicit(&p->job, 1, memory_order_release);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    fn(arg, 0, p->n);
    for (int spins = 0; atomic_load_explicit(&p->done, memory_order_acquire) < p->n - 1; spins++) {
        if (spins < SPIN_BEFORE_YIELD) cpu_relax();
        else sched_yield();
    }
}
