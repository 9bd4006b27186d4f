/* pgutil.c - binary array parameters, pipelines, values and transactions for libpq. */
#include "pgutil.h"
#include "catalog.h"

#include "common/xalloc.h"

#include <assert.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Layout: ndim, has-nulls flag, element oid, then per dimension (size, lower bound 1). */
void pgu_array_begin(struct buf *b, uint32_t elem_oid, uint32_t n)
{
    buf_put_u32be(b, 1);
    buf_put_u32be(b, 0);
    buf_put_u32be(b, elem_oid);
    buf_put_u32be(b, n);
    buf_put_u32be(b, 1);
}

void pgu_array_set_count(struct buf *b, uint32_t n)
{
    st_u32be(b->data + 12, n);
}

bool pgu_array_holds(const struct buf *b, uint32_t n)
{
    if (b->len < 20 || ld_u32be(b->data) != 1 || ld_u32be(b->data + 12) != n ||
        ld_u32be(b->data + 16) != 1)
        return false;
    size_t at = 20;
    uint32_t seen = 0;
    while (at + 4 <= b->len) {
        uint32_t len = ld_u32be(b->data + at);
        at += 4;
        if (len != 0xffffffffu) { /* -1: NULL, no bytes */
            if (len > b->len - at)
                return false;
            at += len;
        }
        seen++;
    }
    return at == b->len && seen == n;
}

void pgu_array_set_has_nulls(struct buf *b)
{
    st_u32be(b->data + 4, 1);
}

void pgu_array_bytes(struct buf *b, const void *p, size_t len)
{
    buf_put_u32be(b, (uint32_t)len);
    buf_append(b, p, len);
}

void pgu_array_null(struct buf *b)
{
    buf_put_u32be(b, 0xffffffffu);
}

void pgu_array_i64(struct buf *b, int64_t v)
{
    uint8_t t[8];
    buf_put_u32be(b, 8);
    st_u64be(t, (uint64_t)v);
    buf_append(b, t, 8);
}

void pgu_array_of_i64(struct buf *b, const int64_t *v, size_t n)
{
    pgu_array_begin(b, PG_OID_INT8, (uint32_t)n);
    for (size_t i = 0; i < n; i++)
        pgu_array_i64(b, v[i]);
}

int pgu_pipe_begin(struct pgu_pipe *p, PGconn *c, struct st_err *err)
{
    memset(p, 0, sizeof *p);
    p->c = c;
    if (PQenterPipelineMode(c) != 1)
        return cat_fail(c, NULL, "entering pipeline mode", err);
    return ST_OK;
}

int pgu_pipe_send(struct pgu_pipe *p, const char *sql, int nparams, const char *const *values,
                  const int *lengths, const int *formats, int result_format, struct st_err *err)
{
    if (p->n >= PGU_PIPE_MAX)
        return st_errf(err, ST_EINTERNAL, "pipeline longer than %d statements", PGU_PIPE_MAX);
    if (PQsendQueryParams(p->c, sql, nparams, NULL, values, lengths, formats, result_format) != 1)
        return cat_fail(p->c, NULL, "sending a statement", err);
    p->n++;
    return ST_OK;
}

int pgu_pipe_send_prepared(struct pgu_pipe *p, const char *name, int nparams,
                           const char *const *values, const int *lengths, const int *formats,
                           int result_format, struct st_err *err)
{
    if (p->n >= PGU_PIPE_MAX)
        return st_errf(err, ST_EINTERNAL, "pipeline longer than %d statements", PGU_PIPE_MAX);
    if (PQsendQueryPrepared(p->c, name, nparams, values, lengths, formats, result_format) != 1)
        return cat_fail(p->c, NULL, "sending a statement", err);
    p->n++;
    return ST_OK;
}

int pgu_pipe_sync(struct pgu_pipe *p, struct st_err *err)
{
    if (PQpipelineSync(p->c) != 1) {
        PQexitPipelineMode(p->c);
        return cat_fail(p->c, NULL, "sending the pipeline", err);
    }
    p->got = 0;
    return ST_OK;
}

int pgu_pipe_collect(struct pgu_pipe *p, int upto, struct st_err *err)
{
    if (p->sent_ok) /* every result and the sync are in: the pipeline has ended */
        return ST_OK;
    for (; p->got < upto && p->got < p->n; p->got++) {
        PGresult *r = cat_pq_get_result(p->c);
        if (r == NULL) {
            PQexitPipelineMode(p->c);
            return cat_fail(p->c, NULL, "reading pipeline results", err);
        }
        p->res[p->got] = r;
        /* each statement's results end with a NULL */
        PGresult *extra;
        while ((extra = cat_pq_get_result(p->c)) != NULL)
            PQclear(extra);
        if (PQstatus(p->c) != CONNECTION_OK) {
            p->got++;
            return st_errf(err, ST_EUNAVAIL, "catalog connection lost during a pipeline");
        }
    }
    if (p->got < p->n)
        return ST_OK;
    PGresult *sync = cat_pq_get_result(p->c);
    bool synced = sync != NULL && PQresultStatus(sync) == PGRES_PIPELINE_SYNC;
    PQclear(sync);
    if (!synced || PQexitPipelineMode(p->c) != 1)
        return cat_fail(p->c, NULL, "finishing the pipeline", err);
    p->sent_ok = true;
    return ST_OK;
}

int pgu_pipe_run(struct pgu_pipe *p, struct st_err *err)
{
    int rc = pgu_pipe_sync(p, err);
    return rc == ST_OK ? pgu_pipe_collect(p, p->n, err) : rc;
}

int pgu_pipe_finish(struct pgu_pipe *p, int rc, const char *end, const char *what,
                    struct st_err *err)
{
    if (rc == ST_OK && end != NULL)
        rc = pgu_pipe_send(p, end, 0, NULL, NULL, NULL, 0, err);
    if (rc != ST_OK) {
        PQexitPipelineMode(p->c);
        pgu_pipe_clear(p);
        return rc;
    }
    if ((rc = pgu_pipe_run(p, err)) != ST_OK) {
        pgu_pipe_clear(p);
        return rc;
    }
    int bad = pgu_pipe_failed(p);
    if (bad >= 0) {
        rc = cat_fail(p->c, p->res[bad], what, err);
        pgu_pipe_clear(p);
        if (PQtransactionStatus(p->c) != PQTRANS_IDLE)
            PQclear(cat_pq_exec(p->c, "ROLLBACK"));
        return rc;
    }
    return ST_OK;
}

int pgu_pipe_failed(const struct pgu_pipe *p)
{
    for (int i = 0; i < p->n; i++) {
        ExecStatusType s = PQresultStatus(p->res[i]);
        if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK)
            return i;
    }
    return -1;
}

const char *pgu_pipe_sqlstate(const struct pgu_pipe *p, int i)
{
    if (i < 0 || i >= p->n || p->res[i] == NULL)
        return "";
    const char *s = PQresultErrorField(p->res[i], PG_DIAG_SQLSTATE);
    return s ? s : "";
}

void pgu_pipe_clear(struct pgu_pipe *p)
{
    for (int i = 0; i < p->n; i++)
        PQclear(p->res[i]);
    memset(p->res, 0, sizeof p->res);
    p->n = p->got = 0;
}

/* ---- values and transactions ---------------------------------------------- */

const char *pgu_i64(struct pgu_num *n, int64_t v)
{
    snprintf(n->s, sizeof n->s, "%lld", (long long)v);
    return n->s;
}

int64_t pgu_get_i64(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        return 0;
    return strtoll(PQgetvalue(r, row, col), NULL, 10);
}

int pgu_get_bytea(const PGresult *r, int row, int col, uint8_t **out, size_t *n, struct st_err *err)
{
    *out = NULL;
    *n = 0;
    if (PQgetisnull(r, row, col))
        return ST_OK;
    size_t len = 0;
    unsigned char *p = PQunescapeBytea((const unsigned char *)PQgetvalue(r, row, col), &len);
    if (p == NULL)
        return st_errf(err, ST_EINTERNAL, "out of memory unescaping a bytea value");
    *out = xmalloc(len ? len : 1);
    memcpy(*out, p, len);
    PQfreemem(p);
    *n = len;
    return ST_OK;
}

/* ---- binary COPY ------------------------------------------------------------- */

static const uint8_t COPY_HEADER[19] = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', 0xff, '\r', '\n', 0};

void pgu_copy_open(struct pgu_copy *k, PGconn *c, const char *sql, const char *what)
{
    k->c = c;
    k->sql = sql;
    k->what = what;
    k->nbuf = 0;
    k->nsent = 0;
    buf_reset(&k->buf);
    buf_append(&k->buf, COPY_HEADER, sizeof COPY_HEADER);
}

void pgu_copy_row(struct pgu_copy *k, uint16_t nfields)
{
    assert(k->c != NULL);
    buf_put_u8(&k->buf, (uint8_t)(nfields >> 8));
    buf_put_u8(&k->buf, (uint8_t)nfields);
    k->nbuf++;
}

void pgu_copy_bytes(struct pgu_copy *k, const void *p, size_t len)
{
    assert(len <= INT32_MAX);
    buf_put_u32be(&k->buf, (uint32_t)len);
    buf_append(&k->buf, p, len);
}

void pgu_copy_i64(struct pgu_copy *k, int64_t v)
{
    buf_put_u32be(&k->buf, 8);
    st_u64be(buf_extend(&k->buf, 8), (uint64_t)v);
}

void pgu_copy_null(struct pgu_copy *k)
{
    buf_put_u32be(&k->buf, UINT32_MAX); /* a length of -1 */
}

int pgu_copy_flush(struct pgu_copy *k, struct st_err *err)
{
    if (k->nbuf == 0)
        return ST_OK;
    buf_put_u8(&k->buf, 0xff); /* the trailer: a field count of -1 */
    buf_put_u8(&k->buf, 0xff);
    /* Not cat_pq_exec: it collects results until the last, and COPY IN yields
       PGRES_COPY_IN until the data has been sent. One bounded wait for it. */
    PGresult *r = PQsendQuery(k->c, k->sql) == 1 ? cat_pq_get_result(k->c) : NULL;
    int rc = ST_OK;
    if (PQresultStatus(r) != PGRES_COPY_IN) {
        rc = cat_fail(k->c, r, k->what, err);
        bool answered = r != NULL;
        PQclear(r);
        while (answered && (r = cat_pq_get_result(k->c)) != NULL) /* the rest of its results */
            PQclear(r);
        return rc;
    }
    PQclear(r);
    if (PQputCopyData(k->c, (const char *)k->buf.data, (int)k->buf.len) != 1 ||
        PQputCopyEnd(k->c, NULL) != 1)
        rc = cat_fail(k->c, NULL, k->what, err);
    /* cat_pq_get_result flushes what PQputCopyData queued (the connection is
       non-blocking) and waits for the answer, bounded like every catalog call. */
    while ((r = cat_pq_get_result(k->c)) != NULL) {
        if (rc == ST_OK && PQresultStatus(r) != PGRES_COMMAND_OK)
            rc = cat_fail(k->c, r, k->what, err);
        PQclear(r);
    }
    if (rc == ST_OK && PQstatus(k->c) != CONNECTION_OK)
        rc = cat_fail(k->c, NULL, k->what, err);
    k->nsent += (int64_t)k->nbuf;
    k->nbuf = 0;
    buf_reset(&k->buf);
    buf_append(&k->buf, COPY_HEADER, sizeof COPY_HEADER);
    return rc;
}

void pgu_copy_free(struct pgu_copy *k)
{
    buf_free(&k->buf);
    k->c = NULL;
}

int pgu_begin(PGconn *c, struct st_err *err)
{
    return cat_exec(c, "BEGIN", "begin", err);
}

void pgu_rollback(PGconn *c)
{
    if (PQtransactionStatus(c) != PQTRANS_IDLE)
        PQclear(cat_pq_exec(c, "ROLLBACK"));
}

/* ---- format() templates ---------------------------------------------------- */

char *pgu_format_template(const char *text, const int64_t *marks, int n)
{
    char digits[8][24];
    assert(n > 0 && n <= 8);
    for (int k = 0; k < n; k++)
        snprintf(digits[k], sizeof digits[k], "%lld", (long long)marks[k]);
    struct buf b = BUF_INIT;
    int seen[8] = {0};
    for (const char *p = text; *p != '\0';) {
        int hit = -1;
        bool digit_before = p > text && p[-1] >= '0' && p[-1] <= '9';
        for (int k = 0; k < n && hit < 0 && !digit_before; k++) {
            size_t len = strlen(digits[k]);
            if (strncmp(p, digits[k], len) == 0 && !(p[len] >= '0' && p[len] <= '9'))
                hit = k; /* the whole number, not digits of another */
        }
        if (hit >= 0) {
            char ph[8];
            int len = snprintf(ph, sizeof ph, "%%%d$s", hit + 1);
            buf_append(&b, ph, (size_t)len);
            p += strlen(digits[hit]);
            seen[hit]++;
        } else {
            if (*p == '%')
                buf_put_u8(&b, '%');
            buf_put_u8(&b, (uint8_t)*p++);
        }
    }
    for (int k = 0; k < n; k++)
        assert(seen[k] == 1); /* each mark stands for exactly one value of the text */
    buf_put_u8(&b, 0);
    return (char *)b.data;
}
