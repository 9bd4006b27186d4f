/*
 * s3raw.h - requests to the s3 fixture's moto_server that striked itself
 * never sends: an upload begun and left unfinished (as a writer that died
 * mid-upload leaves it), the list of a bucket's unfinished uploads, a bucket
 * with versioning. Unsigned (moto accepts them); path-style URLs
 * ENDPOINT/BUCKET/KEY. Each aborts the test program when moto does not
 * answer as S3 would.
 */
#ifndef STRIKE_S3RAW_H
#define STRIKE_S3RAW_H

#include <stddef.h>

/* Begin a multipart upload of `key` and send one part (n bytes); never complete it. Returns the
   upload id (caller frees). */
char *s3raw_unfinished_upload(const char *endpoint, const char *bucket, const char *key,
                              const void *part, size_t n);
/* How many unfinished uploads the bucket holds whose key starts with prefix. */
int s3raw_count_uploads(const char *endpoint, const char *bucket, const char *prefix);
/* Create a bucket (if needed) and set its versioning: "Enabled" or "Suspended". */
void s3raw_versioned_bucket(const char *endpoint, const char *bucket, const char *status);

#endif
