/* skills.h - which skills are disabled, as the reference keeps it.
 *
 * Two JSON files say it, each governing its own categories:
 *
 *   $SBX_HOME/extensions_config.json            public skills, for everyone
 *       {"skills": {"NAME": {"enabled": false}}}
 *   $SBX_HOME/users/USER/skills/_skill_states.json
 *       {"NAME": {"enabled": false}}            custom, legacy, integrations
 *
 * A skill without an entry, or whose file is missing, is enabled. A file
 * that is there but cannot be read or is not such an object disables every
 * skill of its scope: the reference fails closed when it cannot tell.
 *
 * Every question re-checks the file's identity (inode, size, mtime,
 * ctime) with one fstatat and parses it again only when that changed, so
 * an edit counts for the next request, without a remount. The host watch
 * (watch.c) is what tells the kernel to drop what it cached meanwhile.
 *
 * Thread-safe.
 */
#ifndef SBX_SKILLS_H
#define SBX_SKILLS_H

#include <stdbool.h>
#include <stddef.h>

enum skill_scope { SKILL_SCOPE_PUBLIC, SKILL_SCOPE_USER, SKILL_NSCOPES };

/* The reference's words for a disabled skill, with %s its name. */
#define SKILL_DISABLED_FMT                                                    \
	"Skill '%s' is disabled. Access to its files is blocked. Enable the " \
	"skill in settings before using it."

struct skills;

/* The state of the directories HOMEFD ($SBX_HOME) and USER_SKILLS_FD
 * ($SBX_HOME/users/USER/skills), both O_PATH; the fds are duplicated.
 * Returns NULL on -ENOMEM or when an fd cannot be duplicated. */
struct skills *skills_new(int homefd, int user_skills_fd);
void skills_free(struct skills *s);

/* True if skill NAME of SCOPE is disabled (or its state unreadable). */
bool skills_disabled(struct skills *s, enum skill_scope scope, const char *name);

/* The directory holding SCOPE's file (O_PATH, owned by S) and the file's
 * name in it, for the host watch. */
int skills_state_dir(const struct skills *s, enum skill_scope scope, const char **file);

#endif
