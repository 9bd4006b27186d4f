/*
 * test_http_render.c - an erasure's receipt as HTTP answers it
 * (server/http_render.c, docs/API.md "Maintenance"): the exact bytes
 * striked answered when the engine stored and returned the receipt as JSON
 * text (the member order, null for rewrite_seq and verified_at, each
 * check's counts before its name and verdict), {} for an erasure that has
 * recorded nothing yet, and a page of receipts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "http_int.h"

static void set_check(struct engine_erasure_check *c, const char *name, bool passed, const char *f1,
                      int64_t n1, const char *f2, int64_t n2)
{
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->passed = passed;
    snprintf(c->figures[0].name, sizeof c->figures[0].name, "%s", f1);
    c->figures[0].n = n1;
    snprintf(c->figures[1].name, sizeof c->figures[1].name, "%s", f2);
    c->figures[1].n = n2;
    c->nfigures = 2;
}

/* A verified receipt, as striked 973ddbd answered it (a GET of the same erasure). */
static void verified(struct engine_erasure *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->id, sizeof r->id, "01a23d1d-29b5-741e-9552-5a6581d3e324");
    r->recorded = true;
    snprintf(r->table, sizeof r->table, "p");
    snprintf(r->status, sizeof r->status, "verified");
    snprintf(r->key_digest, sizeof r->key_digest,
             "sha256:d63db438fcbf1e1342d9dd46da7d5dc00f4c248236009080f556bba049e23c7f");
    r->keys = 1;
    r->rows_erased = 1;
    r->has_row_versions_purged = true;
    r->row_versions_purged = 2;
    r->delete_seq = 2;
    r->has_rewrite_seq = true;
    r->rewrite_seq = 3;
    r->expired_snapshots = 3;
    r->files_rewritten = 1;
    r->files_deleted = 1;
    r->bytes_deleted = 412;
    set_check(&r->checks[0], "data_files", true, "files_decoded", 1, "files_holding_erased", 0);
    snprintf(r->checks[0].figures[2].name, sizeof r->checks[0].figures[2].name,
             "rows_written_after_delete");
    r->checks[0].nfigures = 3;
    set_check(&r->checks[1], "key_index", true, "keys_checked", 1, "keys_from_before_delete", 0);
    set_check(&r->checks[2], "column_statistics", true, "bounds_checked", 0, "bounds_erased", 0);
    set_check(&r->checks[3], "orphan_blobs", true, "orphans_examined", 0, "orphans_deleted", 0);
    r->nchecks = 4;
    r->verified_us = 1796321651220149; /* 2026-12-03T18:14:11.220149Z */
}

static const char VERIFIED[] =
    "{\"id\":\"01a23d1d-29b5-741e-9552-5a6581d3e324\",\"table\":\"p\",\"status\":\"verified\","
    "\"key_digest\":\"sha256:d63db438fcbf1e1342d9dd46da7d5dc00f4c248236009080f556bba049e23c7f\","
    "\"keys\":1,\"rows_erased\":1,\"row_versions_purged\":2,\"delete_seq\":2,\"rewrite_seq\":3,"
    "\"expired_snapshots\":3,"
    "\"files_rewritten\":1,\"files_deleted\":1,\"bytes_deleted\":412,\"checks\":[{\"files_"
    "decoded\":1,\"files_holding_erased\":0,\"rows_written_after_delete\":0,\"check\":\"data_"
    "files\",\"passed\":true},{\"keys_checked\":1,\"keys_from_before_delete\":0,\"check\":\"key_"
    "index\",\"passed\":true},{\"bounds_checked\":0,\"bounds_erased\":0,\"check\":\"column_"
    "statistics\",\"passed\":true},{\"orphans_examined\":0,\"orphans_deleted\":0,\"check\":"
    "\"orphan_blobs\",\"passed\":true}],\"verified_at\":\"2026-12-03T18:14:11.220149Z\"}";

static void test_verified_receipt(void **state)
{
    (void)state;
    struct engine_erasure r;
    verified(&r);
    char *s = http__erasure_json(&r);
    assert_string_equal(s, VERIFIED);
    free(s);
}

/* A receipt of a running erasure after its delete: nothing rewritten or verified yet (null),
   no check yet; a check with a note; a failed check. */
static void test_running_and_failed(void **state)
{
    (void)state;
    struct engine_erasure r;
    verified(&r);
    snprintf(r.status, sizeof r.status, "running");
    r.has_rewrite_seq = false;
    r.rewrite_seq = 0;
    r.nchecks = 0;
    r.verified_us = 0;
    char *s = http__erasure_json(&r);
    assert_non_null(strstr(s, ",\"rewrite_seq\":null,"));
    assert_non_null(strstr(s, ",\"checks\":[],\"verified_at\":null}"));
    assert_non_null(strstr(s, "\"status\":\"running\""));
    free(s);
    /* a receipt stored before the count of purged row versions existed */
    verified(&r);
    r.has_row_versions_purged = false;
    r.row_versions_purged = 0;
    s = http__erasure_json(&r);
    assert_non_null(strstr(s, ",\"rows_erased\":1,\"row_versions_purged\":null,"));
    free(s);
    verified(&r);
    snprintf(r.status, sizeof r.status, "failed");
    r.verified_us = 0;
    memset(&r.checks[1], 0, sizeof r.checks[1]);
    snprintf(r.checks[1].name, sizeof r.checks[1].name, "key_index");
    r.checks[1].passed = true;
    r.checks[1].nfigures = 1;
    snprintf(r.checks[1].figures[0].name, sizeof r.checks[1].figures[0].name, "note");
    r.checks[1].figures[0].is_text = true;
    snprintf(r.checks[1].figures[0].text, sizeof r.checks[1].figures[0].text,
             "the table has no primary key");
    r.checks[3].passed = false;
    s = http__erasure_json(&r);
    assert_non_null(
        strstr(s, "{\"note\":\"the table has no primary key\",\"check\":\"key_index\",\"passed\":"
                  "true}"));
    assert_non_null(
        strstr(s, "\"check\":\"orphan_blobs\",\"passed\":false}],\"verified_at\":null}"));
    free(s);
}

/* An erasure that has recorded nothing yet is {}; a page of receipts. */
static void test_empty_and_list(void **state)
{
    (void)state;
    struct engine_erasure r[2];
    memset(&r[0], 0, sizeof r[0]);
    snprintf(r[0].id, sizeof r[0].id, "01a23d1d-0000-7000-8000-000000000000");
    char *s = http__erasure_json(&r[0]);
    assert_string_equal(s, "{}");
    free(s);
    verified(&r[1]);
    s = http__erasures_json(r, 2, "01a23d1d-29b5-741e-9552-5a6581d3e324");
    char want[2048];
    snprintf(want, sizeof want,
             "{\"erasures\":[{},%s],\"next\":\"01a23d1d-29b5-741e-9552-5a6581d3e324\"}", VERIFIED);
    assert_string_equal(s, want);
    free(s);
    s = http__erasures_json(NULL, 0, "");
    assert_string_equal(s, "{\"erasures\":[],\"next\":null}");
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verified_receipt),
        cmocka_unit_test(test_running_and_failed),
        cmocka_unit_test(test_empty_and_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
