/*
 * timeutil.h - clocks and RFC 3339 timestamps (microseconds since the epoch, UTC).
 */
#ifndef STRIKE_TIMEUTIL_H
#define STRIKE_TIMEUTIL_H

#include <stdbool.h>
#include <stdint.h>

#define ST_RFC3339_MAX 40

int64_t st_now_us(void);   /* wall clock, microseconds since the epoch */
uint64_t st_mono_ns(void); /* monotonic clock, nanoseconds */

/* Format as 2026-11-29T13:40:45.123456Z (always 6 fraction digits, 'Z'). */
void st_format_rfc3339(int64_t us, char out[ST_RFC3339_MAX]);

/*
 * Parse an RFC 3339 date-time: YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM),
 * 't'/'T'/' ' as separator, 'z' or 'Z'. Digits of the fraction finer than a
 * microsecond are truncated (as Iceberg reads a timestamp literal), so that
 * nanosecond timestamps from CDC sources are accepted. Returns false on any
 * malformation or overflow.
 */
bool st_parse_rfc3339(const char *s, int64_t *us);

/* The proleptic Gregorian date of a day count since 1970-01-01 (any sign). */
void st_civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d);

/* A timestamp's UTC calendar fields (any sign: floor division throughout). */
struct st_civil {
    int64_t year;
    unsigned month, day, hour, minute, second, micros;
};
void st_civil_from_us(int64_t us, struct st_civil *c);

/* Parse a duration: digits with s, m, h or d ("90s", "1h"); bare digits are seconds. */
bool st_parse_duration(const char *s, int64_t *seconds);

#endif
