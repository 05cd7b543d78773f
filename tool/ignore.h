/* ignore.h - the names ls, glob and grep pass over (the reference's
 * IGNORE_PATTERNS, sandbox/search.py): version-control and tool
 * directories, caches, build outputs, editor and OS litter, logs,
 * upload staging files. A directory so named is not entered; a file is
 * not listed. Matched on a name alone, case-sensitively. */
#ifndef SBX_TOOL_IGNORE_H
#define SBX_TOOL_IGNORE_H

#include <stdbool.h>

bool ignore_name(const char *name);

#endif
