/* guard.h - host mode's path guard: the reference's best-effort check of
 * a command's paths before it runs on the host (allow_host_bash = true).
 *
 * It is NOT a security boundary: a command on the host can build any path
 * at run time (variables, base64, a script it wrote). It catches the
 * plain mistakes an agent makes, with the reference's messages
 * (../shared/reference/reference-behaviour.md, 2.3), in this order:
 *   - a file:// URL anywhere;
 *   - cd or pushd inside $( ... );
 *   - a word with a ".." segment (not in a URL): "Access denied: path
 *     traversal detected";
 *   - cd/pushd to nowhere, "-", a variable, ~, or an absolute path
 *     outside the virtual roots;
 *   - a bare "/" given to awk cat cp du find grep head less ln ls more mv
 *     rm sed tail tar;
 *   - absolute paths outside /mnt/user-data, /mnt/skills,
 *     /mnt/acp-workspace, /mnt/NAME of an extra mount, /bin/, /usr/bin/,
 *     /usr/sbin/, /sbin/, /opt/homebrew/bin/ and /dev/. A path is text,
 *     not a path, if it holds a non-ASCII character, or braces that are
 *     all single identifiers ("/devices/{id}/port") and no "${"; URLs
 *     (scheme://...) and "a/b" arithmetic are not paths.
 */
#ifndef SBX_GUARD_H
#define SBX_GUARD_H

#include <stddef.h>

/* 0 if COMMAND may run, else -EPERM with the reason in WHY. EXTRA: the
 * names of the extra mounts (NULL-terminated, may be NULL). */
int guard_check(const char *command, const char *const *extra, char *why, size_t whylen);

#endif
