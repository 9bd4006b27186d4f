/*
 * pgutil.h - libpq helpers of the engine: binary array parameters (one
 * `= ANY($1)` round trip for a whole batch of keys), pipelines (a
 * transaction's statements sent together, one network round trip), integer
 * values of parameters and results, BEGIN and ROLLBACK, binary COPY in
 * chunks.
 */
#ifndef STRIKE_PGUTIL_H
#define STRIKE_PGUTIL_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"

#define PG_OID_BYTEA 17
#define PG_OID_INT8 20
#define PG_OID_TEXT 25
#define PG_OID_TID 27

/* Binary array builder: pgu_array_begin, then exactly n pgu_array_* elements. */
void pgu_array_begin(struct buf *b, uint32_t elem_oid, uint32_t n);
void pgu_array_bytes(struct buf *b, const void *p, size_t len);
void pgu_array_null(struct buf *b);
void pgu_array_i64(struct buf *b, int64_t v);
/* A whole int8[] of v[0..n): pgu_array_begin and its n elements. */
void pgu_array_of_i64(struct buf *b, const int64_t *v, size_t n);
/* Set the element count of an array begun with count 0 (header bytes 12..15). */
void pgu_array_set_count(struct buf *b, uint32_t n);
/* Is b a one-dimensional binary array of exactly n elements and nothing after them? (asserts:
   the count an array's header declares is the count it holds) */
bool pgu_array_holds(const struct buf *b, uint32_t n);
/* Mark the array as holding nulls (call after the elements are written). */
void pgu_array_set_has_nulls(struct buf *b);

/* A pipeline of statements; results are kept in order. */
#define PGU_PIPE_MAX 64
struct pgu_pipe {
    PGconn *c;
    int n;
    PGresult *res[PGU_PIPE_MAX];
    int got; /* results collected so far (pgu_pipe_collect) */
    bool sent_ok;
};

/* Enter pipeline mode. */
int pgu_pipe_begin(struct pgu_pipe *p, PGconn *c, struct st_err *err);
/* Queue a statement. Parameters as PQsendQueryParams; results in text (0) or binary (1). */
int pgu_pipe_send(struct pgu_pipe *p, const char *sql, int nparams, const char *const *values,
                  const int *lengths, const int *formats, int result_format, struct st_err *err);
/* Queue a statement prepared on this connection (PQprepare) under `name`. */
int pgu_pipe_send_prepared(struct pgu_pipe *p, const char *name, int nparams,
                           const char *const *values, const int *lengths, const int *formats,
                           int result_format, struct st_err *err);
/*
 * Sync, collect every result, leave pipeline mode. Returns ST_OK when the
 * pipeline ran (statements may still have failed: check pgu_pipe_failed);
 * ST_EUNAVAIL when the connection broke (outcome of a COMMIT unknown).
 */
int pgu_pipe_run(struct pgu_pipe *p, struct st_err *err);
/*
 * pgu_pipe_run in two steps, to act on the first results while the server
 * works on the rest: pgu_pipe_sync sends the pipeline; pgu_pipe_collect
 * reads results up to statement `upto` (exclusive; p->n: all, and leave
 * pipeline mode). Failures as pgu_pipe_run's.
 */
int pgu_pipe_sync(struct pgu_pipe *p, struct st_err *err);
int pgu_pipe_collect(struct pgu_pipe *p, int upto, struct st_err *err);
/*
 * End a read pipeline: `rc` is the outcome of queueing its statements; if it
 * is ST_OK, queue `end` (COMMIT or ROLLBACK; NULL: none, the transaction
 * stays open), run, and check every statement. On ST_OK the results are in p->res; on any failure
 * they are cleared, the transaction is rolled back and the error says "during <what>".
 */
int pgu_pipe_finish(struct pgu_pipe *p, int rc, const char *end, const char *what,
                    struct st_err *err);
/* Index of the first statement that failed (not aborted-by-earlier), or -1. */
int pgu_pipe_failed(const struct pgu_pipe *p);
/* SQLSTATE of statement i, or "". */
const char *pgu_pipe_sqlstate(const struct pgu_pipe *p, int i);
void pgu_pipe_clear(struct pgu_pipe *p);

/* Text <-> integer for libpq parameters and text-format results. */
/*
 * Rows COPYed (binary) into a table, in chunks: pgu_copy_open, then per row
 * pgu_copy_row and its fields, pgu_copy_flush when the chunk is full (and
 * once at the end: rows still buffered are not sent), pgu_copy_free. One
 * parameter holding every row would grow with them, and past PostgreSQL's
 * 1 GB message limit could never be sent; a COPY of a chunk is bounded.
 */
struct pgu_copy {
    PGconn *c;
    const char *sql;  /* "COPY ... FROM STDIN (FORMAT binary)" (borrowed) */
    const char *what; /* for errors: "sending the deleted keys" (borrowed) */
    struct buf buf;   /* the stream, header included, not sent yet */
    size_t nbuf;      /* its rows */
    int64_t nsent;    /* rows COPYed so far */
};
void pgu_copy_open(struct pgu_copy *k, PGconn *c, const char *sql, const char *what);
void pgu_copy_row(struct pgu_copy *k, uint16_t nfields);
void pgu_copy_bytes(struct pgu_copy *k, const void *p, size_t len);
void pgu_copy_i64(struct pgu_copy *k, int64_t v);
void pgu_copy_null(struct pgu_copy *k);
int pgu_copy_flush(struct pgu_copy *k, struct st_err *err);
void pgu_copy_free(struct pgu_copy *k);

struct pgu_num {
    char s[24];
};
const char *pgu_i64(struct pgu_num *n, int64_t v);        /* n->s, for a parameter */
int64_t pgu_get_i64(const PGresult *r, int row, int col); /* NULL: 0 */
/* A bytea value of a text-format result, unescaped into *out (caller frees; NULL: *n = 0). */
int pgu_get_bytea(const PGresult *r, int row, int col, uint8_t **out, size_t *n,
                  struct st_err *err);
/* BEGIN (ST_OK or the mapped error); ROLLBACK unless the connection is idle (errors ignored). */
int pgu_begin(PGconn *c, struct st_err *err);
void pgu_rollback(PGconn *c);
/*
 * A text as a format() string (PostgreSQL's format, %n$s arguments) for a
 * statement that fills in values only it knows: '%' doubled, and the
 * decimal form of marks[k] (k < n <= 8; each must occur exactly once, and
 * should be a value no other part of the text can hold) replaced by
 * %<k+1>$s. The caller frees.
 */
char *pgu_format_template(const char *text, const int64_t *marks, int n);

static inline int64_t pgu_bin_i64(const PGresult *r, int row, int col)
{
    return (int64_t)ld_u64be((const uint8_t *)PQgetvalue(r, row, col));
}

#endif
