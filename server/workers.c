/* workers.c - a fixed thread pool with a bounded FIFO queue. */
#include "workers.h"

#include "common/log.h"
#include "common/xalloc.h"

#include <pthread.h>
#include <stdlib.h>

struct job {
    worker_fn fn;
    void *arg;
};

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
        struct job j = w->ring[w->head];
        w->head = (w->head + 1) % w->queue_max;
        w->count--;
        w->running++;
        pthread_mutex_unlock(&w->mu);
        j.fn(j.arg);
        pthread_mutex_lock(&w->mu);
        w->running--;
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

struct workers *workers_start(int nthreads, size_t queue_max)
{
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
    pthread_mutex_lock(&w->mu);
    if (w->stopping || w->count == w->queue_max) {
        pthread_mutex_unlock(&w->mu);
        return false;
    }
    w->ring[(w->head + w->count) % w->queue_max] = (struct job){fn, arg};
    w->count++;
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
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w->ring);
    free(w->threads);
    free(w);
}
