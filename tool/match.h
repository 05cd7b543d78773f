/* match.h - the reference's glob patterns (sandbox/search.py at the
 * mirror's HEAD f1f4af99, before #6046 anchored patterns with "/" at
 * the root):
 *
 *   fnmatch: "*" any characters, "?" one, "[...]" a set ("[!...]" its
 *     complement, "a-z" ranges, a "]" first is literal), anything else
 *     itself; case-sensitive; characters are code points.
 *   path_matches(PATTERN, REL): PurePosixPath(REL).match(PATTERN), which
 *     matches the pattern's components against REL's last ones ("*.py"
 *     at any depth, "src" "/" "*.py" where the parent is src; "**" as "*"),
 *     or, for "**" + "/" + REST, REST alone.
 */
#ifndef SBX_TOOL_MATCH_H
#define SBX_TOOL_MATCH_H

#include <stdbool.h>

bool match_fnmatch(const char *pattern, const char *name);

/* True if REL (a relative path, components separated by '/') matches
 * PATTERN. */
bool match_path(const char *pattern, const char *rel);

/* False for the patterns Python refuses ("empty pattern": "", ".", "/"
 * and the like, nothing but separators and "."). */
bool match_pattern_valid(const char *pattern);

#endif
