/*
 * service_cdc.c - POST /v1/cdc/debezium and its gRPC twin (service.h
 * svc_cdc_apply): Debezium events routed to tables and committed exactly
 * once by their source position.
 *
 * Two phases. Check: decode the body (cdc.c), route every event to a
 * table, check the token's write scope on it, look each table up, convert every value to its
 * column's type and build every change; any refusal here answers 4xx with nothing committed.
 * Commit: per table, in the order the body first names the tables, the
 * table's events cut into segments: a run of events of one producer (or of
 * none: no position) and each truncate alone. A segment with a producer
 * reads the producer's stored offset first and drops the events at or
 * before it, or at or before an earlier event of the run (duplicates), then
 * commits what is left as one change request whose offset is its highest
 * position: the engine stores it in the same commit as the rows, and
 * answers a request at or before the stored offset as a duplicate, so that
 * a concurrent resend of the same events still applies once.
 *
 * The producer is `source.name` "/" the source table ("dbserver1/
 * inventory.customers"); events without source.name or without a position
 * apply at least once (the table's version column, if any, keeps the newest
 * row). PostgreSQL events with source.sequence stand at a pair (the commit
 * LSN before their transaction, the position), kept as two offsets:
 * PRODUCER@tx, the engine's checked offset, and PRODUCER@lsn, recorded with
 * it (change_req.mark_producer); see ppos_req for the one case without the
 * engine's check.
 */
#include "auth.h"
#include "service.h"

#include "cdc.h"
#include "common/jdoc.h"
#include "common/xalloc.h"
#include "expr/filter.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A producer's name, at most: room left for the "@lsn" of PostgreSQL's second offset. */
#define CDC_PRODUCER_MAX (ENGINE_PRODUCER_MAX - 4)

/* Tables one body may name, at most (each is looked up before anything commits). */
#define CDC_TABLES_MAX 256

struct cevent {
    const struct cdc_event *ev;
    struct wire_change wire;
    char producer[CDC_PRODUCER_MAX + 1]; /* "" : none (no position, or no source.name) */
    size_t first, nch;                   /* its changes in the segment's changeset */
};

struct seg {
    size_t from, to; /* events [from, to) of the group */
    bool truncate;
    struct changeset cs;
};

struct group {
    struct engine_table *t;
    struct cevent *ev;
    size_t n, cap;
    struct seg *segs;
    size_t nsegs;
    struct svc_cdc_table *res;
    bool committed; /* res->seq is the seq of a commit of this request */
};

void svc_cdc_res_clear(struct svc_cdc_res *r)
{
    free(r->tables);
    memset(r, 0, sizeof *r);
}

/* The route of an event: ?table=, else the first --cdc-route matching db.schema.table,
   schema.table, db.table or table (in that order), else the source table's own name. */
static const char *route_of(const struct svc_cdc_req *q, const struct cdc_event *e)
{
    if (q->table != NULL)
        return q->table;
    if (e->table == NULL)
        return NULL;
    char cand[4][800];
    int nc = 0;
    if (e->db != NULL && e->schema != NULL)
        snprintf(cand[nc++], sizeof cand[0], "%.255s.%.255s.%.255s", e->db, e->schema, e->table);
    if (e->schema != NULL)
        snprintf(cand[nc++], sizeof cand[0], "%.255s.%.255s", e->schema, e->table);
    if (e->db != NULL)
        snprintf(cand[nc++], sizeof cand[0], "%.255s.%.255s", e->db, e->table);
    snprintf(cand[nc++], sizeof cand[0], "%.255s", e->table);
    for (int i = 0; i < nc; i++)
        for (size_t r = 0; r < q->nroutes; r++)
            if (strcmp(q->routes[r].source, cand[i]) == 0)
                return q->routes[r].table;
    return e->table;
}

static const char *src_of(const struct cdc_event *e)
{
    return e->source != NULL ? e->source : "no source table";
}

/* Column `name` of t, looked for at `hint` first (Debezium sends the source's column order). */
static int column_at(const struct engine_table *t, const char *name, size_t hint)
{
    if (hint < (size_t)t->ncols && strcmp(t->cols[hint].name, name) == 0)
        return (int)hint;
    return engine_table_column(t, name);
}

/* One image's fields converted for t's columns into `o` (arrays from the batch's arena). */
static int convert_image(struct jdoc *arena, const struct engine_table *t,
                         const struct cdc_event *e, const struct cdc_image *img, const char *which,
                         struct wire_obj *o, struct st_err *err)
{
    memset(o, 0, sizeof *o);
    if (!img->present)
        return ST_OK;
    struct st_literal *lits = jdoc_alloc(arena, (img->n ? img->n : 1) * sizeof *lits);
    for (size_t i = 0; i < img->n; i++) {
        lits[i] = img->lits[i];
        if (img->logical[i] == CDC_L_NONE && img->lits[i].kind != LIT_STRING)
            continue; /* nothing to convert: the changeset coerces it */
        int col = column_at(t, img->names[i], i);
        if (col < 0)
            continue; /* the changeset names it (an unknown column of after, a before's non-key) */
        struct st_err ve = {0};
        if (cdc_value(&img->lits[i], (enum cdc_logical)img->logical[i], t->cols[col].type, &lits[i],
                      &ve) != ST_OK)
            return st_errf(err, ST_EINVAL, "event %zu (%.200s): %s.%s: %s", e->index, src_of(e),
                           which, img->names[i], ve.msg);
    }
    o->present = true;
    o->n = img->n;
    o->names = img->names;
    o->lits = lits;
    return ST_OK;
}

/* changeset_build's "row K: ..." as "event I (source): ..." */
static int rename_row_error(const struct group *g, const struct seg *s, int rc, struct st_err *err)
{
    size_t k;
    int used = 0;
    if (sscanf(err->msg, "row %zu: %n", &k, &used) == 1 && used > 0 && s->from + k < s->to) {
        const struct cdc_event *e = g->ev[s->from + k].ev;
        char rest[ST_ERR_MSG_MAX];
        snprintf(rest, sizeof rest, "%s", err->msg + used);
        st_err_clear(err);
        return st_errf(err, rc, "event %zu (%.200s): %s", e->index, src_of(e), rest);
    }
    return rc;
}

/* Build the segment's changes and note which changes each event became. */
static int build_seg(struct group *g, struct seg *s, struct st_err *err)
{
    if (s->truncate)
        return ST_OK;
    size_t n = s->to - s->from;
    struct wire_change *w = xcalloc(n ? n : 1, sizeof *w);
    for (size_t i = 0; i < n; i++)
        w[i] = g->ev[s->from + i].wire;
    int rc = changeset_build(g->t, w, n, &s->cs, err);
    free(w);
    if (rc != ST_OK)
        return rename_row_error(g, s, rc, err);
    /* each event is one change, but a "u" whose key changed is a delete then an upsert */
    size_t c = 0;
    for (size_t i = s->from; i < s->to; i++) {
        struct cevent *ce = &g->ev[i];
        ce->first = c;
        ce->nch =
            ce->ev->op == 'u' && c + 1 < s->cs.n && s->cs.changes[c].op == ENGINE_CHANGE_DELETE ? 2
                                                                                                : 1;
        c += ce->nch;
    }
    return c == s->cs.n ? ST_OK : st_errf(err, ST_EINTERNAL, "cdc: changes do not add up");
}

/* ---- commit ------------------------------------------------------------------------ */

static void add_counts(struct group *g, const struct engine_change_res *c)
{
    struct svc_cdc_table *r = g->res;
    g->committed = true;
    r->seq = c->seq;
    r->inserted += c->inserted;
    r->updated += c->updated;
    r->deleted += c->deleted;
}

/*
 * Where a producer stands. Without `tx`: its one offset, the position. With
 * `tx` (PostgreSQL with source.sequence): the pair (commit LSN before the
 * transaction, position), kept as two producer offsets, NAME@tx and NAME@lsn.
 */
struct ppos {
    bool tx;
    bool has;
    int64_t txpos, pos;
    char name[ENGINE_PRODUCER_MAX + 1];     /* NAME, or NAME@tx */
    char lsn_name[ENGINE_PRODUCER_MAX + 1]; /* NAME@lsn */
};

static int ppos_read(struct engine *e, const struct engine_table *t, const struct cevent *ce,
                     struct ppos *p, struct st_err *err)
{
    memset(p, 0, sizeof *p);
    p->tx = ce->ev->has_txpos;
    if (!p->tx) {
        snprintf(p->name, sizeof p->name, "%s", ce->producer);
        return engine_producer_offset(e, t, p->name, &p->has, &p->pos, err);
    }
    snprintf(p->name, sizeof p->name, "%s@tx", ce->producer);
    snprintf(p->lsn_name, sizeof p->lsn_name, "%s@lsn", ce->producer);
    const char *names[2] = {p->name, p->lsn_name};
    bool has[2];
    int64_t off[2];
    int rc = engine_producer_offsets(e, t, names, 2, has, off, err);
    p->has = has[0];
    p->txpos = off[0];
    p->pos = has[1] ? off[1] : -1;
    return rc;
}

/* Is the event at or before where the producer stands? */
static bool ppos_dup(const struct ppos *p, const struct cdc_event *ev)
{
    if (!p->has)
        return false;
    if (p->tx)
        return ev->txpos < p->txpos || (ev->txpos == p->txpos && ev->pos <= p->pos);
    return ev->pos <= p->pos;
}

static void ppos_take(struct ppos *p, const struct cdc_event *ev)
{
    p->has = true;
    p->txpos = ev->txpos;
    p->pos = ev->pos;
}

/*
 * The offsets of a request that brings the producer from `from` to `to`.
 * With `tx`, NAME@tx is the engine's checked offset only when the request
 * reaches a later transaction (an offset equal to the stored one would be a
 * duplicate); a request within the transaction where the producer stands
 * records NAME@lsn alone, unchecked (two such deliveries at once both apply:
 * the same events, in the same order).
 */
static void ppos_req(struct engine_change_req *req, const struct ppos *from, const struct ppos *to)
{
    if (!to->tx) {
        req->producer = to->name;
        req->has_offset = true;
        req->offset = to->pos;
        return;
    }
    req->mark_producer = to->lsn_name;
    req->mark_offset = to->pos;
    if (!from->has || to->txpos > from->txpos) {
        req->producer = to->name;
        req->has_offset = true;
        req->offset = to->txpos;
    }
}

static int commit_changes(struct engine *e, struct group *g, struct seg *s, struct st_err *err)
{
    const struct cevent *first = &g->ev[s->from];
    struct engine_change_req req = {.table = g->t};
    struct engine_change *kept = NULL;
    struct ppos from, to; /* the request's producer names point into `to` */
    size_t nkept = 0, nev = 0;
    int rc;
    if (first->producer[0] == '\0') {
        req.changes = s->cs.changes;
        req.nchanges = s->cs.n;
        nev = s->to - s->from;
    } else {
        if ((rc = ppos_read(e, g->t, first, &from, err)) != ST_OK)
            return rc;
        to = from;
        kept = xcalloc(s->cs.n ? s->cs.n : 1, sizeof *kept);
        for (size_t i = s->from; i < s->to; i++) {
            const struct cevent *ce = &g->ev[i];
            if (ppos_dup(&to, ce->ev)) {
                g->res->duplicates++;
                continue;
            }
            ppos_take(&to, ce->ev);
            memcpy(kept + nkept, s->cs.changes + ce->first, ce->nch * sizeof *kept);
            nkept += ce->nch;
            nev++;
        }
        if (nev == 0) {
            free(kept);
            return ST_OK;
        }
        req.changes = kept;
        req.nchanges = nkept;
        ppos_req(&req, &from, &to);
    }
    struct engine_change_res res;
    rc = engine_apply_changes(e, &req, &res, err);
    free(kept);
    if (rc != ST_OK)
        return rc;
    if (res.duplicate) /* a concurrent delivery of the same events committed first */
        g->res->duplicates += (int64_t)nev;
    add_counts(g, &res);
    return ST_OK;
}

/* A truncate: every row deleted, then its position recorded (an empty change request). */
static int commit_truncate(struct engine *e, struct group *g, struct seg *s, struct st_err *err)
{
    const struct cevent *ce = &g->ev[s->from];
    struct ppos from, to;
    int rc;
    if (ce->producer[0] != '\0') {
        if ((rc = ppos_read(e, g->t, ce, &from, err)) != ST_OK)
            return rc;
        if (ppos_dup(&from, ce->ev)) {
            g->res->duplicates++;
            return ST_OK;
        }
    }
    struct filter *f = NULL;
    if ((rc = filter_parse("true", 4, g->t->cols, g->t->ncols, &f, err)) != ST_OK)
        return rc;
    struct engine_delete_res dr;
    rc = engine_delete_where(e, g->t, f, false, 0, NULL, &dr, err);
    filter_free(f);
    if (rc != ST_OK)
        return rc;
    g->res->deleted += dr.deleted;
    g->res->seq = dr.seq;
    g->committed = true;
    if (ce->producer[0] == '\0')
        return ST_OK;
    /* Not atomic with the delete: a crash between the two re-runs the truncate on a resend,
       which finds the rows it deleted gone and the later events not yet applied. */
    to = from;
    ppos_take(&to, ce->ev);
    struct engine_change_req req = {.table = g->t};
    ppos_req(&req, &from, &to);
    struct engine_change_res res;
    if ((rc = engine_apply_changes(e, &req, &res, err)) == ST_OK)
        g->res->seq = res.seq;
    return rc;
}

/* ---- check ------------------------------------------------------------------------- */

/*
 * The group of the table `name`, looked up on its first event. The token's
 * write scope on the table is checked before the lookup: a table the token
 * may not write is 403 whether it exists or not, and its columns are never
 * compared with the event (docs/API.md "Auth": nothing is read from the
 * catalog before the check).
 */
static struct group *group_for(struct engine *e, const struct svc_cdc_req *q, struct group *gs,
                               size_t *ng, const char *name, const struct cdc_event *ev, int *rc,
                               struct st_err *err)
{
    for (size_t i = 0; i < *ng; i++)
        if (strcmp(gs[i].t->name, name) == 0)
            return &gs[i];
    if (*ng == CDC_TABLES_MAX) {
        *rc = st_errf(err, ST_EINVAL, "event %zu (%.200s): the body names more than %d tables",
                      ev->index, src_of(ev), CDC_TABLES_MAX);
        return NULL;
    }
    if (!st_name_valid(name)) {
        *rc = st_errf(err, ST_EINVAL,
                      "event %zu (%.200s): source table \"%.128s\" is not a valid table name "
                      "([A-Za-z_][A-Za-z0-9_]{0,127}); map it with --cdc-route SOURCE=TABLE or "
                      "?table=",
                      ev->index, src_of(ev), name);
        return NULL;
    }
    if (q->auth != NULL && (*rc = auth_check_table(q->auth, name, AUTH_WRITE, err)) != ST_OK)
        return NULL;
    struct engine_table *t = NULL;
    struct st_err te = {0};
    *rc = engine_get_table_cached(e, name, &t, &te);
    if (*rc == ST_ENOTFOUND) {
        *rc = st_errf(err, ST_ENOTFOUND,
                      "event %zu (%.200s): table \"%s\" does not exist (create it, or map the "
                      "source table with --cdc-route SOURCE=TABLE or ?table=)",
                      ev->index, src_of(ev), name);
        return NULL;
    }
    if (*rc != ST_OK) {
        st_errf(err, *rc, "%s", te.msg);
        return NULL;
    }
    struct group *g = &gs[(*ng)++];
    memset(g, 0, sizeof *g);
    g->t = t;
    return g;
}

static void push_cevent(struct group *g, const struct cdc_event *ev)
{
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 16;
        g->ev = xreallocarray(g->ev, g->cap, sizeof *g->ev);
    }
    struct cevent *ce = &g->ev[g->n++];
    memset(ce, 0, sizeof *ce);
    ce->ev = ev;
}

/* The event's producer ("" : none), checked as the engine checks producers. */
static int producer_of(struct cevent *ce, struct st_err *err)
{
    const struct cdc_event *ev = ce->ev;
    ce->producer[0] = '\0';
    if (!ev->has_pos || ev->name == NULL || ev->source == NULL)
        return ST_OK;
    int n = snprintf(ce->producer, sizeof ce->producer, "%s/%s", ev->name, ev->source);
    if (n < 0 || (size_t)n >= sizeof ce->producer)
        return st_errf(err, ST_EINVAL,
                       "event %zu (%.200s): source.name and the source table make a producer "
                       "longer than %d bytes",
                       ev->index, src_of(ev), CDC_PRODUCER_MAX);
    return ST_OK;
}

/* Cut the group's events into segments (see the head of this file). */
static void segment(struct group *g)
{
    g->segs = xcalloc(g->n ? g->n : 1, sizeof *g->segs);
    for (size_t i = 0; i < g->n; i++) {
        bool trunc = g->ev[i].ev->op == 't';
        struct seg *last = g->nsegs ? &g->segs[g->nsegs - 1] : NULL;
        if (last != NULL && !trunc && !last->truncate &&
            strcmp(g->ev[last->from].producer, g->ev[i].producer) == 0 &&
            g->ev[last->from].ev->has_txpos == g->ev[i].ev->has_txpos) {
            last->to = i + 1;
            continue;
        }
        g->segs[g->nsegs++] = (struct seg){.from = i, .to = i + 1, .truncate = trunc};
    }
}

static void groups_free(struct group *gs, size_t ng)
{
    for (size_t i = 0; i < ng; i++) {
        for (size_t s = 0; s < gs[i].nsegs; s++)
            changeset_free(&gs[i].segs[s].cs);
        free(gs[i].segs);
        free(gs[i].ev);
        engine_table_unref(gs[i].t);
    }
    free(gs);
}

int svc_cdc_apply(struct engine *e, const struct svc_cdc_req *q, struct svc_cdc_res *out,
                  struct st_err *err)
{
    memset(out, 0, sizeof *out);
    if (q->table != NULL && !st_name_valid(q->table))
        return st_errf(err, ST_EINVAL,
                       "table: \"%.128s\" is not a valid table name ([A-Za-z_][A-Za-z0-9_]{0,127})",
                       q->table);
    struct cdc_batch b;
    int rc = cdc_decode(q->body, q->len, q->content_type, &b, err);
    if (rc != ST_OK)
        return rc;
    if (b.n == 0) {
        out->no_change = true;
        cdc_batch_free(&b);
        return ST_OK;
    }
    struct jdoc *arena = b.docs[0]; /* the converted values live as long as the batch */
    struct group *gs = xcalloc(CDC_TABLES_MAX, sizeof *gs);
    size_t ng = 0;
    /* check: route, look up, convert and build everything before any commit */
    for (size_t i = 0; i < b.n && rc == ST_OK; i++) {
        const struct cdc_event *ev = &b.ev[i];
        const char *name = route_of(q, ev);
        if (name == NULL) {
            rc = st_errf(err, ST_EINVAL,
                         "event %zu: source.table: required to route the event (or give ?table=)",
                         ev->index);
            break;
        }
        struct group *g = group_for(e, q, gs, &ng, name, ev, &rc, err);
        if (g == NULL)
            break;
        push_cevent(g, ev);
        struct cevent *ce = &g->ev[g->n - 1];
        static const char *const ops[] = {"c", "r", "u", "d"};
        const char *op = strchr("crud", ev->op) ? ops[strchr("crud", ev->op) - "crud"] : "t";
        ce->wire.op = op;
        if ((rc = producer_of(ce, err)) == ST_OK &&
            (rc = convert_image(arena, g->t, ev, &ev->before, "before", &ce->wire.before, err)) ==
                ST_OK)
            rc = convert_image(arena, g->t, ev, &ev->after, "after", &ce->wire.after, err);
    }
    for (size_t i = 0; i < ng && rc == ST_OK; i++) {
        segment(&gs[i]);
        for (size_t s = 0; s < gs[i].nsegs && rc == ST_OK; s++)
            rc = build_seg(&gs[i], &gs[i].segs[s], err);
    }
    if (rc == ST_OK) {
        out->tables = xcalloc(ng, sizeof *out->tables);
        out->n = ng;
        for (size_t i = 0; i < ng; i++) {
            gs[i].res = &out->tables[i];
            snprintf(gs[i].res->name, sizeof gs[i].res->name, "%s", gs[i].t->name);
            gs[i].res->seq = gs[i].t->seq;
        }
    }
    /* commit: per table; a failure leaves the tables before it committed (a resend finds
       their events at or before their positions: duplicates) */
    for (size_t i = 0; i < ng && rc == ST_OK; i++) {
        struct group *g = &gs[i];
        for (size_t s = 0; s < g->nsegs && rc == ST_OK; s++)
            rc = g->segs[s].truncate ? commit_truncate(e, g, &g->segs[s], err)
                                     : commit_changes(e, g, &g->segs[s], err);
    }
    /* a table that only saw duplicates answers its current seq (the cached one may lag) */
    for (size_t i = 0; i < ng && rc == ST_OK; i++) {
        struct engine_table *fresh = NULL;
        if (gs[i].committed || (rc = engine_get_table(e, gs[i].t->name, &fresh, err)) != ST_OK)
            continue;
        gs[i].res->seq = fresh->seq;
        engine_table_unref(fresh);
    }
    groups_free(gs, ng);
    cdc_batch_free(&b);
    if (rc != ST_OK)
        svc_cdc_res_clear(out);
    return rc;
}
