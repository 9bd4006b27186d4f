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

/* A column of the source as the body's events say it (see plan_field). */
struct learned {
    const char *name;  /* borrowed from the batch */
    enum st_type type; /* 0: not known */
    bool typed;        /* from a schema */
};

/* A producer's name, at most: room left for the "@lsn" of PostgreSQL's second offset. */
#define CDC_PRODUCER_MAX (ENGINE_PRODUCER_MAX - 4)

/* Tables one body may name, at most (each is looked up before anything commits). */
#define CDC_TABLES_MAX 256

/* An event of a group: 32 bytes (a body may hold 100,000 of them; see build_seg for its wire). */
struct cevent {
    const struct cdc_event *ev; /* its values converted for the table (convert_image) */
    const char *producer;       /* "" : none (no position, or no source.name); in the arena */
    size_t first, nch;          /* its changes in the segment's changeset */
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
    const char *last_producer; /* the producer of the group's last event with one */
    struct seg *segs;
    size_t nsegs;
    struct svc_cdc_table *res;
    bool committed; /* res->seq is the seq of a commit of this request */
    /* the source's schema as the body says it, and what it asks of the table (--cdc-schema) */
    struct learned *lf;
    size_t nlf, caplf;
    struct engine_schema_change *alter; /* in the order the body asks for them */
    size_t nalter, capalter;
    struct engine_table *virt; /* t as the alter leaves it (NULL: no alter): checks before it */
    int64_t ignored;           /* values dropped (ignore-new) */
};

enum svc_cdc_schema svc_cdc_schema_of(const char *name)
{
    if (name != NULL && strcmp(name, "refuse") == 0)
        return SVC_CDC_REFUSE;
    if (name != NULL && strcmp(name, "ignore-new") == 0)
        return SVC_CDC_IGNORE_NEW;
    return SVC_CDC_EVOLVE;
}

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

/*
 * One image's fields converted for t's columns, in place: the batch is this
 * request's, and each event goes to one table, so its literals become the
 * values its changes take (no second array per image).
 */
static int convert_image(const struct engine_table *t, const struct cdc_event *e,
                         struct cdc_image *img, const char *which, struct st_err *err)
{
    for (size_t i = 0; img->present && i < img->n; i++) {
        if (img->logical[i] == CDC_L_NONE && img->lits[i].kind != LIT_STRING)
            continue; /* nothing to convert: the changeset coerces it */
        int col = column_at(t, img->names[i], i);
        if (col < 0)
            continue; /* the changeset names it (an unknown column of after, a before's non-key) */
        struct st_err ve = {0};
        struct st_literal in = img->lits[i];
        if (cdc_value(&in, (enum cdc_logical)img->logical[i], t->cols[col].type, &img->lits[i],
                      &ve) != ST_OK)
            return st_errf(err, ST_EINVAL, "event %zu (%.200s): %s.%s: %s", e->index, src_of(e),
                           which, img->names[i], ve.msg);
    }
    return ST_OK;
}

/* An image as the changeset takes it (borrowed from the batch). */
static struct wire_obj wire_of(const struct cdc_image *img)
{
    if (!img->present)
        return (struct wire_obj){0};
    return (struct wire_obj){.present = true, .n = img->n, .names = img->names, .lits = img->lits};
}

/* The op a changeset takes for a Debezium op ('t' is committed apart, never built). */
static const char *wire_op(char op)
{
    switch (op) {
    case 'c':
        return "c";
    case 'r':
        return "r";
    case 'u':
        return "u";
    case 'd':
        return "d";
    default:
        return "t";
    }
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

/* Build the segment's changes and note which changes each event became (the wire changes
   are made here, from the converted events, and gone once the changeset is built). */
static int build_seg(struct group *g, struct seg *s, struct st_err *err)
{
    if (s->truncate)
        return ST_OK;
    size_t n = s->to - s->from;
    struct wire_change *w = xcalloc(n ? n : 1, sizeof *w);
    for (size_t i = 0; i < n; i++) {
        const struct cdc_event *ev = g->ev[s->from + i].ev;
        w[i] = (struct wire_change){
            .op = wire_op(ev->op), .before = wire_of(&ev->before), .after = wire_of(&ev->after)};
    }
    int rc = changeset_build(g->virt != NULL ? g->virt : g->t, w, n, &s->cs, err);
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

static void virt_free(struct engine_table *v);

/* Do the table's columns hold the ones the rows were checked against (virt), as they were? */
static bool holds_columns(const struct engine_table *t, const struct engine_table *virt)
{
    for (int c = 0; c < virt->ncols; c++) {
        int k = engine_table_column(t, virt->cols[c].name);
        if (k < 0 || t->cols[k].type != virt->cols[c].type ||
            (t->cols[k].required && !virt->cols[c].required))
            return false;
    }
    return true;
}

/*
 * The source's schema change, committed ahead of the table's rows (its own
 * commit: see docs/API.md "CDC schema changes" for why a crash between the
 * two loses nothing), then the rows built again against the table it left.
 * A concurrent change of the schema (the same events delivered twice at
 * once) is fine when it left the columns the rows need.
 */
static int commit_alter(struct engine *e, struct group *g, struct st_err *err)
{
    struct engine_alter_req q = {.table = g->t->name,
                                 .changes = g->alter,
                                 .nchanges = g->nalter,
                                 .has_expected_schema_id = true,
                                 .expected_schema_id = g->t->schema_id};
    struct engine_table *nt = NULL;
    bool replayed = false;
    struct st_err ae = {0};
    int rc = engine_alter_table(e, &q, &nt, &replayed, &ae);
    if (rc == ST_ECONFLICT) {
        if ((rc = engine_get_table(e, g->t->name, &nt, err)) != ST_OK)
            return rc;
        if (!holds_columns(nt, g->virt)) {
            engine_table_unref(nt);
            return st_errf(err, ST_ECONFLICT,
                           "table \"%s\": its schema changed while this body was checked (%s); "
                           "send it again",
                           g->t->name, ae.msg);
        }
    } else if (rc != ST_OK) {
        return st_errf(err, rc, "table \"%s\": the source's schema change: %s", g->t->name, ae.msg);
    } else {
        g->res->schema_changes += (int64_t)g->nalter;
        g->res->seq = nt->seq;
        g->committed = true;
    }
    engine_table_unref(g->t);
    g->t = nt;
    virt_free(g->virt);
    g->virt = NULL;
    for (size_t s = 0; s < g->nsegs; s++) {
        changeset_free(&g->segs[s].cs);
        if ((rc = build_seg(g, &g->segs[s], err)) != ST_OK)
            return rc;
    }
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

/* ---- the source's schema (--cdc-schema; docs/API.md "CDC schema changes") ----------
 *
 * Every field of an after image (and every column of a schema-change event)
 * is compared with the table: a field the table lacks is a new column; a
 * source type the column holds as it is (an int into a long column: tables
 * are often made wider than their source) changes nothing; a long into an
 * int column is a widening; anything else is an incompatible change, and so
 * is a primary-key column retyped or gone, or a source column's type
 * narrowed between two events of the body. Under evolve the table's
 * changes are planned (g->alter) and the table they leave (g->virt) checks
 * and builds the rows before anything commits; the alter commits first, in
 * commit_group.
 */

static const char *tname(enum st_type t)
{
    const char *n = st_type_name(t);
    return n != NULL ? n : "unknown";
}

/* Does a source value of type `src` go into a column of type `col` as it is? */
static bool type_fits(enum st_type src, enum st_type col)
{
    if (src == col)
        return true;
    switch (src) {
    case ST_T_INT:
        return col == ST_T_LONG || col == ST_T_DOUBLE || col == ST_T_TIMESTAMP;
    case ST_T_LONG:
        return col == ST_T_DOUBLE || col == ST_T_TIMESTAMP;
    case ST_T_STRING: /* a decimal as a string, an ISO 8601 timestamp */
        return col == ST_T_DOUBLE || col == ST_T_TIMESTAMP;
    case ST_T_TIMESTAMP: /* a Debezium time as micros, millis, days or a string */
        return col == ST_T_LONG || col == ST_T_INT || col == ST_T_STRING;
    default:
        return false;
    }
}

/* Iceberg's widenings that strike has (no float nor decimal): int -> long. */
static bool type_widens(enum st_type src, enum st_type col)
{
    return src == ST_T_LONG && col == ST_T_INT;
}

static bool is_pk(const struct engine_table *t, int col)
{
    for (int k = 0; k < t->npk; k++)
        if (t->pk[k] == col)
            return true;
    return false;
}

static struct engine_schema_change *planned(struct group *g, enum engine_schema_op op,
                                            const char *name)
{
    for (size_t i = 0; i < g->nalter; i++) {
        struct engine_schema_change *c = &g->alter[i];
        const char *n = op == ENGINE_SCHEMA_ADD ? c->col.name : c->column;
        if (c->op == op && strcmp(n, name) == 0)
            return c;
    }
    return NULL;
}

static int plan(struct group *g, const struct cdc_event *ev, struct engine_schema_change c,
                struct st_err *err)
{
    if (g->nalter == ENGINE_SCHEMA_CHANGES_MAX)
        return st_errf(err, ST_EINVAL,
                       "event %zu (%.200s): the source changes more than %d columns of table "
                       "\"%s\" in one body",
                       ev->index, src_of(ev), ENGINE_SCHEMA_CHANGES_MAX, g->t->name);
    if (g->nalter == g->capalter) {
        g->capalter = g->capalter ? 2 * g->capalter : 8;
        g->alter = xreallocarray(g->alter, g->capalter, sizeof *g->alter);
    }
    g->alter[g->nalter++] = c;
    return ST_OK;
}

/* The body's source schema: a field's type checked against what an earlier event said. */
static int learn(struct group *g, const struct cdc_event *ev, const char *name, size_t hint,
                 enum st_type type, bool typed, struct st_err *err)
{
    if (type == 0 || !typed)
        return ST_OK;
    for (size_t k = 0; k <= g->nlf; k++) {
        /* the field's position first (the source sends its columns in one order) */
        size_t i = k == 0 ? hint : k - 1;
        if (i >= g->nlf || (k > 0 && i == hint))
            continue;
        struct learned *l = &g->lf[i];
        if (strcmp(l->name, name) != 0)
            continue;
        if (l->type != type && !type_widens(type, l->type))
            return st_errf(err, ST_EINVAL,
                           "event %zu (%.200s): column \"%.128s\": the source %s its type from "
                           "%s to %s (an incompatible change: strike widens int to long only)",
                           ev->index, src_of(ev), name,
                           type_fits(type, l->type) ? "narrowed" : "changed", tname(l->type),
                           tname(type));
        l->type = type;
        return ST_OK;
    }
    if (g->nlf == g->caplf) {
        g->caplf = g->caplf ? 2 * g->caplf : 16;
        g->lf = xreallocarray(g->lf, g->caplf, sizeof *g->lf);
    }
    g->lf[g->nlf++] = (struct learned){.name = name, .type = type, .typed = typed};
    return ST_OK;
}

/* The source type of field i of an image: a value-typed integer within int32 is an int. */
static enum st_type field_type(const struct cdc_image *img, size_t i)
{
    enum st_type t = (enum st_type)img->stype[i];
    const struct st_literal *l = &img->lits[i];
    if (!img->typed && t == ST_T_LONG && l->kind == LIT_INT && l->i >= INT32_MIN &&
        l->i <= INT32_MAX)
        return ST_T_INT;
    return t;
}

/*
 * Field i of an after image (or a schema-change event's column) against the
 * table under the policy: planned, refused, or (*drop) to be dropped from
 * the image.
 */
static int plan_field(struct group *g, enum svc_cdc_schema pol, const struct cdc_event *ev,
                      const struct cdc_image *img, size_t i, bool *drop, bool *known,
                      struct st_err *err)
{
    const struct engine_table *t = g->t;
    const char *name = img->names[i];
    enum st_type st = field_type(img, i);
    bool is_null = img->lits[i].kind == LIT_NULL;
    int rc;
    *drop = false;
    *known = false;
    if (ev->op != 's' && (rc = learn(g, ev, name, i, st, img->typed, err)) != ST_OK)
        return rc;
    int col = column_at(t, name, i);
    *known = col >= 0;
    if (col < 0) {
        struct engine_schema_change *add = planned(g, ENGINE_SCHEMA_ADD, name);
        if (add != NULL) {
            if (st != 0 && add->col.type != st && type_widens(st, add->col.type))
                add->col.type = st; /* still to be added: added wide */
            else if (st != 0 && !type_fits(st, add->col.type))
                return st_errf(err, ST_EINVAL,
                               "event %zu (%.200s): column \"%.128s\": the source's type %s does "
                               "not go into the %s column this body adds",
                               ev->index, src_of(ev), name, tname(st), tname(add->col.type));
            return ST_OK;
        }
        if (pol == SVC_CDC_IGNORE_NEW) {
            *drop = true;
            g->ignored += ev->op != 's' && !is_null;
            return ST_OK;
        }
        if ((st == 0 && is_null && !img->typed) || (st == 0 && ev->op == 's')) {
            /* a null of no known type, or a schema-change event's column of a type jdbcType
               does not say: nothing to store yet; the events that carry it will say */
            *drop = true;
            return ST_OK;
        }
        if (pol == SVC_CDC_REFUSE)
            return st_errf(err, ST_EINVAL,
                           "event %zu (%.200s): column \"%.128s\" is not in table \"%s\" "
                           "(--cdc-schema refuse; evolve would add it)",
                           ev->index, src_of(ev), name, t->name);
        if (st == 0)
            return st_errf(err, ST_EINVAL,
                           "event %zu (%.200s): column \"%.128s\": the source's type has no "
                           "strike column type (a struct, array or map)",
                           ev->index, src_of(ev), name);
        if (!st_name_valid(name))
            return st_errf(err, ST_EINVAL,
                           "event %zu (%.200s): column \"%.128s\" is not a valid column name "
                           "([A-Za-z_][A-Za-z0-9_]{0,127}); it cannot be added",
                           ev->index, src_of(ev), name);
        struct engine_schema_change c = {.op = ENGINE_SCHEMA_ADD};
        snprintf(c.col.name, sizeof c.col.name, "%s", name);
        c.col.type = st;
        c.col.required = false;
        return plan(g, ev, c, err);
    }
    if (st == 0 || (!img->typed && st != ST_T_LONG))
        return ST_OK; /* no schema: the changeset says what a value does not fit */
    enum st_type ct = planned(g, ENGINE_SCHEMA_WIDEN, name) != NULL ? ST_T_LONG : t->cols[col].type;
    /* a schema-change event's jdbcType is coarser than the events' schema: it widens, no more */
    if (type_fits(st, ct) || ((!img->typed || ev->op == 's') && !type_widens(st, ct)))
        return ST_OK;
    bool widen = type_widens(st, ct);
    if (is_pk(t, col) || col == t->version_col)
        return st_errf(err, ST_EINVAL,
                       "event %zu (%.200s): column \"%.128s\": the source's type %s does not go "
                       "into the table's %s %s column (%s columns never change type)",
                       ev->index, src_of(ev), name, tname(st), tname(ct),
                       is_pk(t, col) ? "primary-key" : "version",
                       is_pk(t, col) ? "primary-key" : "version");
    if (!widen)
        return st_errf(err, ST_EINVAL,
                       "event %zu (%.200s): column \"%.128s\": the source's type %s does not go "
                       "into the table's %s column (an incompatible change: strike widens int to "
                       "long only)",
                       ev->index, src_of(ev), name, tname(st), tname(ct));
    if (pol != SVC_CDC_EVOLVE)
        return st_errf(err, ST_EINVAL,
                       "event %zu (%.200s): column \"%.128s\": the source's type long does not go "
                       "into the table's int column (--cdc-schema %s; evolve would widen it)",
                       ev->index, src_of(ev), name,
                       pol == SVC_CDC_REFUSE ? "refuse" : "ignore-new");
    return plan(
        g, ev,
        (struct engine_schema_change){.op = ENGINE_SCHEMA_WIDEN, .column = name, .type = ST_T_LONG},
        err);
}

/* Is `name` one of the image's fields? */
static bool has_field(const struct cdc_image *img, const char *name)
{
    for (size_t i = 0; i < img->n; i++)
        if (strcmp(img->names[i], name) == 0)
            return true;
    return false;
}

/*
 * The table's columns the image no longer has: a primary-key column is an
 * incompatible change (with a schema, or a schema-change event: without one
 * the changeset names it); under evolve a required column the source
 * dropped is made optional (it reads null from then on), unless it has a
 * default (the rows take its write-default).
 */
static int plan_missing(struct group *g, enum svc_cdc_schema pol, const struct cdc_event *ev,
                        const struct cdc_image *img, struct st_err *err)
{
    const struct engine_table *t = g->t;
    for (int c = 0; c < t->ncols; c++) {
        const char *name = t->cols[c].name;
        if (has_field(img, name))
            continue;
        if (is_pk(t, c)) {
            if (!img->typed)
                continue;
            return st_errf(err, ST_EINVAL,
                           "event %zu (%.200s): column \"%.128s\": the primary-key column is not "
                           "in the source any more (dropped or renamed; primary-key columns never "
                           "change)",
                           ev->index, src_of(ev), name);
        }
        /* a required column with a default takes its write-default: nothing to change */
        bool has_default = t->defaults != NULL && !t->defaults[c].null;
        if (!t->cols[c].required || has_default || pol != SVC_CDC_EVOLVE || c == t->version_col ||
            planned(g, ENGINE_SCHEMA_OPTIONAL, name) != NULL)
            continue;
        int rc =
            plan(g, ev, (struct engine_schema_change){.op = ENGINE_SCHEMA_OPTIONAL, .column = name},
                 err);
        if (rc != ST_OK)
            return rc;
    }
    if (ev->op == 's' && ev->npk > 0) { /* the key the source declares is the table's */
        bool same = ev->npk == (size_t)t->npk;
        for (size_t k = 0; same && k < ev->npk; k++)
            same = strcmp(ev->pk[k], t->cols[t->pk[k]].name) == 0;
        if (!same)
            return st_errf(err, ST_EINVAL,
                           "event %zu (%.200s): column \"%.128s\": the source's primary key is "
                           "not table \"%s\"'s any more (primary-key columns never change)",
                           ev->index, src_of(ev), ev->pk[0], t->name);
    }
    return ST_OK;
}

/* The event's after image (the columns of a schema-change event) against the table. */
static int plan_event(struct group *g, enum svc_cdc_schema pol, struct cdc_event *ev,
                      struct st_err *err)
{
    struct cdc_image *img = &ev->after;
    if (!img->present || ev->op == 'd' || ev->op == 't')
        return ST_OK;
    size_t kept = 0, known = 0;
    for (size_t i = 0; i < img->n; i++) {
        bool drop, col;
        int rc = plan_field(g, pol, ev, img, i, &drop, &col, err);
        if (rc != ST_OK)
            return rc;
        known += col;
        if (drop)
            continue;
        img->names[kept] = img->names[i];
        img->lits[kept] = img->lits[i];
        img->logical[kept] = img->logical[i];
        img->stype[kept] = img->stype[i];
        kept++;
    }
    img->n = kept;
    /* every column of the table there (the usual case): none is missing */
    if (known == (size_t)g->t->ncols && (ev->op != 's' || ev->npk == 0))
        return ST_OK;
    return plan_missing(g, pol, ev, img, err);
}

/* g->t as g->alter leaves it, for the checks before the alter commits (caller: virt_free). */
static struct engine_table *virt_table(const struct group *g)
{
    const struct engine_table *t = g->t;
    size_t nadd = 0;
    for (size_t i = 0; i < g->nalter; i++)
        nadd += g->alter[i].op == ENGINE_SCHEMA_ADD;
    struct engine_table *v = xcalloc(1, sizeof *v);
    *v = *t;
    int n = t->ncols + (int)nadd;
    v->cols = xcalloc((size_t)n, sizeof *v->cols);
    memcpy(v->cols, t->cols, (size_t)t->ncols * sizeof *v->cols);
    if (t->defaults != NULL) {
        v->defaults = xcalloc((size_t)n, sizeof *v->defaults);
        memcpy(v->defaults, t->defaults, (size_t)t->ncols * sizeof *v->defaults);
        for (int c = t->ncols; c < n; c++)
            v->defaults[c].null = true;
    }
    if (t->default_json != NULL) {
        v->default_json = xcalloc((size_t)n, sizeof *v->default_json);
        memcpy(v->default_json, t->default_json, (size_t)t->ncols * sizeof *v->default_json);
    }
    v->ncols = t->ncols;
    for (size_t i = 0; i < g->nalter; i++) {
        const struct engine_schema_change *c = &g->alter[i];
        int col = c->op == ENGINE_SCHEMA_ADD ? -1 : engine_table_column(t, c->column);
        if (c->op == ENGINE_SCHEMA_ADD)
            v->cols[v->ncols++] = c->col;
        else if (c->op == ENGINE_SCHEMA_WIDEN && col >= 0)
            v->cols[col].type = c->type;
        else if (c->op == ENGINE_SCHEMA_OPTIONAL && col >= 0)
            v->cols[col].required = false;
    }
    return v;
}

static void virt_free(struct engine_table *v)
{
    if (v == NULL)
        return;
    free(v->cols);
    free(v->defaults);
    free(v->default_json);
    free(v);
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
    /* a schema-change event names every table of the source's database: one strike does not
       have, or the token may not write, is none of this body's business */
    bool quiet = ev->op == 's';
    for (size_t i = 0; i < *ng; i++)
        if (strcmp(gs[i].t->name, name) == 0)
            return &gs[i];
    if (*ng == CDC_TABLES_MAX && quiet)
        return NULL; /* *rc is ST_OK: the data events of a table past the cap are refused */
    if (*ng == CDC_TABLES_MAX) {
        *rc = st_errf(err, ST_EINVAL, "event %zu (%.200s): the body names more than %d tables",
                      ev->index, src_of(ev), CDC_TABLES_MAX);
        return NULL;
    }
    if (!st_name_valid(name) && quiet) {
        *rc = ST_OK;
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
    if (q->auth != NULL && (*rc = auth_check_table(q->auth, name, AUTH_WRITE, err)) != ST_OK) {
        if (quiet) {
            st_err_clear(err);
            *rc = ST_OK;
        }
        return NULL;
    }
    struct engine_table *t = NULL;
    struct st_err te = {0};
    *rc = engine_get_table_cached(e, name, &t, &te);
    if (*rc == ST_ENOTFOUND && quiet) {
        *rc = ST_OK;
        return NULL;
    }
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

/*
 * The event's producer ("" : none), checked as the engine checks producers:
 * the group's last one when it is the same (a body's events mostly come from
 * one), else a copy in the batch's arena.
 */
static int producer_of(struct jdoc *arena, struct group *g, struct cevent *ce, struct st_err *err)
{
    const struct cdc_event *ev = ce->ev;
    ce->producer = "";
    if (!ev->has_pos || ev->name == NULL || ev->source == NULL)
        return ST_OK;
    char name[CDC_PRODUCER_MAX + 1];
    int n = snprintf(name, sizeof name, "%s/%s", ev->name, ev->source);
    if (n < 0 || (size_t)n >= sizeof name)
        return st_errf(err, ST_EINVAL,
                       "event %zu (%.200s): source.name and the source table make a producer "
                       "longer than %d bytes",
                       ev->index, src_of(ev), CDC_PRODUCER_MAX);
    if (g->last_producer == NULL || strcmp(g->last_producer, name) != 0) {
        char *copy = jdoc_alloc(arena, (size_t)n + 1);
        memcpy(copy, name, (size_t)n + 1);
        g->last_producer = copy;
    }
    ce->producer = g->last_producer;
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
        free(gs[i].lf);
        free(gs[i].alter);
        virt_free(gs[i].virt);
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
    /* check: route, look up, plan the source's schema changes, convert and build everything
       before any commit */
    size_t nrows = 0;
    for (size_t i = 0; i < b.n && rc == ST_OK; i++) {
        struct cdc_event *ev = &b.ev[i];
        if (ev->op == 's' && (q->schema != SVC_CDC_EVOLVE || q->table != NULL))
            continue; /* only evolve learns from schema-change events, and only when each
                         names its own table (?table= does not say which source table is
                         the table's: the data events will) */
        const char *name = route_of(q, ev);
        if (name == NULL && ev->op == 's')
            continue;
        if (name == NULL) {
            rc = st_errf(err, ST_EINVAL,
                         "event %zu: source.table: required to route the event (or give ?table=)",
                         ev->index);
            break;
        }
        struct group *g = group_for(e, q, gs, &ng, name, ev, &rc, err);
        if (g == NULL) {
            if (rc == ST_OK) /* a schema-change event of a table strike does not have */
                continue;
            break;
        }
        if ((rc = plan_event(g, q->schema, ev, err)) != ST_OK)
            break;
        if (ev->op == 's')
            continue;
        push_cevent(g, ev);
        nrows++;
        rc = producer_of(arena, g, &g->ev[g->n - 1], err);
    }
    bool altering = false;
    for (size_t i = 0; i < ng && rc == ST_OK; i++) {
        struct group *g = &gs[i];
        if (g->nalter > 0) {
            g->virt = virt_table(g);
            altering = true;
        }
        const struct engine_table *t = g->virt != NULL ? g->virt : g->t;
        for (size_t k = 0; k < g->n && rc == ST_OK; k++) {
            struct cdc_event *ev = (struct cdc_event *)g->ev[k].ev;
            if ((rc = convert_image(t, ev, &ev->before, "before", err)) == ST_OK)
                rc = convert_image(t, ev, &ev->after, "after", err);
        }
    }
    if (rc == ST_OK && nrows == 0 && !altering) { /* schema-change events with nothing new */
        out->no_change = true;
        groups_free(gs, ng);
        cdc_batch_free(&b);
        return ST_OK;
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
            gs[i].res->ignored = gs[i].ignored;
        }
    }
    /* commit: per table; a failure leaves the tables before it committed (a resend finds
       their events at or before their positions: duplicates) */
    for (size_t i = 0; i < ng && rc == ST_OK; i++) {
        struct group *g = &gs[i];
        if (g->nalter > 0)
            rc = commit_alter(e, g, err);
        for (size_t s = 0; s < g->nsegs && rc == ST_OK; s++)
            rc = g->segs[s].truncate ? commit_truncate(e, g, &g->segs[s], err)
                                     : commit_changes(e, g, &g->segs[s], err);
    }
    /* a table that only saw duplicates answers its current seq (the cached one may lag) */
    for (size_t i = 0; i < ng && rc == ST_OK; i++) {
        struct engine_table *fresh = NULL;
        gs[i].res->schema_id = gs[i].t->schema_id;
        if (gs[i].committed || (rc = engine_get_table(e, gs[i].t->name, &fresh, err)) != ST_OK)
            continue;
        gs[i].res->seq = fresh->seq;
        gs[i].res->schema_id = fresh->schema_id;
        engine_table_unref(fresh);
    }
    groups_free(gs, ng);
    cdc_batch_free(&b);
    if (rc != ST_OK)
        svc_cdc_res_clear(out);
    return rc;
}
