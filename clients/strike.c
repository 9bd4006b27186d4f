/* strike.c - the `strike` CLI: dispatch to a subcommand. */
#include "cli.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_dv(int argc, char **argv);      /* cli_dv.c */
int cli_parquet(int argc, char **argv); /* cli_parquet.c */
int cli_fsck(int argc, char **argv);    /* cli_admin.c */
int cli_gc(int argc, char **argv);      /* cli_admin.c */
int cli_token(int argc, char **argv);   /* cli_token.c */
/* the client commands (cli_client.c, cli_load.c) */
int cli_tables(int argc, char **argv);
int cli_load(int argc, char **argv);
int cli_changes(int argc, char **argv);
int cli_scan(int argc, char **argv);
int cli_delete(int argc, char **argv);
int cli_plan(int argc, char **argv);
int cli_dvget(int argc, char **argv);
int cli_snapshots(int argc, char **argv);
int cli_compact(int argc, char **argv);
int cli_expire(int argc, char **argv);
int cli_erase(int argc, char **argv);
int cli_erasures(int argc, char **argv);
int cli_health(int argc, char **argv);

/* `strike dv get ...` asks the server; the other `strike dv` commands are codecs. */
static int dv_dispatch(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "get") == 0)
        return cli_dvget(argc, argv);
    return cli_dv(argc, argv);
}

static const char *const tables_subs[] = {"ls", "list", "show", "create", "drop", NULL};
static const char *const dv_subs[] = {"get", "decode", "encode", NULL};
static const char *const parquet_subs[] = {"meta", "cat", "write", NULL};
static const char *const token_subs[] = {"new", NULL};

const struct cli_command cli_commands[] = {
    {"tables", "list, show, create and drop tables (server)", cli_tables, tables_subs},
    {"load", "load rows from NDJSON, CSV or Parquet, resumable (server)", cli_load, NULL},
    {"changes", "post upserts and deletes (strike or Debezium NDJSON) (server)", cli_changes, NULL},
    {"scan", "print live rows, with a --where filter (server)", cli_scan, NULL},
    {"delete", "delete the rows a --where filter matches (server)", cli_delete, NULL},
    {"plan", "the data files and deletion vectors of a table (server)", cli_plan, NULL},
    {"snapshots", "the commit history of a table (server)", cli_snapshots, NULL},
    {"compact", "rewrite files with many deletes or few rows (server)", cli_compact, NULL},
    {"expire", "drop old snapshots and unreferenced files (server)", cli_expire, NULL},
    {"erase", "erase rows physically and print the receipt (server)", cli_erase, NULL},
    {"erasures", "list or show erasure receipts (server)", cli_erasures, NULL},
    {"health", "deleted fractions, small files, maintenance advice (server)", cli_health, NULL},
    {"dv", "get a file's DV from the server (dv get); decode and encode DVs", dv_dispatch, dv_subs},
    {"parquet", "inspect, print and write Parquet files (meta, cat, write)", cli_parquet,
     parquet_subs},
    {"fsck", "check that every blob the catalog references exists and decodes", cli_fsck, NULL},
    {"gc", "delete unreferenced blobs older than a grace period", cli_gc, NULL},
    {"token", "create a bearer token for striked --tokens (token new --scope S --tables GLOB)",
     cli_token, token_subs},
    {NULL, NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: strike COMMAND [ARGS]\n\ncommands:\n");
    for (const struct cli_command *c = cli_commands; c->name != NULL; c++)
        fprintf(out, "  %-10s %s\n", c->name, c->summary);
    fprintf(out, "\n'strike COMMAND --help' describes a command.\n");
}

int main(int argc, char **argv)
{
    /* global options of the client commands may come before the command:
     * move them after it (cli_client.c takes them anywhere) */
    int lead = 1;
    while (lead < argc && argv[lead][0] == '-' && strcmp(argv[lead], "--help") != 0 &&
           strcmp(argv[lead], "-h") != 0 && strcmp(argv[lead], "--version") != 0 &&
           strcmp(argv[lead], "--list-commands") != 0) {
        bool flag = strcmp(argv[lead], "-q") == 0 || strcmp(argv[lead], "--quiet") == 0;
        lead += flag ? 1 : 2;
    }
    if (lead > 1 && lead < argc) {
        char *cmd = argv[lead];
        memmove(argv + 2, argv + 1, (size_t)(lead - 1) * sizeof *argv);
        argv[1] = cmd;
        /* argv[2..lead] now hold the options: rotate them to the end */
        int nopt = lead - 1;
        char **tmp = malloc((size_t)nopt * sizeof *tmp);
        memcpy(tmp, argv + 2, (size_t)nopt * sizeof *tmp);
        memmove(argv + 2, argv + 2 + nopt, (size_t)(argc - 2 - nopt) * sizeof *argv);
        memcpy(argv + argc - nopt, tmp, (size_t)nopt * sizeof *tmp);
        free(tmp);
    } else if (lead > 1) {
        usage(stderr);
        return 2;
    }
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--list-commands") == 0) { /* for the tests: every command and sub */
        for (const struct cli_command *c = cli_commands; c->name != NULL; c++) {
            printf("%s\n", c->name);
            for (const char *const *s = c->subs; s != NULL && *s != NULL; s++)
                printf("%s %s\n", c->name, *s);
        }
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("strike %s\n", STRIKE_VERSION);
        return 0;
    }
    for (const struct cli_command *c = cli_commands; c->name != NULL; c++) {
        if (strcmp(argv[1], c->name) == 0)
            return c->run(argc - 1, argv + 1);
    }
    fprintf(stderr, "strike: unknown command '%s' (see strike --help)\n", argv[1]);
    return 2;
}
