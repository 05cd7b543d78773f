/* args.h - a tool's arguments taken from its JSON object, checked
 * before anything is done: a missing required argument, or one of
 * another type, is a tool error naming it (never a crash). Arguments
 * the tool does not know are ignored, and null is the same as absent. */
#ifndef SBX_TOOL_ARGS_H
#define SBX_TOOL_ARGS_H

#include "tool.h"

enum arg_type {
	ARG_STRING,  /* DEST: const char **, into ARGS; LEN: its length */
	ARG_BOOL,    /* DEST: bool * */
	ARG_INTEGER, /* DEST: long long *; an integral number (5 or 5.0) */
	ARG_STRINGS, /* DEST: json_t **, an array of strings (ARGS' reference) */
};

struct arg_spec {
	const char *key;
	enum arg_type type;
	bool required;
	void *dest;  /* left as it is when the argument is absent */
	size_t *len; /* strings: their length, NUL included; NULL: a NUL
		       * in the string is refused */
	bool *given; /* set to whether the argument was there (may be NULL) */
};

/* Fills the DESTs of SPECS (N of them) from ARGS. Returns 0; 1 with the
 * tool error in OUT for the first argument missing or ill-typed; or
 * -ENOMEM. */
int args_take(json_t *args, const struct arg_spec *specs, size_t n, struct tool_result *out);

/* The same without a result: 0, or 1 with *BAD the first argument
 * missing (*MISSING) or ill-typed, for a tool that words it otherwise
 * (tool/aio.h). */
int args_check(json_t *args, const struct arg_spec *specs, size_t n, const struct arg_spec **bad,
	       bool *missing);

#define ARGS_TAKE(args, specs, out) args_take(args, specs, sizeof(specs) / sizeof(specs[0]), out)

#endif
