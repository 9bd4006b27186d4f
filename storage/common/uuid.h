/*
 * uuid.h - RFC 9562 UUIDs: version 7 (time-ordered, for blob names, so that
 * a directory listing sorts by creation time) and version 4.
 */
#ifndef STRIKE_UUID_H
#define STRIKE_UUID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ST_UUID_STR_LEN 36

void st_uuid_v7(uint8_t out[16]);
void st_uuid_v4(uint8_t out[16]);
/* Lower-case 8-4-4-4-12 form, NUL-terminated (37 bytes). */
void st_uuid_format(const uint8_t u[16], char out[ST_UUID_STR_LEN + 1]);
/* Parse the 8-4-4-4-12 form (either case); false if malformed. */
bool st_uuid_parse(const char *s, uint8_t out[16]);

/* Fill with cryptographically random bytes (getrandom); aborts on failure. */
void st_random_bytes(void *p, size_t n);

#endif
