/*
 * workers.c - a fixed thread pool with a bounded FIFO queue.
 *
 * The counters, under mu: `count` jobs wait in ring[head ..] (wrapping),
 * never more than queue_max; `running` jobs run, never more than the
 * threads; a job accepted by workers_submit runs exactly once, also when
 * the pool stops (which is why a pool without a thread accepts none).
 */
#include "workers.h"

#include "common/log.h"
#include "common/xalloc.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>

struct job {
    worker_fn fn;
    void *arg;
};

/* The counters' invariant (see the top of the file); w->mu held. */
#define WORKERS_OK(w)                                                                              \
    assert((w)->head < (w)->queue_max && (w)->count <= (w)->queue_max &&                           \
           (w)->running <= (size_t)(w)->nthreads)

struct workers {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct job *ring; /* circular queue of queue_max jobs */
    size_t queue_max, head, count;
    size_t running;
    bool stopping;
    int nthreads;
    pthread_t *threads;
};

static void *worker_main(void *p)
{
    struct workers *w = p;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (w->count == 0 && !w->stopping)
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->count == 0 && w->stopping)
            break;
        WORKERS_OK(w);
        struct job j = w->ring[w->head];
        assert(j.fn != NULL);
        w->head = (w->head + 1) % w->queue_max;
        w->count--;
        w->running++;
        WORKERS_OK(w);
        pthread_mutex_unlock(&w->mu);
        j.fn(j.arg);
        pthread_mutex_lock(&w->mu);
        assert(w->running > 0);
        w->running--;
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

struct workers *workers_start(int nthreads, size_t queue_max)
{
    assert(nthreads > 0);
    struct workers *w = xcalloc(1, sizeof *w);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->queue_max = queue_max > 0 ? queue_max : 1024;
    w->ring = xcalloc(w->queue_max, sizeof *w->ring);
    w->threads = xcalloc((size_t)nthreads, sizeof *w->threads);
    for (int i = 0; i < nthreads; i++) {
        if (pthread_create(&w->threads[i], NULL, worker_main, w) != 0) {
            log_error("workers: cannot start thread %d", i);
            break;
        }
        w->nthreads++;
    }
    return w;
}

bool workers_submit(struct workers *w, worker_fn fn, void *arg)
{
    assert(fn != NULL);
    pthread_mutex_lock(&w->mu);
    WORKERS_OK(w);
    /* no thread started (workers_start logged it): a job accepted would never run */
    if (w->stopping || w->count == w->queue_max || w->nthreads == 0) {
        pthread_mutex_unlock(&w->mu);
        return false;
    }
    w->ring[(w->head + w->count) % w->queue_max] = (struct job){fn, arg};
    w->count++;
    WORKERS_OK(w);
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return true;
}

size_t workers_pending(struct workers *w)
{
    pthread_mutex_lock(&w->mu);
    size_t n = w->count + w->running;
    pthread_mutex_unlock(&w->mu);
    return n;
}

void workers_stop(struct workers *w)
{
    if (w == NULL)
        return;
    pthread_mutex_lock(&w->mu);
    w->stopping = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < w->nthreads; i++)
        pthread_join(w->threads[i], NULL);
    assert(w->count == 0 && w->running == 0); /* every accepted job ran */
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w->ring);
    free(w->threads);
    free(w);
}
