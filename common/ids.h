/* ids.h - validation of user and thread ids.
 *
 * Ids become path components under $SBX_HOME, so they are checked before
 * anything is created: 1..ID_MAX bytes of [A-Za-z0-9._-], not "." or "..".
 */
#ifndef SBX_IDS_H
#define SBX_IDS_H

#define ID_MAX 128

/* Returns 0 if ID is acceptable, else -EINVAL and sets *WHY (if not NULL)
 * to a static phrase that completes "invalid id: ...". */
int id_check(const char *id, const char **why);

#endif
