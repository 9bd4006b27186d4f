/*
 * cli_client.h - shared by the client commands (cli_client.c, cli_load.c):
 * the global options, output, and the map from libstrike codes to exit codes.
 */
#ifndef STRIKE_CLI_CLIENT_H
#define STRIKE_CLI_CLIENT_H

#include "cli.h"
#include "strike_client.h"

#include <stdbool.h>

enum cli_output { OUT_TABLE, OUT_JSON, OUT_CSV };

struct cli_ctx {
    const char *cmd; /* "tables", "load", ... for messages */
    struct strike_options opt;
    enum cli_output out;
    bool quiet;
    bool color;   /* stdout is a terminal and NO_COLOR is unset */
    bool err_tty; /* stderr is a terminal (progress bar) */
    struct strike_client *client;
};

/* Take the global options out of argv (compacting it); 0, or CLI_USAGE with
 * a message printed. */
int cli_ctx_init(struct cli_ctx *x, const char *cmd, int *argc, char **argv);
void cli_ctx_free(struct cli_ctx *x);
/* Print "strike CMD: detail" for a failed call and return its exit code. */
int cli_fail(const struct cli_ctx *x, int rc, const struct strike_error *e);
/* stderr notes, unless -q. */
void cli_note(const struct cli_ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

int cli_load(int argc, char **argv);    /* cli_load.c */
int cli_changes(int argc, char **argv); /* cli_load.c */

#endif
