/* pgembed.c - the embedded PostgreSQL cluster of the default configuration. */
#include "pgembed.h"

#include "common/fsutil.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PG_PORT "5432"
#define SOCKET_PATH_MAX 107 /* sizeof(sun_path) - 1 */

struct pgembed {
    char *cluster_dir; /* real directory: holds pgdata/ and postgres.log */
    char *pgdata;
    char *socket_dir;
    char *pg_ctl;
    bool as_postgres; /* we are root: run PostgreSQL programs via runuser */
    int lock_fd;
};

char *pgembed_find_program(const char *name)
{
    const char *env = getenv("STRIKE_PG_BINDIR");
    if (env != NULL && *env) {
        char *p = st_path_join(env, name);
        if (access(p, X_OK) == 0)
            return p;
        free(p);
        return NULL;
    }
    /* Debian keeps server programs per major version; prefer 15, the tested one. */
    static const char *const versions[] = {"15", "16", "17", "18", "14", "13"};
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
        char *p = xasprintf("/usr/lib/postgresql/%s/bin/%s", versions[i], name);
        if (access(p, X_OK) == 0)
            return p;
        free(p);
    }
    const char *path = getenv("PATH");
    if (path == NULL)
        return NULL;
    char *copy = xstrdup(path), *save = NULL;
    for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
        char *p = st_path_join(dir, name);
        if (access(p, X_OK) == 0) {
            free(copy);
            return p;
        }
        free(p);
    }
    free(copy);
    return NULL;
}

static const char *runuser_path(void)
{
    static const char *const paths[] = {"/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        if (access(paths[i], X_OK) == 0)
            return paths[i];
    return NULL;
}

/*
 * Run argv (prefixed by "runuser -u postgres --" when as_postgres) with
 * stdout and stderr appended to `log_path`, and wait. Returns the exit
 * status, or -1 if it could not run.
 */
static int run(bool as_postgres, char *const argv[], const char *log_path)
{
    const char *full[32];
    int n = 0;
    if (as_postgres) {
        full[n++] = runuser_path();
        full[n++] = "-u";
        full[n++] = "postgres";
        full[n++] = "--";
    }
    for (int i = 0; argv[i] != NULL && n < 31; i++)
        full[n++] = argv[i];
    full[n] = NULL;
    if (full[0] == NULL)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = log_path ? open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)
                          : open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (fd >= 0 && log_path != NULL && as_postgres) {
            /* pg_ctl -l reopens the log by name as postgres: it must own it. */
            struct passwd *pw = getpwnam("postgres");
            if (pw != NULL && fchown(fd, pw->pw_uid, pw->pw_gid) != 0)
                _exit(126);
        }
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
        }
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, STDIN_FILENO);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execv(full[0], (char *const *)full);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* True if the postgres user can reach `dir` (every ancestor traversable). */
static bool postgres_can_reach(const char *dir)
{
    char *const argv[] = {"/usr/bin/test", "-x", (char *)dir, NULL};
    return run(true, argv, NULL) == 0;
}

static int chown_postgres(const char *path, struct st_err *err)
{
    struct passwd *pw = getpwnam("postgres");
    if (pw == NULL)
        return st_errf(err, ST_EIO,
                       "embedded catalog: running as root needs a 'postgres' user "
                       "(install postgresql-15, or pass --catalog)");
    if (chown(path, pw->pw_uid, pw->pw_gid) != 0)
        return st_errf(err, ST_EIO, "embedded catalog: chown %s: %s", path, strerror(errno));
    return ST_OK;
}

/* Read the postmaster pid from pgdata/postmaster.pid; 0 if none. */
static pid_t read_pidfile(const char *pgdata)
{
    char *path = st_path_join(pgdata, "postmaster.pid");
    FILE *f = fopen(path, "r");
    free(path);
    if (f == NULL)
        return 0;
    long pid = 0;
    if (fscanf(f, "%ld", &pid) != 1)
        pid = 0;
    fclose(f);
    return pid > 0 && pid < INT_MAX ? (pid_t)pid : 0;
}

/* True if `pid` is a live postgres whose working directory is `pgdata`. */
static bool is_our_postmaster(pid_t pid, const char *pgdata)
{
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return false;
    char link[64], cwd[PATH_MAX], real[PATH_MAX];
    snprintf(link, sizeof link, "/proc/%d/cwd", (int)pid);
    ssize_t n = readlink(link, cwd, sizeof cwd - 1);
    if (n <= 0)
        return false;
    cwd[n] = '\0';
    if (realpath(pgdata, real) == NULL)
        return false;
    return strcmp(cwd, real) == 0;
}

static bool wait_gone(pid_t pid, int seconds)
{
    for (int i = 0; i < seconds * 10; i++) {
        if (kill(pid, 0) != 0 && errno == ESRCH)
            return true;
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return false;
}

/* Make sure nothing from an earlier crash stands in the way of starting. */
static void clear_stale(struct pgembed *pg)
{
    pid_t pid = read_pidfile(pg->pgdata);
    if (pid == 0)
        return;
    if (is_our_postmaster(pid, pg->pgdata)) {
        log_warn("embedded catalog: a server from an earlier run is still up (pid %d); "
                 "stopping it",
                 (int)pid);
        char *log = st_path_join(pg->cluster_dir, "postgres.log");
        char *const argv[] = {pg->pg_ctl, "-D", pg->pgdata, "-m",   "fast",
                              "-w",       "-t", "30",       "stop", NULL};
        run(pg->as_postgres, argv, log);
        free(log);
        if (!wait_gone(pid, 30))
            kill(pid, SIGQUIT);
        wait_gone(pid, 5);
        return;
    }
    log_warn("embedded catalog: removing stale postmaster.pid (pid %d is not running it)",
             (int)pid);
    char *p = st_path_join(pg->pgdata, "postmaster.pid");
    unlink(p);
    free(p);
    p = st_path_join(pg->socket_dir, ".s.PGSQL." PG_PORT ".lock");
    unlink(p);
    free(p);
}

/*
 * The settings of a new cluster (docs/SCALE.md "Settings", measured by make bench-scale): a
 * random update of a big key index writes its heap page whole (a full-page image) the first
 * time after each checkpoint. wal_compression = lz4 makes those images about 3.5x smaller;
 * checkpoints 15 minutes apart (and the WAL to hold them) let more updates find their page
 * already imaged. shared_buffers stays small: the key index is read from the OS page cache
 * as fast at 20M keys (256MB and 2GB measured alike), and striked shares the machine.
 */
static int write_conf(struct pgembed *pg, struct st_err *err)
{
    char *path = st_path_join(pg->pgdata, "postgresql.conf");
    FILE *f = fopen(path, "a");
    if (f == NULL) {
        int rc = st_errf(err, ST_EIO, "embedded catalog: open %s: %s", path, strerror(errno));
        free(path);
        return rc;
    }
    fprintf(f,
            "\n# strike: embedded catalog settings\n"
            "listen_addresses = ''\n"
            "unix_socket_directories = '%s'\n"
            "unix_socket_permissions = 0700\n"
            "port = " PG_PORT "\n"
            "max_connections = 200\n"
            "shared_buffers = 256MB\n"
            "max_wal_size = 4GB\n"
            "checkpoint_timeout = 15min\n"
            "wal_compression = lz4\n"
            "logging_collector = off\n",
            pg->socket_dir);
    int rc = fclose(f) == 0 ? ST_OK : st_errf(err, ST_EIO, "embedded catalog: write %s", path);
    free(path);
    return rc;
}

static int initdb(struct pgembed *pg, struct st_err *err)
{
    char *initdb_prog = pgembed_find_program("initdb");
    if (initdb_prog == NULL)
        return st_errf(err, ST_EIO,
                       "embedded catalog: initdb not found (install postgresql-15, "
                       "set STRIKE_PG_BINDIR, or pass --catalog)");
    /* A half-made cluster from an interrupted first start is worthless: start over. */
    char *rm_argv_target = pg->pgdata;
    struct stat st;
    if (stat(rm_argv_target, &st) == 0) {
        char *const argv[] = {"/bin/rm", "-rf", rm_argv_target, NULL};
        run(false, argv, NULL);
    }
    log_info("embedded catalog: creating a PostgreSQL cluster in %s", pg->pgdata);
    char *log = st_path_join(pg->cluster_dir, "initdb.log");
    char *const argv[] = {initdb_prog, "-D", pg->pgdata, "-U",         "strike", "-A",
                          "trust",     "-E", "UTF8",     "--locale=C", NULL};
    int status = run(pg->as_postgres, argv, log);
    free(initdb_prog);
    if (status != 0) {
        int rc =
            st_errf(err, ST_EIO, "embedded catalog: initdb failed (exit %d); see %s", status, log);
        free(log);
        return rc;
    }
    free(log);
    return write_conf(pg, err);
}

static int ensure_database(const char *socket_dir, struct st_err *err)
{
    char *ci = xasprintf("host=%s port=" PG_PORT " user=strike dbname=postgres connect_timeout=10",
                         socket_dir);
    PGconn *c = PQconnectdb(ci);
    free(ci);
    int rc = ST_OK;
    if (PQstatus(c) != CONNECTION_OK) {
        rc = st_errf(err, ST_EUNAVAIL, "embedded catalog: cannot connect: %s", PQerrorMessage(c));
        PQfinish(c);
        return rc;
    }
    PGresult *r = PQexec(c, "SELECT 1 FROM pg_database WHERE datname = 'strike'");
    bool exists = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
    PQclear(r);
    if (!exists) {
        r = PQexec(c, "CREATE DATABASE strike");
        if (PQresultStatus(r) != PGRES_COMMAND_OK)
            rc = st_errf(err, ST_EIO, "embedded catalog: CREATE DATABASE: %s",
                         PQresultErrorMessage(r));
        PQclear(r);
    }
    PQfinish(c);
    return rc;
}

/* Where the cluster lives: DATA/catalog, or a symlinked fallback postgres can reach. */
static int choose_cluster_dir(struct pgembed *pg, const char *data_real, struct st_err *err)
{
    char *link = st_path_join(data_real, "catalog");
    struct stat st;
    if (lstat(link, &st) == 0 && S_ISLNK(st.st_mode)) {
        char real[PATH_MAX];
        if (realpath(link, real) == NULL) {
            int rc = st_errf(err, ST_EIO, "embedded catalog: %s is a broken symlink", link);
            free(link);
            return rc;
        }
        pg->cluster_dir = xstrdup(real);
        free(link);
        return ST_OK;
    }
    if (!pg->as_postgres || postgres_can_reach(data_real)) {
        pg->cluster_dir = link;
        return st_mkdirs(link, 0700, err);
    }
    uint8_t d[32];
    char hex[65];
    st_sha256(data_real, strlen(data_real), d);
    st_sha256_hex(d, hex);
    hex[16] = '\0';
    pg->cluster_dir = xasprintf("/var/lib/strike/clusters/%s", hex);
    log_warn("embedded catalog: user postgres cannot reach %s; the cluster lives in %s and %s "
             "links to it",
             data_real, pg->cluster_dir, link);
    int rc = st_mkdirs(pg->cluster_dir, 0755, err);
    if (rc == ST_OK && lstat(link, &st) != 0 && symlink(pg->cluster_dir, link) != 0)
        rc = st_errf(err, ST_EIO, "embedded catalog: symlink %s: %s", link, strerror(errno));
    if (rc == ST_OK)
        chmod(pg->cluster_dir, 0700);
    free(link);
    return rc;
}

int pgembed_start(const char *data_dir, struct pgembed **out, char **conninfo, struct st_err *err)
{
    *out = NULL;
    *conninfo = NULL;
    int rc = st_mkdirs(data_dir, 0755, err);
    if (rc != ST_OK)
        return rc;
    char data_real[PATH_MAX];
    if (realpath(data_dir, data_real) == NULL)
        return st_errf(err, ST_EIO, "cannot resolve %s: %s", data_dir, strerror(errno));

    struct pgembed *pg = xcalloc(1, sizeof *pg);
    pg->lock_fd = -1;
    pg->as_postgres = geteuid() == 0;
    if (pg->as_postgres && runuser_path() == NULL) {
        rc = st_errf(err, ST_EIO, "embedded catalog: running as root needs runuser(1)");
        goto fail;
    }

    char *lock_path = st_path_join(data_real, ".striked-catalog.lock");
    pg->lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (pg->lock_fd < 0 || flock(pg->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        rc = st_errf(err, ST_EIO,
                     "embedded catalog: %s is in use by another striked (lock %s); give each "
                     "server its own --data, or share a --catalog",
                     data_real, lock_path);
        free(lock_path);
        goto fail;
    }
    free(lock_path);

    pg->pg_ctl = pgembed_find_program("pg_ctl");
    if (pg->pg_ctl == NULL) {
        rc = st_errf(err, ST_EIO,
                     "embedded catalog: pg_ctl not found (install postgresql-15, "
                     "set STRIKE_PG_BINDIR, or pass --catalog)");
        goto fail;
    }
    if ((rc = choose_cluster_dir(pg, data_real, err)) != ST_OK)
        goto fail;
    if (pg->as_postgres && (rc = chown_postgres(pg->cluster_dir, err)) != ST_OK)
        goto fail;
    chmod(pg->cluster_dir, 0700);
    pg->pgdata = st_path_join(pg->cluster_dir, "pgdata");

    if (strlen(pg->cluster_dir) + strlen("/.s.PGSQL." PG_PORT) <= SOCKET_PATH_MAX) {
        pg->socket_dir = xstrdup(pg->cluster_dir);
    } else {
        /* Unix socket paths are short; put the socket in a private /tmp directory. */
        uint8_t d[32];
        char hex[65];
        st_sha256(pg->cluster_dir, strlen(pg->cluster_dir), d);
        st_sha256_hex(d, hex);
        hex[12] = '\0';
        pg->socket_dir = xasprintf("/tmp/strike-pg-%s", hex);
        if ((rc = st_mkdirs(pg->socket_dir, 0700, err)) != ST_OK)
            goto fail;
        if (pg->as_postgres && (rc = chown_postgres(pg->socket_dir, err)) != ST_OK)
            goto fail;
    }

    char *version_file = st_path_join(pg->pgdata, "PG_VERSION");
    bool exists = access(version_file, F_OK) == 0;
    free(version_file);
    if (!exists) {
        if ((rc = initdb(pg, err)) != ST_OK)
            goto fail;
    } else {
        clear_stale(pg);
    }

    uint64_t t0 = (uint64_t)time(NULL);
    char *log = st_path_join(pg->cluster_dir, "postgres.log");
    char *const argv[] = {pg->pg_ctl, "-D",  pg->pgdata, "-l",    log, "-w",
                          "-t",       "120", "-s",       "start", NULL};
    int status = run(pg->as_postgres, argv, log);
    if (status != 0) {
        rc = st_errf(err, ST_EIO, "embedded catalog: pg_ctl start failed (exit %d); see %s", status,
                     log);
        free(log);
        goto fail;
    }
    free(log);
    log_info("embedded catalog: PostgreSQL running in %s (socket %s, %llus)", pg->pgdata,
             pg->socket_dir, (unsigned long long)((uint64_t)time(NULL) - t0));
    if ((rc = ensure_database(pg->socket_dir, err)) != ST_OK) {
        pgembed_stop(pg);
        return rc;
    }
    *conninfo = xasprintf("host=%s port=" PG_PORT " user=strike dbname=strike", pg->socket_dir);
    *out = pg;
    return ST_OK;
fail:
    pgembed_stop(pg);
    return rc;
}

void pgembed_stop(struct pgembed *pg)
{
    if (pg == NULL)
        return;
    if (pg->pgdata != NULL && pg->pg_ctl != NULL) {
        pid_t pid = read_pidfile(pg->pgdata);
        if (pid != 0 && is_our_postmaster(pid, pg->pgdata)) {
            char *log = st_path_join(pg->cluster_dir, "postgres.log");
            char *const argv[] = {pg->pg_ctl, "-D", pg->pgdata, "-m",   "fast", "-w",
                                  "-t",       "30", "-s",       "stop", NULL};
            int status = run(pg->as_postgres, argv, log);
            free(log);
            if (status != 0 || !wait_gone(pid, 10)) {
                log_warn("embedded catalog: pg_ctl stop failed; sending SIGQUIT to %d", (int)pid);
                kill(pid, SIGQUIT);
                wait_gone(pid, 5);
            }
            log_info("embedded catalog: PostgreSQL stopped");
        }
    }
    if (pg->lock_fd >= 0)
        close(pg->lock_fd);
    free(pg->cluster_dir);
    free(pg->pgdata);
    free(pg->socket_dir);
    free(pg->pg_ctl);
    free(pg);
}
