/* ids.h - user and thread ids as the reference has them, and the other
 * names that become one path component (mount names).
 *
 * Ids become path components under $SBX_HOME, so they are checked before
 * anything is created:
 *
 *   user id    1..USER_ID_MAX of [A-Za-z0-9_-]: the reference's
 *              ^[A-Za-z0-9_-]+$, bounded by the length of a file name
 *   thread id  1..THREAD_ID_MAX of [A-Za-z0-9_-]: the reference's
 *              ^[A-Za-z0-9_-]{1,64}$
 *   name       1..NAME_ID_MAX of [A-Za-z0-9._-], not "." or "..": a
 *              mount of the broker's configuration
 *
 * and, with them, the rule of an environment variable's name.
 *
 * An id made by an earlier version with '.' or over 64 characters is
 * refused like any other invalid id; its directory stays where it was
 * (docs/configuration.md, "Ids").
 */
#ifndef SBX_IDS_H
#define SBX_IDS_H

#include <stdbool.h>
#include <stddef.h>

#define USER_ID_MAX 255
#define THREAD_ID_MAX 64
#define NAME_ID_MAX 128
#define ID_MAX USER_ID_MAX /* the longest: buffers of ID_MAX + 1 */

/* Each returns 0 if ID is acceptable, else -EINVAL and sets *WHY (if not
 * NULL) to a static phrase that completes "invalid id: ...". */
int user_id_check(const char *id, const char **why);
int thread_id_check(const char *id, const char **why);
int name_id_check(const char *id, const char **why);

/* The characters of TEXT that a thread id allows, at most MAX of them,
 * into OUT (SIZE bytes, more than MAX); "p" if none is: a readable part
 * of an id made from a name (a project directory's). */
void thread_id_slug(const char *text, size_t max, char *out, size_t size);

/* The reference's make_safe_user_id(RAW): each character (a UTF-8
 * sequence, or an invalid byte) outside [A-Za-z0-9_-] becomes '-', and
 * if anything changed, '-' and the first 16 hex digits of SHA-256(RAW)
 * follow. Returns 0 with the id in OUT, -EINVAL for an empty RAW, or
 * -ENAMETOOLONG if the id would exceed USER_ID_MAX. */
int user_id_make_safe(const char *raw, char out[USER_ID_MAX + 1]);

/* True if NAME is a POSIX shell variable name (sbx.conf's env_pass, a
 * request's environment). */
bool env_valid_name(const char *name);

#endif
