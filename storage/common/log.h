/*
 * log.h - structured logs: one JSON object per line on stderr.
 *
 *   {"ts":"2026-11-29T13:40:45.123456Z","level":"info","msg":"listening","rid":"..."}
 *
 * Each line goes out in a single write(2), so lines from several threads do
 * not interleave. The request id is per thread: a handler sets it when it
 * starts work on a request and clears it when done. Never call these from a
 * signal handler.
 */
#ifndef STRIKE_LOG_H
#define STRIKE_LOG_H

enum st_log_level { ST_LOG_DEBUG = 0, ST_LOG_INFO = 1, ST_LOG_WARN = 2, ST_LOG_ERROR = 3 };

/* Minimum level written; from STRIKE_LOG_LEVEL (debug|info|warn|error) at first use. */
void st_log_set_level(enum st_log_level level);
enum st_log_level st_log_get_level(void);

/* The calling thread's request id (copied; NULL clears it). */
void st_log_set_rid(const char *rid);
const char *st_log_rid(void);

void st_log(enum st_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * A message with extra string fields: key, value pairs ending with NULL.
 *   st_log_kv(ST_LOG_INFO, "commit", "table", name, "seq", seqstr, NULL);
 */
void st_log_kv(enum st_log_level level, const char *msg, ...);

/*
 * An audit record: st_log_kv's fields plus "audit":true, at level info but
 * written whatever the level (docs: README "Security").
 */
void st_log_audit(const char *msg, ...);

#define log_debug(...) st_log(ST_LOG_DEBUG, __VA_ARGS__)
#define log_info(...) st_log(ST_LOG_INFO, __VA_ARGS__)
#define log_warn(...) st_log(ST_LOG_WARN, __VA_ARGS__)
#define log_error(...) st_log(ST_LOG_ERROR, __VA_ARGS__)

#endif
