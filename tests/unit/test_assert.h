/*
 * test_assert.h - for the tests that an invariant is asserted: run a piece
 * of code that breaks it in a child process and expect the child to die of
 * the assert (SIGABRT). Only where asserts are compiled in: the sanitizer
 * build CI runs keeps them whatever its build type (CMakeLists.txt), and in
 * a build with NDEBUG these tests, whose subject is absent, are not built.
 */
#ifndef STRIKE_TEST_ASSERT_H
#define STRIKE_TEST_ASSERT_H

#ifndef NDEBUG

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

/* Run fn(arg) in a child; true when the child was stopped by SIGABRT (an assert). */
static inline bool test_dies_of_assert(void (*fn)(void *), void *arg)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        fail_msg("fork: cannot test an assert");
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY); /* the assert's message is expected */
        if (null >= 0)
            dup2(null, STDERR_FILENO);
        fn(arg);
        _exit(0); /* the invariant was not checked */
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid)
        fail_msg("waitpid: cannot test an assert");
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

#endif
#endif
