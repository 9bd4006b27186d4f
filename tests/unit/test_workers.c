/*
 * test_workers.c - the blocking-work pool of the HTTP and gRPC front ends:
 * jobs run in FIFO order, a full queue refuses (the front ends answer 503
 * with Retry-After, or UNAVAILABLE), and stopping runs what was queued.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdbool.h>

#include "workers.h"

struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool started, open;
    int order[16];
    int n;
};

static struct gate G = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false, {0}, 0};

/* The first job: says it runs, then holds the only worker until the gate opens. */
static void hold(void *arg)
{
    pthread_mutex_lock(&G.mu);
    G.order[G.n++] = (int)(intptr_t)arg;
    G.started = true;
    pthread_cond_broadcast(&G.cv);
    while (!G.open)
        pthread_cond_wait(&G.cv, &G.mu);
    pthread_mutex_unlock(&G.mu);
}

static void note(void *arg)
{
    pthread_mutex_lock(&G.mu);
    G.order[G.n++] = (int)(intptr_t)arg;
    pthread_mutex_unlock(&G.mu);
}

static void test_full_queue_refuses_then_drains_in_order(void **state)
{
    (void)state;
    struct workers *w = workers_start(1, 3);
    assert_non_null(w);
    assert_true(workers_submit(w, hold, (void *)(intptr_t)1));
    pthread_mutex_lock(&G.mu);
    while (!G.started)
        pthread_cond_wait(&G.cv, &G.mu);
    pthread_mutex_unlock(&G.mu);
    /* the worker is busy: three jobs wait, the fourth is refused */
    for (int i = 2; i <= 4; i++)
        assert_true(workers_submit(w, note, (void *)(intptr_t)i));
    assert_int_equal(workers_pending(w), 4); /* three queued and one running */
    assert_false(workers_submit(w, note, (void *)(intptr_t)99));
    pthread_mutex_lock(&G.mu);
    G.open = true;
    pthread_cond_broadcast(&G.cv);
    pthread_mutex_unlock(&G.mu);
    workers_stop(w); /* runs what was queued, then joins */
    assert_int_equal(G.n, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(G.order[i], i + 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_queue_refuses_then_drains_in_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
