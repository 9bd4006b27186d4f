/* uuid.c - RFC 9562 UUIDs. */
#include "uuid.h"
#include "common/hex.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

void st_random_bytes(void *p, size_t n)
{
    uint8_t *b = p;
    while (n > 0) {
        ssize_t r = getrandom(b, n, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            abort();
        }
        b += r;
        n -= (size_t)r;
    }
}

void st_uuid_v7(uint8_t out[16])
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    st_random_bytes(out + 6, 10);
    for (int i = 0; i < 6; i++)
        out[i] = (uint8_t)(ms >> (40 - 8 * i));
    out[6] = (uint8_t)(0x70 | (out[6] & 0x0f));
    out[8] = (uint8_t)(0x80 | (out[8] & 0x3f));
}

void st_uuid_v4(uint8_t out[16])
{
    st_random_bytes(out, 16);
    out[6] = (uint8_t)(0x40 | (out[6] & 0x0f));
    out[8] = (uint8_t)(0x80 | (out[8] & 0x3f));
}

void st_uuid_format(const uint8_t u[16], char out[ST_UUID_STR_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    char *p = out;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *p++ = '-';
        *p++ = hex[u[i] >> 4];
        *p++ = hex[u[i] & 15];
    }
    *p = '\0';
}

bool st_uuid_parse(const char *s, uint8_t out[16])
{
    if (strlen(s) != ST_UUID_STR_LEN)
        return false;
    int j = 0;
    for (int i = 0; i < ST_UUID_STR_LEN;) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-')
                return false;
            i++;
            continue;
        }
        int hi = st_hex_value(s[i]), lo = st_hex_value(s[i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        out[j++] = (uint8_t)(hi << 4 | lo);
        i += 2;
    }
    return true;
}
