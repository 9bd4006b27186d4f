/*
 * cli.h - the `strike` command line: one entry point per subcommand, each
 * in its own file. Exit status: 0 success, 1 the operation failed (bad
 * input file, inconsistency found), 2 usage error.
 */
#ifndef STRIKE_CLI_H
#define STRIKE_CLI_H

struct cli_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
};

/* The subcommands (strike.c lists them). */
extern const struct cli_command cli_commands[];

#endif
