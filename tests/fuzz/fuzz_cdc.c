/*
 * fuzz_cdc.c - the Debezium envelope decoder (server/cdc.h) on hostile bodies:
 * the first byte picks the Content-Type (none, JSON, NDJSON, CloudEvents),
 * the rest is the body. Checked:
 *   - a refusal is ST_EINVAL or ST_ETOOBIG with a message naming where
 *     ("event N", "line N" or "the body"), and leaves the batch empty;
 *   - an accepted body gives events in body order with an op of c/r/u/d/t, a
 *     position >= 0 when it has one, images whose names and literals are all
 *     there (c/r/u have an after, d a before), a source name whenever the
 *     table is known;
 *   - every field converts (cdc_value) to every column type or fails with a
 *     message, and never changes a null.
 *   - the fast path for arrays of wrapped events (cdc_decode) answers exactly
 *     what the whole-body parse answers (cdc_decode_whole): status, message,
 *     every event, field by field.
 * Seeds: tests/data/debezium (strike's own fixtures).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cdc.h"

static void check_image(const struct cdc_image *img)
{
    if (!img->present) {
        if (img->n != 0)
            abort();
        return;
    }
    static const enum st_type types[] = {ST_T_BOOLEAN, ST_T_INT,    ST_T_LONG,
                                         ST_T_DOUBLE,  ST_T_STRING, ST_T_TIMESTAMP};
    for (size_t i = 0; i < img->n; i++) {
        if (img->names[i] == NULL || img->logical[i] > CDC_L_BYTES)
            abort();
        const struct st_literal *l = &img->lits[i];
        if (l->kind == LIT_STRING && l->s == NULL)
            abort();
        for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
            struct st_literal out;
            struct st_err err = {0};
            int rc = cdc_value(l, (enum cdc_logical)img->logical[i], types[t], &out, &err);
            if (rc != ST_OK && (rc != ST_EINVAL || err.msg[0] == '\0'))
                abort();
            if (rc == ST_OK && l->kind == LIT_NULL && out.kind != LIT_NULL)
                abort();
        }
    }
}

static bool same_str(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static bool same_lit(const struct st_literal *a, const struct st_literal *b)
{
    if (a->kind != b->kind)
        return false;
    switch (a->kind) {
    case LIT_NULL:
        return true;
    case LIT_BOOL:
        return a->b == b->b;
    case LIT_INT:
        return a->i == b->i;
    case LIT_DOUBLE:
        return memcmp(&a->d, &b->d, sizeof a->d) == 0;
    case LIT_STRING:
        return a->slen == b->slen && memcmp(a->s, b->s, a->slen) == 0;
    }
    return false;
}

static bool same_image(const struct cdc_image *a, const struct cdc_image *b)
{
    if (a->present != b->present || a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->names[i], b->names[i]) != 0 || a->logical[i] != b->logical[i] ||
            !same_lit(&a->lits[i], &b->lits[i]))
            return false;
    return true;
}

/* The fast path against the whole-body parse, on the same bytes. */
static void differential(const uint8_t *body, size_t n, const char *ct)
{
    struct cdc_batch a, b;
    struct st_err ea = {0}, eb = {0};
    int ra = cdc_decode(body, n, ct, &a, &ea), rb = cdc_decode_whole(body, n, ct, &b, &eb);
    if (ra != rb || strcmp(ea.msg, eb.msg) != 0)
        abort();
    if (ra != ST_OK)
        return;
    if (a.n != b.n || a.nskipped != b.nskipped)
        abort();
    for (size_t i = 0; i < a.n; i++) {
        const struct cdc_event *x = &a.ev[i], *y = &b.ev[i];
        if (x->index != y->index || x->op != y->op || x->has_pos != y->has_pos ||
            x->pos != y->pos || x->has_txpos != y->has_txpos || x->txpos != y->txpos ||
            !same_str(x->name, y->name) || !same_str(x->db, y->db) ||
            !same_str(x->schema, y->schema) || !same_str(x->table, y->table) ||
            !same_str(x->source, y->source) || !same_image(&x->before, &y->before) ||
            !same_image(&x->after, &y->after))
            abort();
    }
    cdc_batch_free(&a);
    cdc_batch_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    static const char *const types[] = {NULL, "application/json", "application/x-ndjson",
                                        "application/cloudevents+json"};
    const char *ct = types[data[0] % 4];
    differential(data + 1, size - 1, ct);
    struct cdc_batch b;
    struct st_err err = {0};
    int rc = cdc_decode(data + 1, size - 1, ct, &b, &err);
    if (rc != ST_OK) {
        if ((rc != ST_EINVAL && rc != ST_ETOOBIG) || b.n != 0 || b.docs != NULL || b.ev != NULL)
            abort();
        if (strncmp(err.msg, "event ", 6) != 0 && strncmp(err.msg, "line ", 5) != 0 &&
            strncmp(err.msg, "the body", 8) != 0)
            abort();
        return 0;
    }
    for (size_t i = 0; i < b.n; i++) {
        const struct cdc_event *e = &b.ev[i];
        if (strchr("crudt", e->op) == NULL || e->op == '\0')
            abort();
        if (i > 0 && e->index <= b.ev[i - 1].index)
            abort();
        if (e->has_pos && e->pos < 0)
            abort();
        if (e->table != NULL && e->source == NULL)
            abort();
        if ((e->op == 'c' || e->op == 'r' || e->op == 'u') && !e->after.present)
            abort();
        if (e->op == 'd' && !e->before.present)
            abort();
        check_image(&e->before);
        check_image(&e->after);
    }
    cdc_batch_free(&b);
    return 0;
}
