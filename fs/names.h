/* names.h - rules for the names of new entries in a view.
 *
 * Portable names: a thread's files are often handed to Windows users, where
 * device names (CON, PRN, AUX, NUL, COM0-9, LPT0-9 and the superscript forms
 * COM¹²³ / LPT¹²³, CONIN$, CONOUT$) cannot be files, whatever the case, the
 * extension, a stream ("NUL:x", "aux:x.txt") or spaces before the extension
 * ("NUL .txt").
 *
 * Upload staging: under uploads, ".upload-*.part" (any case, with trailing
 * dots or spaces, which Windows strips) is the uploader's reserved staging
 * pattern: such names cannot be created and are hidden from listings.
 */
#ifndef SBX_NAMES_H
#define SBX_NAMES_H

#include <stdbool.h>

/* Returns 0 if NAME may be created, else -EINVAL with *WHY (if not NULL)
 * set to a static phrase naming the rule. */
int name_check_portable(const char *name, const char **why);

/* True if NAME matches the reserved upload staging pattern. */
bool name_is_upload_staging(const char *name);

#endif
