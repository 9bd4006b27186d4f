/* err.c - status codes and error details. */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

__attribute__((format(printf, 3, 0))) static int vrecord(struct st_err *e, int code,
                                                         const char *fmt, va_list ap)
{
    if (e == NULL)
        return code;
    e->code = code;
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    return code;
}

int st_errf(struct st_err *e, int code, const char *fmt, ...)
{
    if (e != NULL && e->code != ST_OK)
        return code;
    va_list ap;
    va_start(ap, fmt);
    vrecord(e, code, fmt, ap);
    va_end(ap);
    return code;
}

int st_errf_replace(struct st_err *e, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vrecord(e, code, fmt, ap);
    va_end(ap);
    return code;
}

int st_err_prefix(struct st_err *e, const char *fmt, ...)
{
    if (e == NULL)
        return ST_EINTERNAL;
    char prefix[ST_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    /* Compose in a buffer big enough for both, then keep what fits. */
    char joined[2 * ST_ERR_MSG_MAX + 2];
    size_t np = strnlen(prefix, ST_ERR_MSG_MAX), nm = strnlen(e->msg, ST_ERR_MSG_MAX);
    memcpy(joined, prefix, np);
    memcpy(joined + np, ": ", 2);
    memcpy(joined + np + 2, e->msg, nm);
    size_t n = np + 2 + nm;
    if (n >= sizeof e->msg)
        n = sizeof e->msg - 1;
    memcpy(e->msg, joined, n);
    e->msg[n] = '\0';
    return e->code;
}

void st_err_clear(struct st_err *e)
{
    if (e != NULL) {
        e->code = ST_OK;
        e->msg[0] = '\0';
    }
}

const char *st_strerror(int code)
{
    switch (code) {
#define ST_X_NAME(c, value, name)                                                                  \
    case c:                                                                                        \
        return name;
        ST_STATUS_TABLE(ST_X_NAME)
#undef ST_X_NAME
    default:
        return "unknown error";
    }
}
