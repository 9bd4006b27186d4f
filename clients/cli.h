/*
 * cli.h - the `strike` command line: one entry point per subcommand, each
 * in its own file. Exit status: 0 success, 1 the operation failed (bad
 * input file, inconsistency found), 2 usage error; the client commands
 * (cli_client.c) also 3 not found, 4 conflict, 5 unavailable.
 */
#ifndef STRIKE_CLI_H
#define STRIKE_CLI_H

struct cli_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
    /* The subcommands `run` takes as argv[1] (NULL: none), NULL-terminated: what
       `strike --list-commands` prints, and the help test walks (each answers --help). */
    const char *const *subs;
};

/*
 * The commands (strike.c lists them). Every command and subcommand answers
 * `--help` and `-h` with its usage on stdout and exit status 0.
 */
extern const struct cli_command cli_commands[];

enum cli_exit {
    CLI_OK = 0,
    CLI_ERROR = 1,
    CLI_USAGE = 2,
    CLI_NOTFOUND = 3,
    CLI_CONFLICT = 4,
    CLI_UNAVAILABLE = 5,
};

#include <jansson.h>
#include <stddef.h>

#include "common/buf.h"
#include "common/types.h"

/* JSON text of a string (n bytes; bad UTF-8 becomes U+FFFD), a double (the
 * shortest form that reads back), a typed value (cli_parquet.c). */
void cli_json_string(struct buf *b, const char *s, size_t n);
void cli_json_double(struct buf *b, double d);
void cli_json_value(struct buf *b, enum st_type t, const struct st_value *v);

/*
 * The --where language (cli_where.c) compiled to the Iceberg expression
 * JSON of docs/API.md. Returns the expression (caller decrefs), or NULL with
 * a message in msg and the 0-based column of the mistake in *col.
 */
json_t *cli_where_compile(const char *text, char *msg, size_t cap, size_t *col);

#endif
