/* pgutil.c - binary array parameters and pipelines for libpq. */
#include "pgutil.h"
#include "catalog.h"

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
