/* env.h - what a command runs with: its environment and identity.
 *
 * A command's environment is built, not filtered: no variable of the
 * broker's reaches it unless it is named here or by sbx.conf's env_pass
 * (a denylist of secret-looking names would let through every secret
 * under a name it does not know). Variables a request passes explicitly
 * are kept whatever their names. Names must be POSIX shell names.
 */
#ifndef SBX_ENV_H
#define SBX_ENV_H

#include <stdbool.h>
#include <stddef.h>

#define IDENTITY_MAX 256

/* PATH in the namespace sandbox (Docker's default): its /usr, /bin and
 * /sbin are the host's, but the broker's PATH may name directories the
 * sandbox does not have (homes, /opt), which would only show host paths. */
#define ENV_SANDBOX_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* A command's NULL-terminated environment, from these in turn, each
 * replacing an earlier variable of the same name:
 *  - in the sandbox (HOST false), its own PATH (ENV_SANDBOX_PATH), HOME
 *    (/tmp), USER and LOGNAME (agent); on the host, the broker's PATH,
 *    HOME, USER and LOGNAME, those of the user the command runs as;
 *  - the broker's LANG, LC_*, TERM, TZ, and the reference's identity
 *    variables DEERFLOW_CHANNEL_USER_ID and DEERFLOW_USER_ID (which a
 *    command inherits there too; a request's channel_user_id sets or
 *    unsets the first in the command itself, identity_prefix());
 *  - the broker's values of the names of PASS (NULL-terminated, may be
 *    NULL: sbx.conf's env_pass), where it has them;
 *  - the N "K=V" of EXTRA: explicit, whatever their names.
 * BASE is the broker's environment (NULL-terminated, "K=V"). Returns a
 * malloc'd array of malloc'd strings (env_free()), or NULL (out of
 * memory). */
char **env_build(char *const *base, bool host, char *const *pass, char *const *extra, size_t n);
void env_free(char **env);
static inline void env_freep(char ***env)
{
	env_free(*env);
}

/* The prefix that tells a command who is acting (IM sender ID), in
 * *PREFIX (malloc'd): "export DEERFLOW_CHANNEL_USER_ID=<quoted>; " for a
 * valid id of 1..IDENTITY_MAX characters (no NUL, no control character,
 * valid UTF-8), "unset DEERFLOW_CHANNEL_USER_ID; " when one is given but
 * empty, too long or invalid (ID_LEN is its length: it may hold a NUL),
 * "" when none is given (ID NULL). Returns 0 or -ENOMEM. */
int identity_prefix(const char *id, size_t id_len, char **prefix);

/* "export K='V'; " for each "K=V" of ENV (NULL-terminated, may be NULL),
 * as one malloc'd string ("" for none), or NULL (out of memory). */
char *env_exports(char *const *env);

/* S quoted for a POSIX shell ('...' with ' as '\''), malloc'd. */
char *shell_quote(const char *s);

#endif
