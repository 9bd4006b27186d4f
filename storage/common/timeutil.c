/* timeutil.c - clocks and RFC 3339 timestamps. */
#include "timeutil.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

int64_t st_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

uint64_t st_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? (unsigned)-3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

void st_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    *y = (int64_t)yoe + era * 400;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y += *m <= 2;
}

void st_civil_from_us(int64_t us, struct st_civil *c)
{
    int64_t secs = us / 1000000, frac = us % 1000000;
    if (frac < 0) {
        frac += 1000000;
        secs -= 1;
    }
    int64_t days = secs / 86400, rem = secs % 86400;
    if (rem < 0) {
        rem += 86400;
        days -= 1;
    }
    st_civil_from_days(days, &c->year, &c->month, &c->day);
    c->hour = (unsigned)(rem / 3600);
    c->minute = (unsigned)(rem / 60 % 60);
    c->second = (unsigned)(rem % 60);
    c->micros = (unsigned)frac;
}

void st_format_rfc3339(int64_t us, char out[ST_RFC3339_MAX])
{
    struct st_civil c;
    st_civil_from_us(us, &c);
    snprintf(out, ST_RFC3339_MAX,
             c.year >= 0 && c.year <= 9999 ? "%04lld-%02u-%02uT%02u:%02u:%02u.%06uZ"
                                           : "%+lld-%02u-%02uT%02u:%02u:%02u.%06uZ",
             (long long)c.year, c.month, c.day, c.hour, c.minute, c.second, c.micros);
}

static bool digits(const char **s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*s)[i];
        if (c < '0' || c > '9')
            return false;
        v = v * 10 + (c - '0');
    }
    *s += n;
    *out = v;
    return true;
}

bool st_parse_rfc3339(const char *s, int64_t *us)
{
    int y, mo, d, h, mi, se;
    if (!digits(&s, 4, &y) || *s++ != '-' || !digits(&s, 2, &mo) || *s++ != '-' ||
        !digits(&s, 2, &d))
        return false;
    if (*s != 'T' && *s != 't' && *s != ' ')
        return false;
    s++;
    if (!digits(&s, 2, &h) || *s++ != ':' || !digits(&s, 2, &mi) || *s++ != ':' ||
        !digits(&s, 2, &se))
        return false;
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || se > 60)
        return false;
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo == 2 && d == 29 && !leap)
        return false;
    if (se == 60)
        se = 59; /* a leap second reads as the second before it */
    int64_t frac = 0;
    if (*s == '.') {
        s++;
        int n = 0;
        while (*s >= '0' && *s <= '9') {
            if (n < 6) /* digits finer than a microsecond are truncated */
                frac = frac * 10 + (*s - '0');
            n++;
            s++;
        }
        if (n == 0)
            return false;
        for (int i = n; i < 6; i++)
            frac *= 10;
    }
    int64_t offset = 0;
    if (*s == 'Z' || *s == 'z') {
        s++;
    } else if (*s == '+' || *s == '-') {
        int sign = *s == '-' ? -1 : 1, oh, om;
        s++;
        if (!digits(&s, 2, &oh) || *s++ != ':' || !digits(&s, 2, &om) || oh > 23 || om > 59)
            return false;
        offset = sign * (oh * 3600 + om * 60);
    } else {
        return false;
    }
    if (*s != '\0')
        return false;
    int64_t days = days_from_civil(y, (unsigned)mo, (unsigned)d);
    int64_t secs = days * 86400 + h * 3600 + mi * 60 + se - offset;
    *us = secs * 1000000 + frac;
    return true;
}

bool st_parse_duration(const char *s, int64_t *seconds)
{
    if (*s < '0' || *s > '9')
        return false;
    uint64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    uint64_t mul = 1;
    if (*s == 's')
        s++;
    else if (*s == 'm')
        mul = 60, s++;
    else if (*s == 'h')
        mul = 3600, s++;
    else if (*s == 'd')
        mul = 86400, s++;
    if (*s != '\0' || v > (uint64_t)INT64_MAX / mul)
        return false;
    *seconds = (int64_t)(v * mul);
    return true;
}
