/*
 * xalloc.h - allocation that aborts on out-of-memory.
 *
 * Small internal allocations use these and skip NULL checks (as Redis'
 * zmalloc does). Sizes that come from the network or from a file must be
 * bounded by the caller before they reach here.
 */
#ifndef STRIKE_XALLOC_H
#define STRIKE_XALLOC_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
/* Reallocate to count*size bytes, aborting on multiplication overflow. */
void *xreallocarray(void *p, size_t count, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* printf into a fresh string; caller frees. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
