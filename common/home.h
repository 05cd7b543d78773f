/* home.h - the $SBX_HOME layout: every name below a home is spelled
 * here (or, for a thread's and the skills' directories, in home.c's
 * tables), and the rest of the code asks for it.
 *
 *   sbx.conf                          the configuration (common/config.h)
 *   sbx.db                            the SQLite store (store/store.h)
 *   serve.token                       sbx serve's bearer token, when sbx.conf
 *                                     names none (cli/serve.c)
 *   users/<user>/threads/<thread>/user-data/{workspace,uploads,outputs}
 *   users/<user>/threads/<thread>/acp-workspace
 *   users/<user>/threads/<thread>/.stage              staged writes (fs/stage.h)
 *   users/<user>/threads/<thread>/.undo/<run start>   undo's pre-images
 *   users/<user>/threads/<thread>/overlay             an overlay's project
 *                                     (a symlink to its absolute path:
 *                                     docs/try.md)
 *   skills/public, skills/custom, users/<user>/skills/custom,
 *   integrations/skills               the skill categories (home_skills[])
 *   extensions_config.json, users/<user>/skills/_skill_states.json
 *                                     disabled skills (fs/skills.h)
 *   log/                              the views' logs (sbxfs-USER-THREAD.log)
 *   run/mounted/<user>/<thread>/<pid> the mounted views (common/viewreg.h)
 *   run/broker.{sock,lock,log}        the broker's socket, lock and log
 *   run/views/<user>/<thread>         the broker's mount points
 *   run/locks/<user>/<thread>         its lock file per view
 *   run/try/<user>/<overlay>          the mount points of sbx try hook's
 *                                     worktrees (cli/try_hook.c)
 *   run/uids/<uid>                    a root broker's sandbox uids, where
 *                                     /run/sbxfs/uids cannot be had
 *
 * Every directory below the home is created and opened relative to its
 * parent's fd with O_NOFOLLOW, so a symlink planted inside the home cannot
 * redirect where a thread's directories are made.
 */
#ifndef SBX_HOME_H
#define SBX_HOME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The names directly below the home, and below its run/. */
#define HOME_CONFIG "sbx.conf"
#define HOME_STORE "sbx.db"
#define HOME_SERVE_TOKEN "serve.token"
#define HOME_LOG "log"
#define HOME_RUN "run"
#define HOME_MOUNTED "mounted"
#define HOME_VIEWS "views"
#define HOME_LOCKS "locks"
#define HOME_UIDS "uids"
#define HOME_TRY "try"
#define HOME_BROKER_SOCKET "broker.sock"
#define HOME_BROKER_LOCK "broker.lock"
#define HOME_BROKER_LOG "broker.log"

/* The view's own names at the top of its mount point (MOUNTPOINT/NAME),
 * as an initializer: an extra mount may not take one of them. */
#define VIEW_TOP_NAMES                                 \
	{                                              \
		"user-data", "skills", "acp-workspace" \
	}

/* Whether REST, what follows a root in a path ("" or "/a/b"), goes
 * plainly below it: no empty, "." or ".." component, and shorter than
 * PATH_MAX. */
bool home_plain_below(const char *rest);

/* The skill categories as the reference lays them out: each one's name
 * below /mnt/skills and its directory below the home (a NULL component
 * is the user's id). */
enum skill_category {
	SKILLS_PUBLIC,	     /* shared by everyone */
	SKILLS_CUSTOM,	     /* the user's own */
	SKILLS_LEGACY,	     /* the shared custom skills of before per-user ones */
	SKILLS_INTEGRATIONS, /* integrations' skills, a directory per provider */
	SKILL_CATEGORIES
};
struct home_skills {
	const char *name;
	const char *path[4];
	size_t n;
};
extern const struct home_skills home_skills[SKILL_CATEGORIES];

/* HOME/... of category C of USER into BUF. Returns 0 or -ENAMETOOLONG. */
int home_skills_path(const char *home, const char *user, enum skill_category c, char *buf,
		     size_t size);

/* HOME/users/USER/threads/THREAD, then "/" BELOW unless BELOW is NULL,
 * into BUF: the one place a thread's host path is spelled. Returns 0 or
 * -ENAMETOOLONG. */
int home_thread_path(const char *home, const char *user, const char *thread, const char *below,
		     char *buf, size_t size);

/* Writes the home to use into BUF: $SBX_HOME if set, else /var/lib/sbxfs
 * for root, else $XDG_DATA_HOME/sbxfs or ~/.local/share/sbxfs.
 * Returns 0 or -ENAMETOOLONG / -ENOENT (no $HOME for a non-root user). */
int home_default(char *buf, size_t size);

/* Opens (creating with mode 0700 if missing, parents included) the home
 * directory PATH. Returns an O_PATH directory fd or -errno. */
int home_open(const char *path);

/* Opens directory NAME under DIRFD, creating it with MODE if missing.
 * NAME is one component; a symlink there is refused with -ELOOP/-ENOTDIR.
 * Returns an O_PATH directory fd or -errno. */
int dir_ensure(int dirfd, const char *name, mode_t mode);

/* The same for the path COMPONENTS[0]/.../COMPONENTS[N-1] below DIRFD,
 * each created with MODE if missing. */
int dir_ensure_path(int dirfd, const char *const *components, size_t n, mode_t mode);

/* DIRFD/COMPONENTS[0]/.../COMPONENTS[N-1] as an O_PATH fd, never
 * following a symlink; with CREATE each missing one is made (0700).
 * Returns the fd or -errno (-ENOENT: missing and not CREATE). */
int dir_chain_open(int dirfd, const char *const *components, size_t n, bool create);

/* Below a thread's directory, outside every view: the pre-images undo
 * needs, one directory per run (named by its start, ns); the staging
 * area of its rewritten files. */
#define UNDO_DIR ".undo"
#define STAGE_DIR ".stage"

/* The directory of pre-images of USER's THREAD's run begun at BEGUN_NS
 * under the home directory HOMEFD, as an O_PATH fd; CREATE: made (0700,
 * with what is missing above it) if it is not there. */
int home_undo_dir(int homefd, const char *user, const char *thread, int64_t begun_ns, bool create);
/* The directory above those, made if missing, as an O_PATH fd. */
int home_undo_top(int homefd, const char *user, const char *thread);

/* A thread that is an overlay of a project (docs/try.md) has, in its
 * directory, a symlink of this name to the project's absolute path. */
#define OVERLAY_RECORD "overlay"

/* The overlay's layer (its thread's workspace directory) marks what it
 * hides: a whiteout is a symbolic link to OVERLAY_WHITEOUT (the project's
 * object of its name is removed), and a directory holding a whiteout
 * named OVERLAY_OPAQUE hides the whole project directory of its name. */
#define OVERLAY_WHITEOUT ".sbxfs-whiteout"
#define OVERLAY_OPAQUE ".sbxfs-opaque"

/* True if the object at O_PATH fd FD is a whiteout. */
bool home_is_whiteout(int fd);

/* The project USER's THREAD is an overlay of, into PROJECT: 1, or 0 for
 * a thread that is none (or is not there), or -errno. */
int home_overlay_get(int homefd, const char *user, const char *thread, char *project, size_t size);
/* Makes USER's THREAD (its directories made if missing) an overlay of
 * PROJECT, an absolute path. Returns 0, -EEXIST if it is one of another
 * project already (or a project's record), or -errno. */
int home_overlay_set(int homefd, const char *user, const char *thread, const char *project);

/* A project's record thread (run/project_run.h: the runs sbx try apply
 * makes of a project, and their undos) has, in its directory, a symlink
 * of this name to the project's absolute path. It is never mounted. */
#define PROJECT_RECORD "project"

/* The project USER's THREAD is the record of, into PROJECT: 1, or 0 for a
 * thread that is none (or is not there), or -errno. */
int home_project_get(int homefd, const char *user, const char *thread, char *project, size_t size);
/* Makes USER's THREAD (its directory made if missing) the record of
 * PROJECT, an absolute path. Returns 0, -EEXIST if it is an overlay or
 * the record of another project, or -errno. */
int home_project_set(int homefd, const char *user, const char *thread, const char *project);

enum thread_dir { THREAD_WORKSPACE, THREAD_UPLOADS, THREAD_OUTPUTS, THREAD_ACP, THREAD_NDIRS };

/* Directory WHICH below its thread's: "user-data/workspace" ...
 * "acp-workspace"; and its own name, "workspace" ... "acp-workspace". */
const char *home_thread_dir_rel(enum thread_dir which);
const char *home_thread_dir_name(enum thread_dir which);

/* Creates what is missing of the thread's directories (mode 0700) and
 * returns an O_PATH fd for each in FDS. USER and THREAD must have passed
 * user_id_check() and thread_id_check(). Returns 0 or -errno; on failure
 * no fd is left open. */
int home_thread_dirs(int homefd, const char *user, const char *thread, int fds[THREAD_NDIRS]);

/* Opens one existing directory of the thread (nothing is created; a
 * symlink on the way is refused). Returns an O_PATH fd or -errno. */
int home_thread_dir_open(int homefd, const char *user, const char *thread, enum thread_dir which);

/* Whether USER's THREAD is there under the home directory HOMEFD (nothing
 * is created; a symlink on the way is refused). Returns 0, or -errno with
 * *MISSING naming what is not there: "user" or "thread". */
int home_thread_find(int homefd, const char *user, const char *thread, const char **missing);

#endif
