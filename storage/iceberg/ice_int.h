/*
 * ice_int.h - what iceberg.c (types, values, URIs), ice_manifest.c
 * (manifests and manifest lists written) and ice_read.c (manifests read)
 * share.
 */
#ifndef STRIKE_ICE_INT_H
#define STRIKE_ICE_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "iceberg.h"

/* The statistics maps of data_file, in the order they are written. */
enum ice__stat_kind {
    ICE__STAT_VALUES,
    ICE__STAT_NULLS,
    ICE__STAT_NANS,
    ICE__STAT_LOWER,
    ICE__STAT_UPPER,
    ICE__STAT_N
};

/* "data" or "deletes": the manifest header's word for a content. */
const char *ice__content_name(enum ice_content c);
/* Whether s is a full URI of a file system: a scheme (RFC 3986: ALPHA *( ALPHA / DIGIT / "+" /
   "-" / "." )), a colon, a slash ("file:/...", "s3://..."). */
bool ice__has_scheme(const char *s);

#endif
