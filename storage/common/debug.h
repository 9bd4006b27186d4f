/*
 * debug.h - checks that exist only where asserts are on (docs/CONVENTIONS.md
 * "Asserts and errors").
 *
 * An O(1) invariant is a plain assert() where the code relies on it. An
 * invariant that costs a pass over a structure (a parsed tree, a sorted
 * array, every container of a set) goes into a checker: a function, defined
 * inside #ifndef NDEBUG, that asserts it piece by piece, so that a failure
 * names the broken piece. ST_DEBUG_CHECK(checker(args)) calls it in debug
 * builds (the sanitizer build CI runs) and compiles to nothing, arguments
 * included, under NDEBUG (Release and RelWithDebInfo builds).
 */
#ifndef STRIKE_DEBUG_H
#define STRIKE_DEBUG_H

#include <assert.h>

#ifdef NDEBUG
#define ST_DEBUG_CHECK(call) ((void)0)
#else
#define ST_DEBUG_CHECK(call) (call)
#endif

#endif
