/* pgtest.c - a fresh database on the test PostgreSQL fixture. */
#include "pgtest.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *pgtest_create_db(const char *name)
{
    const char *host = getenv("STRIKE_TEST_PG_HOST");
    if (host == NULL || *host == '\0') {
        fprintf(stderr, "pgtest: STRIKE_TEST_PG_HOST is not set (run through ctest, which "
                        "starts the PostgreSQL fixture)\n");
        abort();
    }
    char ci[512];
    snprintf(ci, sizeof ci, "host=%s port=5432 user=postgres dbname=postgres", host);
    PGconn *c = PQconnectdb(ci);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "pgtest: cannot reach the fixture: %s", PQerrorMessage(c));
        abort();
    }
    char sql[256];
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", name);
    PQclear(PQexec(c, sql));
    snprintf(sql, sizeof sql, "CREATE DATABASE %s TEMPLATE template0", name);
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        fprintf(stderr, "pgtest: %s: %s", sql, PQresultErrorMessage(r));
        abort();
    }
    PQclear(r);
    PQfinish(c);
    char *out = malloc(512);
    snprintf(out, 512, "host=%s port=5432 user=postgres dbname=%s", host, name);
    return out;
}
