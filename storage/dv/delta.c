/* delta.c - Delta Lake DV descriptors: JSON, UUID paths, loading. */
#include "delta.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/uuid.h"
#include "common/xalloc.h"
#include "dv_int.h"
#include "z85.h"

#define UUID_Z85_LEN 20

static int get_int(json_t *o, const char *key, bool required, int64_t *out, bool *present,
                   struct st_err *err)
{
    json_t *v = json_object_get(o, key);
    if (present != NULL)
        *present = v != NULL && !json_is_null(v);
    if (v == NULL || json_is_null(v)) {
        if (required)
            return st_errf(err, ST_EINVAL, "deletionVector: \"%s\" is missing", key);
        return ST_OK;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return st_errf(err, ST_EINVAL, "deletionVector: \"%s\" must be a non-negative integer",
                       key);
    *out = json_integer_value(v);
    return ST_OK;
}

int delta_dv_descriptor_parse(const char *json, size_t len, struct delta_dv_descriptor *out,
                              struct st_err *err)
{
    memset(out, 0, sizeof *out);
    json_error_t je;
    json_t *o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (o == NULL)
        return st_errf(err, ST_EINVAL, "deletionVector: invalid JSON at byte %d: %s", je.position,
                       je.text);
    int rc = ST_OK;
    if (!json_is_object(o)) {
        rc = st_errf(err, ST_EINVAL, "deletionVector: not a JSON object");
        goto out;
    }
    const char *st = json_string_value(json_object_get(o, "storageType"));
    const char *path = json_string_value(json_object_get(o, "pathOrInlineDv"));
    if (st == NULL || strlen(st) != 1 || strchr("uip", st[0]) == NULL) {
        rc = st_errf(err, ST_EINVAL,
                     "deletionVector: \"storageType\" must be \"u\", \"i\" or \"p\"");
        goto out;
    }
    if (path == NULL) {
        rc = st_errf(err, ST_EINVAL, "deletionVector: \"pathOrInlineDv\" must be a string");
        goto out;
    }
    out->storage_type = st[0];
    if ((rc = get_int(o, "offset", false, &out->offset, &out->has_offset, err)) != ST_OK ||
        (rc = get_int(o, "sizeInBytes", true, &out->size_in_bytes, NULL, err)) != ST_OK ||
        (rc = get_int(o, "cardinality", true, &out->cardinality, NULL, err)) != ST_OK)
        goto out;
    if (out->storage_type == 'i' && out->has_offset) {
        rc = st_errf(err, ST_EINVAL, "deletionVector: an inline DV has no \"offset\"");
        goto out;
    }
    out->path_or_inline_dv = xstrdup(path);
out:
    json_decref(o);
    return rc;
}

void delta_dv_descriptor_free(struct delta_dv_descriptor *d)
{
    if (d == NULL)
        return;
    free(d->path_or_inline_dv);
    d->path_or_inline_dv = NULL;
}

int delta_dv_uuid_path(const char *path_or_inline_dv, const char *name_prefix, char **out,
                       struct st_err *err)
{
    *out = NULL;
    size_t len = strlen(path_or_inline_dv);
    if (len < UUID_Z85_LEN)
        return st_errf(err, ST_EINVAL,
                       "pathOrInlineDv \"%s\" is shorter than the 20-character Z85 UUID",
                       path_or_inline_dv);
    size_t plen = len - UUID_Z85_LEN;
    struct buf raw = BUF_INIT;
    int rc = z85_decode(path_or_inline_dv + plen, UUID_Z85_LEN, &raw, err);
    if (rc != ST_OK) {
        buf_free(&raw);
        return st_err_prefix(err, "pathOrInlineDv UUID (from character %zu)", plen);
    }
    char uuid[ST_UUID_STR_LEN + 1];
    st_uuid_format(raw.data, uuid);
    buf_free(&raw);
    if (name_prefix == NULL)
        name_prefix = "";
    if (plen == 0)
        *out = xasprintf("%sdeletion_vector_%s.bin", name_prefix, uuid);
    else
        *out = xasprintf("%.*s/%sdeletion_vector_%s.bin", (int)plen, path_or_inline_dv, name_prefix,
                         uuid);
    return ST_OK;
}

void delta_dv_encode_uuid(const uint8_t uuid[16], const char *prefix, struct buf *out)
{
    if (prefix != NULL)
        buf_append_str(out, prefix);
    z85_encode(uuid, 16, out);
}

int delta_dv_resolve(const struct delta_dv_descriptor *d, const char *table_root,
                     const char *name_prefix, char **path, struct st_err *err)
{
    *path = NULL;
    if (d->storage_type == 'u') {
        char *rel;
        int rc = delta_dv_uuid_path(d->path_or_inline_dv, name_prefix, &rel, err);
        if (rc != ST_OK)
            return rc;
        *path = st_path_join(table_root, rel);
        free(rel);
        return ST_OK;
    }
    if (d->storage_type == 'p') {
        const char *p = d->path_or_inline_dv;
        if (strncmp(p, "file://", 7) == 0)
            p += 7;
        else if (strncmp(p, "file:", 5) == 0)
            p += 5;
        else if (strstr(p, "://") != NULL)
            return st_errf(err, ST_EUNSUPPORTED, "DV path %s: only local files are supported",
                           d->path_or_inline_dv);
        *path = xstrdup(p);
        return ST_OK;
    }
    return st_errf(err, ST_EINVAL, "an inline DV (storageType \"i\") has no file");
}

static int load_file(const struct delta_dv_descriptor *d, const char *path, struct dv **out,
                     struct st_err *err)
{
    int64_t offset = d->has_offset ? d->offset : 1;
    if (d->size_in_bytes > (int64_t)DELTA_DV_MAX_BYTES)
        return st_errf(err, ST_ETOOBIG, "sizeInBytes %" PRId64 " is more than the limit of %u",
                       d->size_in_bytes, DELTA_DV_MAX_BYTES);
    if (offset < 1)
        return st_errf(err, ST_ECORRUPT,
                       "DV offset %" PRId64 " points at the version byte (entries start at 1)",
                       offset);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return st_errf(err, errno == ENOENT ? ST_ENOTFOUND : ST_EIO, "cannot open %s: %s", path,
                       strerror(errno));
    struct buf b = BUF_INIT;
    int rc;
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        rc = st_errf(err, ST_EIO, "cannot stat %s: %s", path, strerror(errno));
        goto out;
    }
    size_t need = (size_t)d->size_in_bytes + 8;
    if ((uint64_t)offset + need > (uint64_t)sb.st_size) {
        rc = st_errf(err, ST_ECORRUPT,
                     "%s: the DV at offset %" PRId64 " (%" PRId64
                     " bytes plus 8) runs past the end of the %lld-byte file",
                     path, offset, d->size_in_bytes, (long long)sb.st_size);
        goto out;
    }
    uint8_t version;
    if ((rc = st_pread_full(fd, &version, 1, 0, err)) != ST_OK)
        goto out;
    if ((rc = dv__check_version(&version, 1, "DV file", DV_DELTA_FILE_VERSION, err)) != ST_OK) {
        st_err_prefix(err, "%s", path);
        goto out;
    }
    uint8_t *p = buf_extend(&b, need);
    if ((rc = st_pread_full(fd, p, need, (uint64_t)offset, err)) != ST_OK)
        goto out;
    const uint8_t *data;
    uint32_t len;
    rc = dv__frame(p, need, (size_t)offset, true, &data, &len, err);
    if (rc == ST_OK)
        rc = dv__dec_magic_vector(data, len, (size_t)offset + 4, d->cardinality, out, err);
    if (rc != ST_OK)
        st_err_prefix(err, "%s", path);
out:
    buf_free(&b);
    close(fd);
    return rc;
}

int delta_dv_load(const struct delta_dv_descriptor *d, const char *table_root,
                  const char *name_prefix, struct dv **out, struct st_err *err)
{
    *out = NULL;
    if (d->storage_type == 'i') {
        struct dv *v;
        int rc = dv_decode_delta_inline(d->path_or_inline_dv, (size_t)d->size_in_bytes, &v, err);
        if (rc != ST_OK)
            return rc;
        if (dv_cardinality(v) != (uint64_t)d->cardinality) {
            uint64_t card = dv_cardinality(v);
            dv_free(v);
            return st_errf(err, ST_ECORRUPT,
                           "inline DV holds %" PRIu64 " positions, but its cardinality is %" PRId64,
                           card, d->cardinality);
        }
        *out = v;
        return ST_OK;
    }
    char *path;
    int rc = delta_dv_resolve(d, table_root, name_prefix, &path, err);
    if (rc != ST_OK)
        return rc;
    rc = load_file(d, path, out, err);
    free(path);
    return rc;
}
