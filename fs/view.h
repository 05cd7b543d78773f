/* view.h - the virtual tree of one thread's view.
 *
 *   M/                       synthetic, read-only
 *   M/user-data/             synthetic, read-only
 *   M/user-data/workspace    root  (read-write)
 *   M/user-data/uploads      root  (read-write, upload name rules)
 *   M/user-data/outputs      root  (read-write)
 *   M/skills/                synthetic, read-only (EROFS), holding the
 *     public, custom,        roots (read-only), the skill categories:
 *     legacy, integrations   see view_open(); with --skills DIR, M/skills
 *                            is that one read-only root instead
 *   M/acp-workspace          root  (read-only; read-write with
 *                            --acp-workspace=rw, the ACP agent's view)
 *   M/NAME                   root  per --mount /mnt/NAME=HOSTDIR[:ro]
 *
 * Entries of synthetic directories cannot be created, removed or renamed
 * (EPERM); anything under a read-only root (or M/skills) answers EROFS.
 *
 * A disabled skill (skills.h) of a category is not listed, and everything
 * of it answers EACCES, logged in the reference's words.
 *
 * Roots are grouped into domains: read-write roots on one filesystem share
 * a domain (so renames and links between workspace, uploads and outputs
 * work and keep node ids), every read-only root has a domain of its own,
 * and nothing crosses domains (EXDEV). An object hard-linked into two
 * domains is two inodes, so a read-only root can never be written through
 * a writable alias.
 */
#ifndef SBX_VIEW_H
#define SBX_VIEW_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "inode.h"
#include "skills.h"
#include "common/home.h"

struct channel;
struct fuse_session;
struct journal;
struct quota;
struct stager;

#define VIEW_MAX_MOUNTS 32
#define VIEW_MAX_ROOTS (4 + SKILL_CATEGORIES + VIEW_MAX_MOUNTS)
#define VIEW_NAME_LOCKS 64

/* One --mount /mnt/NAME=HOSTDIR[:ro|:rw]. */
struct mount_spec {
	char name[NAME_MAX + 1];
	char host[PATH_MAX];
	bool read_only;
};

/* Parses ARG into OUT. Returns 0, or -EINVAL with *WHY set to a static
 * phrase ("the name must be one component below /mnt", ...). */
int mount_spec_parse(const char *arg, struct mount_spec *out, const char **why);

struct view_config {
	const char *home;	   /* $SBX_HOME */
	const char *user, *thread; /* checked with user_id_check() etc. */
	const char *skills;	   /* one plain root; NULL: the categories */
	struct mount_spec mounts[VIEW_MAX_MOUNTS];
	size_t nmounts;
	double timeout;		/* kernel cache without host watch, s */
	double timeout_watched; /* ... with it */
	bool host_watch;
	size_t max_watches; /* 0: as many as inotify allows */
	bool portable_names;
	bool acp_writable; /* --acp-workspace=rw: the ACP agent's own view */
	bool writeback;
	size_t fd_budget; /* O_PATH fds kept open; 0 = derive */
	int rbw;	  /* enum gate_mode */
	bool rbw_unlink;
	bool staging;	     /* atomic staged writes (stage.h) */
	bool staging_strict; /* refuse what cannot be staged */
	bool map_owner;	     /* --map-owner UID:GID */
	uid_t map_uid;
	gid_t map_gid;
	uint64_t quota_bytes;  /* --quota-bytes; 0: none */
	uint64_t quota_inodes; /* --quota-inodes; 0: none */
	/* --overlay DIR: the workspace shows project DIR through the
	 * thread's workspace directory as its layer (docs/try.md). */
	const char *overlay;
};

/* A directory, by its identity. */
struct dir_id {
	dev_t dev;
	ino_t ino;
};

struct root {
	const char *name; /* entry name in its synthetic parent */
	char *host;	  /* for messages only, never for access (the view's) */
	/* Its directory and every one above it, to "/": what no other
	 * root may be (add_root()); freed by view_close(). */
	struct dir_id *up;
	size_t nup;
	bool read_only;
	bool uploads;
	bool counted; /* the thread's own: under its quota */
	bool overlay; /* the layer of a project (docs/try.md) */
	/* A skill category: its skills are the directories this deep
	 * (1; 2 for integrations/PROVIDER/SKILL), SKILL_SCOPE's file says
	 * which are disabled. 0: not a category. */
	uint8_t skill_depth;
	enum skill_scope skill_scope;
	struct inode *top;
};

struct synth_entry {
	const char *name;
	struct inode *inode;
};

struct synth {
	ino_t ino;
	bool read_only; /* changes answer EROFS, not EPERM */
	size_t n;
	struct synth_entry entry[VIEW_MAX_ROOTS];
};

struct domain {
	dev_t dev;
	bool read_only;
	uint16_t devidx;	       /* distinct backing filesystems, 0 first */
	uint16_t lower_devidx;	       /* an overlay's project's filesystem */
	const struct root *skill_root; /* a skill category's (its own) */
};

struct view {
	struct inode_table *inodes;
	struct inode *top, *user_data, *skills_top;
	struct synth top_dir, user_data_dir, skills_dir;
	struct skills *skills; /* the categories' state; NULL: none */
	struct root roots[VIEW_MAX_ROOTS];
	size_t nroots;
	struct domain domains[VIEW_MAX_ROOTS];
	size_t ndomains;
	uid_t uid; /* the daemon's: owner of the synthetic
					 * directories and of what it creates */
	gid_t gid;
	uid_t overflow_uid; /* what stat shows for an owner this user
			     * namespace does not map (kernel/overflowuid) */
	/* --map-owner: files of UID/GID are shown as MAP_UID/MAP_GID, and
	 * requests of MAP_UID are served as UID's (a sandbox's). */
	bool map_owner;
	uid_t map_uid;
	gid_t map_gid;
	struct quota *quota; /* quota.h; NULL: none */
	struct timespec born;
	struct watch *watch;			      /* NULL: no host watch */
	struct gate *gate;			      /* read-before-write; NULL: off */
	struct store_writer *writer;		      /* the store's rows; NULL: none */
	struct open_files *open_files;		      /* ops_file.c's: the open handles */
	struct journal *journal;		      /* journal.h: the open run, callers */
	struct stager *stager;			      /* stage.h: locks, areas; NULL before
					 * stage_setup() */
	pthread_rwlock_t name_locks[VIEW_NAME_LOCKS]; /* view_names_lock() */
	pthread_mutex_t copy_up_lock;		      /* one copy-up at a time (ops_overlay.c) */
	struct fuse_session *session;		      /* for notifications */
	double timeout, timeout_watched;
	bool portable_names;
	bool writeback;
	bool creds_switch;	  /* root daemon: create as the caller */
	bool default_permissions; /* the kernel checks permissions and
					 * privileged changes (allow_other) */
	bool caller_umask;	  /* the kernel sends umasks (DONT_MASK) */
	bool no_opendir;	  /* directories are opened without us */
	struct channel *channel;  /* channel.h: FUSE_HANDLE_KILLPRIV_V2 */
	bool changes_refused;	  /* view_refuse_changes(); read atomically */
};

/* Creates the thread's directories if missing, opens every root and builds
 * the tree. On failure returns -errno and writes a one-line reason to ERR. */
int view_open(struct view *v, const struct view_config *cfg, char *err, size_t errlen);
/* Frees the tree and what view_open() made. What other modules attached
 * to the view (stage_setup(), journal_new(), channel_install()) is freed
 * by them, before. */
void view_close(struct view *v);

/* 0 if entries of directory DIR may be changed, -EPERM for a synthetic
 * directory, -EROFS under a read-only root or once the view refuses
 * changes. */
int view_may_modify(const struct view *v, const struct inode *dir);
/* The store can no longer record the view's changes (V: a struct view;
 * the store writer's store_writer_on_failed() hook, WHY its reason):
 * from now on every change through the view fails with EROFS, reads go
 * on, and the log says why and what to do. Fail closed: a change the
 * journal does not hold could not be told by sbx run end nor undone. */
void view_refuse_changes(void *v, const char *why);
/* Whether the view refuses changes. */
bool view_changes_refused(const struct view *v);

/* -EACCES, with the skill's name in SKILL, if DIR/NAME (NAME may be NULL)
 * is or is in a disabled skill; 0 otherwise (always for --skills DIR). */
int view_skill_check(struct view *v, struct inode *dir, const char *name, char *skill, size_t size);

/* True if the entries of DIR are skills (a category, or a provider of
 * integrations): listings of it leave disabled ones out. */
bool view_skill_holder(struct view *v, struct inode *dir);

/* Lookups in DIR take this lock shared, from resolving the name to the
 * inode table holding the answer; publishing a staged write
 * (change_publish()) takes it exclusive from its rename to re-pointing the
 * view's inode. The kernel serializes lookups with the renames it asks
 * for, not with this one, which happens inside a close() or fsync():
 * without the lock, a lookup could resolve the old file and give the
 * kernel a second node for the name, and locks taken through the two nodes
 * would not see each other. */
void view_names_lock(struct view *v, struct inode *dir, bool exclusive);
void view_names_unlock(struct view *v, struct inode *dir);
/* The view's own changes of names in A (and B, may be NULL) hold them
 * shared: a publication's check of its name and its rename are then one
 * step for them (a rename or unlink in between would have it write over
 * a name that holds another file now, or bring a deleted one back). */
void view_names_hold(struct view *v, struct inode *a, struct inode *b);
void view_names_release(struct view *v, struct inode *a, struct inode *b);

/* The path a thread's tools use for DIR/NAME (NAME may be NULL):
 * "/mnt/user-data/workspace/a.txt". Returns BUF. */
char *view_path(struct view *v, struct inode *dir, const char *name, char *buf, size_t size);

/* Charges BYTES and INODES to the thread's quota (quota.h) for a change
 * of INO (a file, or the directory of a new entry), if it is under one of
 * the thread's own roots. Returns 0, or -EDQUOT with the reason in WHY. */
int view_charge(struct view *v, struct inode *ino, uint64_t bytes, uint64_t inodes, char *why,
		size_t whylen);

/* BYTES of the thread's space went to a kept copy (pre-images count
 * against the quota: quota_took()). */
void view_took(struct view *v, uint64_t bytes);

/* Gives back to the quota what removing an entry of attributes ST (in the
 * directory INO) freed; ST NULL: a change that may have freed space. */
void view_release(struct view *v, struct inode *ino, const struct stat *st);

/* Fills ST for a synthetic directory. */
void view_synth_attr(const struct view *v, const struct inode *ino, struct stat *st);

/* Maps a host file's owner to the one the view reports: with
 * --map-owner, the daemon's user is shown as the sandbox's. */
static inline void view_map_owner(const struct view *v, struct stat *st)
{
	if (!v->map_owner)
		return;
	if (st->st_uid == v->uid)
		st->st_uid = v->map_uid;
	if (st->st_gid == v->gid)
		st->st_gid = v->map_gid;
}

/* True if the caller UID is the sandbox of --map-owner: its requests are
 * the daemon's user's, and it may not set set-id bits on the host. */
static inline bool view_mapped_caller(const struct view *v, uid_t uid)
{
	return v->map_owner && uid == v->map_uid && uid != v->uid;
}

/* The uid the view acts as for a caller whose uid is UID. */
static inline uid_t view_caller_uid(const struct view *v, uid_t uid)
{
	return view_mapped_caller(v, uid) ? v->uid : uid;
}

/* The inode number the view reports for backing inode number BACKING of
 * INO's filesystem: distinct across backing filesystems. */
static inline ino_t view_ino(const struct view *v, const struct inode *ino, ino_t backing)
{
	const struct domain *d = &v->domains[ino->domain];

	return backing ^ (ino_t)(ino->lower ? d->lower_devidx : d->devidx) << 48;
}

/* Maps a backing stat to what the view reports (its inode number, the
 * owner). */
static inline void view_map_attr(const struct view *v, const struct inode *ino, struct stat *st)
{
	st->st_ino = view_ino(v, ino, st->st_ino);
	view_map_owner(v, st);
}

#endif
