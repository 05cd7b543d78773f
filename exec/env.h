/* env.h - what a command runs with: its environment and identity.
 *
 * The broker's own environment is passed on minus secret-looking names
 * (the reference's scrub: upper-cased names matching *KEY* *SECRET*
 * *TOKEN* *PASS* *CREDENTIAL* *DSN*, and DATABASE_URL, REDIS_URL and the
 * like); variables a request passes explicitly are kept whatever their
 * names. Names must be POSIX shell names.
 */
#ifndef SBX_ENV_H
#define SBX_ENV_H

#include <stdbool.h>
#include <stddef.h>

#define IDENTITY_MAX 256

/* True if NAME looks like it holds a secret. */
bool env_secret_name(const char *name);
/* True if NAME is a POSIX shell variable name. */
bool env_valid_name(const char *name);

/* A NULL-terminated environment: BASE (NULL-terminated, "K=V") without
 * secret-looking names, then the N explicit "K=V" entries of EXTRA
 * (which replace BASE's of the same name). Returns a malloc'd array of
 * malloc'd strings (env_free()), or NULL (out of memory). */
char **env_build(char *const *base, char *const *extra, size_t n);
void env_free(char **env);

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
