/* strike.c - the `strike` CLI: dispatch to a subcommand. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

int cli_dv(int argc, char **argv);      /* cli_dv.c */
int cli_parquet(int argc, char **argv); /* cli_parquet.c */
int cli_fsck(int argc, char **argv);    /* cli_admin.c */
int cli_gc(int argc, char **argv);      /* cli_admin.c */
int cli_token(int argc, char **argv);   /* cli_token.c */
const struct cli_command cli_commands[] = {
    {"dv", "decode and encode deletion vectors (Roaring, Iceberg, Puffin, Delta, Paimon)", cli_dv},
    {"parquet", "inspect, print and write Parquet files (meta, cat, write)", cli_parquet},
    {"fsck", "check that every blob the catalog references exists and decodes", cli_fsck},
    {"gc", "delete unreferenced blobs older than a grace period", cli_gc},
    {"token", "create a bearer token for striked --tokens (token new --scope S --tables GLOB)",
     cli_token},
    {NULL, NULL, NULL},
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
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
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
