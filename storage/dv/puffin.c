/* puffin.c - Puffin footer reader and DV file writer. */
#include "puffin.h"

#include <assert.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsutil.h"
#include "common/xalloc.h"
#include "dv_int.h"

#define TAIL 12u /* payload size, flags, magic */

static void props_free(struct puffin_prop *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(p[i].key);
        free(p[i].value);
    }
    free(p);
}

static void blob_free(struct puffin_blob *b)
{
    free(b->type);
    free(b->fields);
    free(b->compression_codec);
    props_free(b->props, b->n_props);
}

void puffin_footer_free(struct puffin_footer *f)
{
    if (f == NULL)
        return;
    for (size_t i = 0; i < f->n_blobs; i++)
        blob_free(&f->blobs[i]);
    free(f->blobs);
    props_free(f->props, f->n_props);
    memset(f, 0, sizeof *f);
}

const char *puffin_prop(const struct puffin_prop *props, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(props[i].key, key) == 0)
            return props[i].value;
    return NULL;
}

/* Strict non-negative decimal (no sign, no spaces, no leading zeros). */
static bool parse_count(const char *s, int64_t *out)
{
    if (s == NULL || *s == '\0' || (s[0] == '0' && s[1] != '\0'))
        return false;
    int64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (INT64_MAX - (*s - '0')) / 10)
            return false;
        v = v * 10 + (*s - '0');
    }
    *out = v;
    return true;
}

/* ------------------------------------------------------------- reading */

struct ctx {
    size_t payload_at; /* file offset of the JSON, for messages */
    struct st_err *err;
};

static int bad(struct ctx *c, size_t blob, const char *what)
{
    if (blob == SIZE_MAX)
        return st_errf(c->err, ST_ECORRUPT, "Puffin footer (JSON at byte %zu): %s", c->payload_at,
                       what);
    return st_errf(c->err, ST_ECORRUPT, "Puffin footer (JSON at byte %zu): blob %zu: %s",
                   c->payload_at, blob, what);
}

static int parse_props(struct ctx *c, size_t blob, json_t *o, struct puffin_prop **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (o == NULL)
        return ST_OK;
    if (!json_is_object(o))
        return bad(c, blob, "\"properties\" is not an object");
    size_t cnt = json_object_size(o), i = 0;
    if (cnt == 0)
        return ST_OK;
    struct puffin_prop *p = xcalloc(cnt, sizeof *p);
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        if (!json_is_string(v)) {
            props_free(p, i);
            return bad(c, blob, "a property value is not a string");
        }
        p[i].key = xstrdup(k);
        p[i].value = xstrndup(json_string_value(v), json_string_length(v));
        i++;
    }
    *out = p;
    *n = i;
    return ST_OK;
}

static int get_long(struct ctx *c, size_t blob, json_t *o, const char *key, int64_t *out)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v)) {
        char msg[96];
        snprintf(msg, sizeof msg, "\"%s\" is missing or not an integer", key);
        return bad(c, blob, msg);
    }
    *out = json_integer_value(v);
    return ST_OK;
}

static int parse_blob(struct ctx *c, size_t i, json_t *o, uint64_t blob_end, struct puffin_blob *b)
{
    memset(b, 0, sizeof *b);
    b->cardinality = -1;
    if (!json_is_object(o))
        return bad(c, i, "not an object");
    json_t *type = json_object_get(o, "type"), *fields = json_object_get(o, "fields");
    json_t *codec = json_object_get(o, "compression-codec");
    if (!json_is_string(type))
        return bad(c, i, "\"type\" is missing or not a string");
    if (!json_is_array(fields))
        return bad(c, i, "\"fields\" is missing or not a list");
    if (codec != NULL && !json_is_string(codec))
        return bad(c, i, "\"compression-codec\" is not a string");
    int64_t offset, length;
    int rc;
    if ((rc = get_long(c, i, o, "snapshot-id", &b->snapshot_id)) != ST_OK ||
        (rc = get_long(c, i, o, "sequence-number", &b->sequence_number)) != ST_OK ||
        (rc = get_long(c, i, o, "offset", &offset)) != ST_OK ||
        (rc = get_long(c, i, o, "length", &length)) != ST_OK)
        return rc;
    if (offset < 4 || length < 0 || (uint64_t)offset > blob_end ||
        (uint64_t)length > blob_end - (uint64_t)offset)
        return st_errf(c->err, ST_ECORRUPT,
                       "Puffin footer (JSON at byte %zu): blob %zu: offset %" PRId64
                       " length %" PRId64 " is outside the blob area (bytes 4..%" PRIu64 ")",
                       c->payload_at, i, offset, length, blob_end);
    b->offset = (uint64_t)offset;
    b->length = (uint64_t)length;
    assert(b->offset + b->length <= blob_end);
    size_t nf = json_array_size(fields);
    b->fields = nf ? xcalloc(nf, sizeof *b->fields) : NULL;
    for (size_t k = 0; k < nf; k++) {
        json_t *f = json_array_get(fields, k);
        if (!json_is_integer(f) || json_integer_value(f) < INT32_MIN ||
            json_integer_value(f) > INT32_MAX) {
            free(b->fields);
            b->fields = NULL;
            return bad(c, i, "a field id is not a 32-bit integer");
        }
        b->fields[k] = (int32_t)json_integer_value(f);
    }
    b->n_fields = nf;
    if ((rc = parse_props(c, i, json_object_get(o, "properties"), &b->props, &b->n_props)) !=
        ST_OK) {
        free(b->fields);
        b->fields = NULL;
        return rc;
    }
    b->type = xstrndup(json_string_value(type), json_string_length(type));
    if (codec != NULL)
        b->compression_codec = xstrndup(json_string_value(codec), json_string_length(codec));
    b->referenced_data_file = puffin_prop(b->props, b->n_props, "referenced-data-file");
    int64_t card;
    if (parse_count(puffin_prop(b->props, b->n_props, "cardinality"), &card))
        b->cardinality = card;
    return ST_OK;
}

/*
 * Parse and check a footer: tail = its last 12 bytes, head = the file's
 * first 4 bytes, footer = the footer's opening magic and the payload.
 */
static int parse_footer(const uint8_t *head, const uint8_t *footer, uint64_t file_size,
                        uint64_t footer_offset, uint32_t payload_size, struct puffin_footer *out,
                        struct st_err *err)
{
    if (memcmp(head, PUFFIN_MAGIC, 4) != 0)
        return st_errf(err, ST_ECORRUPT, "not a Puffin file: no magic PFA1 at byte 0");
    if (memcmp(footer, PUFFIN_MAGIC, 4) != 0)
        return st_errf(err, ST_ECORRUPT,
                       "no footer magic PFA1 at byte %" PRIu64
                       " (where the footer payload size %" PRIu32 " puts it)",
                       footer_offset, payload_size);
    struct ctx c = {.payload_at = (size_t)footer_offset + 4, .err = err};
    json_error_t je;
    json_t *root = json_loadb((const char *)footer + 4, payload_size, JSON_REJECT_DUPLICATES, &je);
    if (root == NULL)
        return st_errf(err, ST_ECORRUPT, "Puffin footer: invalid JSON at byte %" PRIu64 ": %s",
                       footer_offset + 4 + (uint64_t)(je.position > 0 ? je.position : 0), je.text);
    int rc = ST_OK;
    json_t *blobs = json_object_get(root, "blobs");
    if (!json_is_object(root) || !json_is_array(blobs)) {
        rc = bad(&c, SIZE_MAX, "\"blobs\" is missing or not a list");
        goto out;
    }
    size_t nb = json_array_size(blobs);
    out->blobs = nb ? xcalloc(nb, sizeof *out->blobs) : NULL;
    for (size_t i = 0; i < nb; i++) {
        rc = parse_blob(&c, i, json_array_get(blobs, i), footer_offset, &out->blobs[i]);
        if (rc != ST_OK)
            goto out;
        out->n_blobs++;
    }
    rc = parse_props(&c, SIZE_MAX, json_object_get(root, "properties"), &out->props, &out->n_props);
out:
    json_decref(root);
    if (rc != ST_OK) {
        puffin_footer_free(out);
        return rc;
    }
    out->footer_offset = footer_offset;
    out->payload_size = payload_size;
    out->file_size = file_size;
    return ST_OK;
}

/* Check the 12-byte tail; sets the footer's offset and payload size. */
static int check_tail(const uint8_t *tail, uint64_t file_size, uint64_t *footer_offset,
                      uint32_t *payload_size, struct st_err *err)
{
    uint64_t at = file_size - TAIL;
    if (memcmp(tail + 8, PUFFIN_MAGIC, 4) != 0)
        return st_errf(err, ST_ECORRUPT, "not a Puffin file: no magic PFA1 at byte %" PRIu64,
                       at + 8);
    uint32_t flags = ld_u32le(tail + 4);
    if (flags & 1u)
        return st_errf(err, ST_EUNSUPPORTED,
                       "the footer payload is LZ4-compressed (flags byte at %" PRIu64
                       ", bit 0 set); compressed footers are not supported",
                       at + 4);
    if (flags != 0)
        return st_errf(err, ST_ECORRUPT,
                       "unknown footer flags 0x%08" PRIx32 " at byte %" PRIu64
                       " (only bit 0 is defined)",
                       flags, at + 4);
    int32_t size = (int32_t)ld_u32le(tail);
    if (size < 0)
        return st_errf(err, ST_ECORRUPT,
                       "negative footer payload size %" PRId32 " at byte %" PRIu64, size, at);
    if ((uint32_t)size > PUFFIN_MAX_FOOTER)
        return st_errf(err, ST_ETOOBIG,
                       "footer payload size %" PRId32 " at byte %" PRIu64
                       " is more than the limit of %u",
                       size, at, PUFFIN_MAX_FOOTER);
    /* The footer (magic + payload) must start after the header magic. */
    if ((uint64_t)size + TAIL + 4 + 4 > file_size)
        return st_errf(err, ST_ECORRUPT,
                       "footer payload size %" PRId32 " at byte %" PRIu64
                       " does not fit in the %" PRIu64 "-byte file",
                       size, at, file_size);
    *footer_offset = file_size - TAIL - (uint64_t)size - 4;
    *payload_size = (uint32_t)size;
    assert(*footer_offset >= 4); /* after the header magic; the footer ends at the tail */
    return ST_OK;
}

int puffin_read_footer(const uint8_t *file, size_t n, struct puffin_footer *out, struct st_err *err)
{
    memset(out, 0, sizeof *out);
    if (n < 4 + 4 + TAIL)
        return st_errf(err, ST_ECORRUPT,
                       "not a Puffin file: %zu bytes is shorter than the smallest (20 bytes plus "
                       "the footer JSON)",
                       n);
    uint64_t footer_offset = 0;
    uint32_t size = 0;
    int rc = check_tail(file + n - TAIL, n, &footer_offset, &size, err);
    if (rc != ST_OK)
        return rc;
    return parse_footer(file, file + footer_offset, n, footer_offset, size, out, err);
}

int puffin_read_footer_fd(int fd, uint64_t file_size, struct puffin_footer *out, struct st_err *err)
{
    memset(out, 0, sizeof *out);
    if (file_size < 4 + 4 + TAIL)
        return st_errf(err, ST_ECORRUPT,
                       "not a Puffin file: %" PRIu64 " bytes is shorter than the smallest",
                       file_size);
    uint8_t tail[TAIL], head[4];
    int rc;
    if ((rc = st_pread_full(fd, tail, TAIL, file_size - TAIL, err)) != ST_OK ||
        (rc = st_pread_full(fd, head, 4, 0, err)) != ST_OK)
        return rc;
    uint64_t footer_offset = 0;
    uint32_t size = 0;
    if ((rc = check_tail(tail, file_size, &footer_offset, &size, err)) != ST_OK)
        return rc;
    uint8_t *footer = xmalloc((size_t)size + 4);
    rc = st_pread_full(fd, footer, (size_t)size + 4, footer_offset, err);
    if (rc == ST_OK)
        rc = parse_footer(head, footer, file_size, footer_offset, size, out, err);
    free(footer);
    return rc;
}

const struct puffin_blob *puffin_find_blob(const struct puffin_footer *f, uint64_t offset,
                                           uint64_t length)
{
    for (size_t i = 0; i < f->n_blobs; i++)
        if (f->blobs[i].offset == offset && f->blobs[i].length == length)
            return &f->blobs[i];
    return NULL;
}

const struct puffin_blob *puffin_find_dv(const struct puffin_footer *f,
                                         const char *referenced_data_file)
{
    for (size_t i = 0; i < f->n_blobs; i++) {
        const struct puffin_blob *b = &f->blobs[i];
        if (strcmp(b->type, DV_BLOB_TYPE) == 0 && b->referenced_data_file != NULL &&
            strcmp(b->referenced_data_file, referenced_data_file) == 0)
            return b;
    }
    return NULL;
}

int puffin_check_dv_blob(const struct puffin_blob *b, struct st_err *err)
{
    if (strcmp(b->type, DV_BLOB_TYPE) != 0)
        return st_errf(err, ST_EINVAL,
                       "blob at byte %" PRIu64 " has type \"%s\", not \"" DV_BLOB_TYPE "\"",
                       b->offset, b->type);
    if (b->compression_codec != NULL)
        return st_errf(err, ST_ECORRUPT,
                       "DV blob at byte %" PRIu64
                       " has compression-codec \"%s\"; deletion vectors must not be compressed",
                       b->offset, b->compression_codec);
    if (b->referenced_data_file == NULL)
        return st_errf(err, ST_ECORRUPT,
                       "DV blob at byte %" PRIu64 " has no referenced-data-file property",
                       b->offset);
    if (b->cardinality < 0)
        return st_errf(err, ST_ECORRUPT,
                       "DV blob at byte %" PRIu64
                       " has no cardinality property, or one that is not a decimal count",
                       b->offset);
    return ST_OK;
}

int puffin_decode_dv(const uint8_t *file, size_t n, const struct puffin_blob *b, struct dv **out,
                     struct st_err *err)
{
    *out = NULL;
    int rc = puffin_check_dv_blob(b, err);
    if (rc != ST_OK)
        return rc;
    return dv_decode_iceberg_at(file, n, b->offset, b->length, b->cardinality, out, err);
}

int puffin_read_dv_fd(int fd, const struct puffin_blob *b, struct dv **out, struct st_err *err)
{
    *out = NULL;
    int rc = puffin_check_dv_blob(b, err);
    if (rc != ST_OK)
        return rc;
    if (b->length > PUFFIN_MAX_BLOB)
        return st_errf(err, ST_ETOOBIG,
                       "DV blob at byte %" PRIu64 " is %" PRIu64
                       " bytes, more than the limit of %u",
                       b->offset, b->length, PUFFIN_MAX_BLOB);
    uint8_t *p = xmalloc(b->length ? (size_t)b->length : 1);
    rc = st_pread_full(fd, p, (size_t)b->length, b->offset, err);
    if (rc == ST_OK)
        rc = dv__decode_blob(p, (size_t)b->length, (size_t)b->offset, b->cardinality, out, err);
    free(p);
    return rc;
}

/* ------------------------------------------------------------- writing */

struct puffin_writer {
    struct buf data;           /* "PFA1" and the blobs so far */
    struct puffin_blob *blobs; /* their metadata */
    size_t n_blobs;
    size_t cap;
    char *created_by;
    bool finished;
};

struct puffin_writer *puffin_writer_new(const char *created_by)
{
    struct puffin_writer *w = xcalloc(1, sizeof *w);
    w->created_by = created_by ? xstrdup(created_by) : xstrdup("strike " STRIKE_VERSION);
    buf_append(&w->data, PUFFIN_MAGIC, 4);
    return w;
}

size_t puffin_writer_count(const struct puffin_writer *w)
{
    return w->n_blobs;
}

static void add_meta(struct puffin_writer *w, const char *referenced_file, uint64_t offset,
                     uint64_t length, uint64_t cardinality)
{
    if (w->n_blobs == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 8;
        w->blobs = xreallocarray(w->blobs, w->cap, sizeof *w->blobs);
    }
    struct puffin_blob *b = &w->blobs[w->n_blobs++];
    memset(b, 0, sizeof *b);
    b->type = xstrdup(DV_BLOB_TYPE);
    b->fields = xmalloc(sizeof *b->fields);
    b->fields[0] = PUFFIN_DV_FIELD;
    b->n_fields = 1;
    b->snapshot_id = -1;
    b->sequence_number = -1;
    b->offset = offset;
    b->length = length;
    b->props = xcalloc(2, sizeof *b->props);
    b->props[0].key = xstrdup("referenced-data-file");
    b->props[0].value = xstrdup(referenced_file);
    b->props[1].key = xstrdup("cardinality");
    b->props[1].value = xasprintf("%" PRIu64, cardinality);
    b->n_props = 2;
    b->referenced_data_file = b->props[0].value;
    b->cardinality = (int64_t)cardinality;
}

static bool valid_utf8(const char *s)
{
    json_t *j = json_string(s); /* NULL for invalid UTF-8 */
    json_decref(j);
    return j != NULL;
}

static int check_open(const struct puffin_writer *w, const char *referenced_file,
                      struct st_err *err)
{
    if (w->finished)
        return st_errf(err, ST_EINVAL, "the Puffin writer is already finished");
    if (referenced_file != NULL && !valid_utf8(referenced_file))
        return st_errf(err, ST_EINVAL, "referenced data file name is not valid UTF-8");
    return ST_OK;
}

int puffin_writer_add_dv(struct puffin_writer *w, const char *referenced_file, const struct dv *d,
                         uint64_t *offset, uint64_t *length, struct st_err *err)
{
    int rc = check_open(w, referenced_file, err);
    if (rc != ST_OK)
        return rc;
    size_t at = w->data.len;
    if (dv_encode_iceberg(d, &w->data) != ST_OK) {
        uint64_t max = 0;
        dv_max(d, &max);
        return st_errf(err, ST_EINVAL,
                       "DV for %s: position %" PRIu64 " is >= 2^63, not valid in a deletion vector",
                       referenced_file, max);
    }
    *offset = at;
    *length = w->data.len - at;
    assert(*length >= DV_ICEBERG_OVERHEAD);
    add_meta(w, referenced_file, *offset, *length, dv_cardinality(d));
    return ST_OK;
}

int puffin_writer_add_dv_blob(struct puffin_writer *w, const char *referenced_file,
                              const uint8_t *blob, size_t n, uint64_t cardinality, uint64_t *offset,
                              uint64_t *length, struct st_err *err)
{
    int rc = check_open(w, referenced_file, err);
    if (rc == ST_OK)
        rc = dv_iceberg_check(blob, n, true, err);
    if (rc != ST_OK)
        return rc;
    *offset = w->data.len;
    *length = n;
    buf_append(&w->data, blob, n);
    add_meta(w, referenced_file, *offset, *length, cardinality);
    return ST_OK;
}

static json_t *props_json(const struct puffin_prop *p, size_t n)
{
    json_t *o = json_object();
    for (size_t i = 0; i < n; i++)
        json_object_set_new(o, p[i].key, json_string(p[i].value));
    return o;
}

int puffin_writer_finish(struct puffin_writer *w, struct buf *out, struct st_err *err)
{
    int rc = check_open(w, NULL, err);
    if (rc != ST_OK)
        return rc;
    if (!valid_utf8(w->created_by))
        return st_errf(err, ST_EINVAL, "created-by is not valid UTF-8");
    json_t *root = json_object(), *blobs = json_array();
    for (size_t i = 0; i < w->n_blobs; i++) {
        const struct puffin_blob *b = &w->blobs[i];
        json_t *o = json_object(), *fields = json_array();
        for (size_t k = 0; k < b->n_fields; k++)
            json_array_append_new(fields, json_integer(b->fields[k]));
        /* Java's key order. */
        json_object_set_new(o, "type", json_string(b->type));
        json_object_set_new(o, "fields", fields);
        json_object_set_new(o, "snapshot-id", json_integer(b->snapshot_id));
        json_object_set_new(o, "sequence-number", json_integer(b->sequence_number));
        json_object_set_new(o, "offset", json_integer((json_int_t)b->offset));
        json_object_set_new(o, "length", json_integer((json_int_t)b->length));
        json_object_set_new(o, "properties", props_json(b->props, b->n_props));
        json_array_append_new(blobs, o);
    }
    json_object_set_new(root, "blobs", blobs);
    json_t *props = json_object();
    json_object_set_new(props, "created-by", json_string(w->created_by));
    json_object_set_new(root, "properties", props);
    char *payload = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (payload == NULL)
        abort(); /* out of memory: every string was checked above */
    size_t plen = strlen(payload);
    buf_append(&w->data, PUFFIN_MAGIC, 4);
    buf_append(&w->data, payload, plen);
    free(payload);
    buf_put_u32le(&w->data, (uint32_t)plen);
    buf_put_u32le(&w->data, 0); /* flags: uncompressed */
    buf_append(&w->data, PUFFIN_MAGIC, 4);
    buf_append(out, w->data.data, w->data.len);
    buf_free(&w->data);
    w->finished = true;
    return ST_OK;
}

void puffin_writer_free(struct puffin_writer *w)
{
    if (w == NULL)
        return;
    buf_free(&w->data);
    for (size_t i = 0; i < w->n_blobs; i++)
        blob_free(&w->blobs[i]);
    free(w->blobs);
    free(w->created_by);
    free(w);
}
