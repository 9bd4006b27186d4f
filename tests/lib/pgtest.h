/*
 * pgtest.h - C tests that need the catalog: a fresh database on the ctest
 * PostgreSQL fixture (tests/lib/pgfixture.sh), one per test program.
 */
#ifndef STRIKE_PGTEST_H
#define STRIKE_PGTEST_H

/*
 * Drop and create database `name` on the fixture cluster (env
 * STRIKE_TEST_PG_HOST, the socket directory) and return its connection
 * string (caller frees). Aborts the test program when the fixture is not
 * running: a test that needs PostgreSQL never passes without it.
 */
char *pgtest_create_db(const char *name);

#endif
