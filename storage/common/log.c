/* log.c - structured JSON logs on stderr. */
#include "log.h"
#include "buf.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static atomic_int g_level = -1;
static _Thread_local char t_rid[64];

static enum st_log_level level_from_env(void)
{
    const char *s = getenv("STRIKE_LOG_LEVEL");
    if (s == NULL)
        return ST_LOG_INFO;
    if (strcasecmp(s, "debug") == 0)
        return ST_LOG_DEBUG;
    if (strcasecmp(s, "warn") == 0 || strcasecmp(s, "warning") == 0)
        return ST_LOG_WARN;
    if (strcasecmp(s, "error") == 0)
        return ST_LOG_ERROR;
    return ST_LOG_INFO;
}

enum st_log_level st_log_get_level(void)
{
    int l = atomic_load(&g_level);
    if (l < 0) {
        l = (int)level_from_env();
        atomic_store(&g_level, l);
    }
    return (enum st_log_level)l;
}

void st_log_set_level(enum st_log_level level)
{
    atomic_store(&g_level, (int)level);
}

void st_log_set_rid(const char *rid)
{
    if (rid == NULL) {
        t_rid[0] = '\0';
        return;
    }
    size_t n = strnlen(rid, sizeof t_rid - 1); /* as snprintf("%s"), without its cost per call */
    memcpy(t_rid, rid, n);
    t_rid[n] = '\0';
}

const char *st_log_rid(void)
{
    return t_rid[0] ? t_rid : NULL;
}

static const char *level_name(enum st_log_level l)
{
    switch (l) {
    case ST_LOG_DEBUG:
        return "debug";
    case ST_LOG_INFO:
        return "info";
    case ST_LOG_WARN:
        return "warn";
    default:
        return "error";
    }
}

static void begin(struct buf *b, enum st_log_level level)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    buf_printf(b, "{\"ts\":\"%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ\",\"level\":\"%s\",",
               tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
               ts.tv_nsec / 1000, level_name(level));
}

static void finish(struct buf *b)
{
    if (t_rid[0]) {
        buf_append_str(b, ",\"rid\":\"");
        buf_append_json_escaped(b, t_rid);
        buf_append_str(b, "\"");
    }
    buf_append_str(b, "}\n");
    size_t off = 0;
    while (off < b->len) {
        ssize_t n = write(STDERR_FILENO, b->data + off, b->len - off);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    buf_free(b);
}

void st_log(enum st_log_level level, const char *fmt, ...)
{
    if (level < st_log_get_level())
        return;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct buf b = BUF_INIT;
    begin(&b, level);
    buf_append_str(&b, "\"msg\":\"");
    buf_append_json_escaped(&b, msg);
    buf_append_str(&b, "\"");
    finish(&b);
}

static void log_kv(enum st_log_level level, bool audit, const char *msg, va_list ap)
{
    struct buf b = BUF_INIT;
    begin(&b, level);
    buf_append_str(&b, "\"msg\":\"");
    buf_append_json_escaped(&b, msg);
    buf_append_str(&b, "\"");
    if (audit)
        buf_append_str(&b, ",\"audit\":true");
    for (;;) {
        const char *k = va_arg(ap, const char *);
        if (k == NULL)
            break;
        const char *v = va_arg(ap, const char *);
        buf_append_str(&b, ",\"");
        buf_append_json_escaped(&b, k);
        buf_append_str(&b, "\":\"");
        buf_append_json_escaped(&b, v ? v : "");
        buf_append_str(&b, "\"");
    }
    finish(&b);
}

void st_log_kv(enum st_log_level level, const char *msg, ...)
{
    if (level < st_log_get_level())
        return;
    va_list ap;
    va_start(ap, msg);
    log_kv(level, false, msg, ap);
    va_end(ap);
}

void st_log_audit(const char *msg, ...)
{
    va_list ap;
    va_start(ap, msg);
    log_kv(ST_LOG_INFO, true, msg, ap);
    va_end(ap);
}
