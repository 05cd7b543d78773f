/* search.h - what glob and grep share: how many results they return,
 * the root they search (a directory; grep's may be a file), and the
 * reference's result text around their lines:
 *
 *   "Found N NOUN under ROOT" (" (showing first N)" when truncated),
 *   a line per result, then when truncated the tool's trailer;
 *   "EMPTY ROOT" when there is none. */
#ifndef SBX_TOOL_SEARCH_H
#define SBX_TOOL_SEARCH_H

#include "target.h"
#include "tool.h"

#include <stdbool.h>
#include <stdio.h>

/* glob's and grep's words for a failure (UNEXPECTED: the OSError's). */
#define SEARCH_ERRORS(unexpected_)                                                     \
	{                                                                              \
		.not_found = "Error: Directory not found: %s",                         \
		.not_dir = "Error: Path is not a directory: %s",                       \
		.denied = "Error: Permission denied: %s", .unexpected = (unexpected_), \
	}

/* The reference's _resolve_max_results(): the request (<= 0: DEF) and
 * the configured cap (<= 0: DEF), each at most MAX, the smaller. */
int search_max(long long requested, int configured, int def, int max);

/* Whether the root T is a directory (ALLOW_FILE: or a regular file):
 * 0 with *IS_FILE set, or -errno (-ENOTDIR: neither). */
int search_root_kind(const struct tool_view *v, const struct target *t, bool allow_file,
		     bool *is_file);

/* Checks the root T: 0 with *IS_FILE set (ALLOW_FILE: a regular file is
 * a root too), or 1 with the error in OUT ("Directory not found", "Path
 * is not a directory", ...), or -ENOMEM. */
int search_root(const struct tool_view *v, const struct target *t, const struct tool_errors *errs,
		bool allow_file, bool *is_file, struct tool_result *out);

struct search_text {
	const char *noun, *empty, *trailer;
	/* Prints result I of ITEMS on F. */
	void (*line)(FILE *f, size_t i, json_t *item);
};

/* The result: the text of ITEMS (a JSON array, taken) searched under
 * ROOT, and the data {"root", KEY: ITEMS, "truncated"}. */
int search_result(const struct search_text *st, const char *root, const char *key, json_t *items,
		  bool truncated, struct tool_result *out);

#endif
