/*
 * pq_worker.c - one helper thread that runs one job at a time for a reader
 * (decoding the next row group) or a writer (compressing a row group's
 * pages). The caller submits a job, goes on with its own work and waits for
 * the job before it touches what the job writes: every hand-over goes
 * through the worker's mutex, so the job's writes happen before the wait
 * returns.
 *
 * STRIKE_PQ_THREADS (read once per process) is how many threads a reader or
 * writer uses by default: 1 turns the helper off, anything else (the
 * default, 2) gives each reader and writer its one helper.
 */
#include "pq_int.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>

#include "common/xalloc.h"

struct pq__worker {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    void (*fn)(void *);
    void *arg;
    bool busy; /* a job was submitted and has not finished */
    bool quit;
};

static void *worker_main(void *p)
{
    struct pq__worker *w = p;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->quit && (!w->busy || w->fn == NULL))
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->quit && !w->busy)
            break;
        void (*fn)(void *) = w->fn;
        void *arg = w->arg;
        w->fn = NULL;
        pthread_mutex_unlock(&w->mu);
        fn(arg);
        pthread_mutex_lock(&w->mu);
        w->busy = false;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

struct pq__worker *pq__worker_start(void)
{
    struct pq__worker *w = xcalloc(1, sizeof *w);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (pthread_create(&w->th, NULL, worker_main, w) != 0) {
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        free(w);
        return NULL;
    }
    return w;
}

void pq__worker_submit(struct pq__worker *w, void (*fn)(void *), void *arg)
{
    assert(fn != NULL);
    pthread_mutex_lock(&w->mu);
    while (w->busy)
        pthread_cond_wait(&w->cv, &w->mu);
    assert(w->fn == NULL && !w->quit); /* the last job was taken; not stopping */
    w->fn = fn;
    w->arg = arg;
    w->busy = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

bool pq__worker_wait(struct pq__worker *w)
{
    bool waited = false;
    pthread_mutex_lock(&w->mu);
    while (w->busy) {
        waited = true;
        pthread_cond_wait(&w->cv, &w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return waited;
}

void pq__worker_stop(struct pq__worker *w)
{
    if (w == NULL)
        return;
    pthread_mutex_lock(&w->mu);
    w->quit = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->th, NULL);
    assert(!w->busy && w->fn == NULL); /* the thread ran the last job before it quit */
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w);
}

static pthread_once_t threads_once = PTHREAD_ONCE_INIT;
static int threads_default = 2;

static void threads_init(void)
{
    const char *s = getenv("STRIKE_PQ_THREADS");
    if (s != NULL && s[0] == '1' && s[1] == '\0')
        threads_default = 1;
}

int pq__threads_default(void)
{
    pthread_once(&threads_once, threads_init);
    return threads_default;
}
