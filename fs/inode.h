/* inode.h - the view's inode table: FUSE node ids <-> backing objects.
 *
 * Modelled on libfuse's passthrough_hp: an inode is keyed by the backing
 * object's (domain, st_dev, st_ino), holds an O_PATH fd, and lives while
 * the kernel holds lookups on it (nlookup, decremented by forget) or the
 * table holds references (refs: children naming it as parent, open file
 * handles). The node id given to the kernel is the inode's address.
 *
 * One difference matters on machines with a 20,000 open-file hard limit:
 * O_PATH fds are bounded. Beyond the table's fd budget the least recently
 * used idle fds are closed, and inode_fd_get() re-resolves an inode from
 * its parent by the name it was last seen under, checking that the same
 * object (st_dev, st_ino) is found; if not, the inode is stale (-ESTALE).
 * A root daemon finds it by its file handle first, wherever its names
 * went. A stat of an evicted inode needs no fd (inode_stat_evicted).
 * Fixed inodes (a root's top directory) and inodes with open handles keep
 * their fd.
 *
 * All functions are thread-safe; one mutex guards the table. Fields of
 * struct inode read without that lock are _Atomic.
 */
#ifndef SBX_INODE_H
#define SBX_INODE_H

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

struct root;
struct stage;
struct file_handle;
struct synth;

/* What a save may replace: a file's inode number and its content's size
 * and mtime as the view last knew them (stage.h). */
struct file_version {
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

/* How many other names of a file the table keeps (a file with more
 * loses the newest ones it was seen under). */
#define INODE_ALT_NAMES 3

struct inode {
	/* Immutable after creation, but for (dev, ino): inode_rekey() moves
	 * them, under the table lock, when a staged write is published. */
	dev_t dev;
	ino_t ino;
	mode_t type;		   /* S_IFMT bits */
	uint16_t domain;	   /* index into the view's domains */
	struct root *root;	   /* set on a root's top directory */
	const struct synth *synth; /* set on a synthetic directory */

	/* Guarded by the table lock. */
	struct inode *parent; /* where it was last seen (holds a ref) */
	char *name;
	/* A file with several names: other names it was seen under, the
	 * oldest first (each holds a ref on its parent); the first that
	 * still names it becomes its name if that one goes through the
	 * view (inode_name_gone). Unused slots have a NULL parent. */
	struct inode_alt {
		struct inode *parent;
		char *name;
	} alt[INODE_ALT_NAMES];
	int fd; /* O_PATH fd, or -1 while evicted */
	/* In an overlay root (docs/try.md): LOWER for an object of the
	 * project, seen where the layer has nothing of its name; LOWER_FD,
	 * for a directory of the layer whose project directory shows
	 * through (merged, and the root's top), that directory's O_PATH
	 * fd, kept while the inode lives (-1 otherwise). Set when the
	 * inode is made, not changed after. */
	bool overlay;
	_Atomic bool lower;
	_Atomic int lower_fd;
	struct file_handle *fh; /* evicted: its handle (root daemon) */
	bool superseded;	/* renewed, or its inode number went to another
					 * object: never found again */
	bool born_known;	/* evicted: the object's birth time */
	struct timespec born;
	uint32_t pins;	  /* requests using fd right now */
	uint32_t opens;	  /* open file/dir handles */
	uint32_t writers; /* of which may write */
	uint32_t opening; /* OPENs in progress (inode_open_begin) */
	bool renew_due;	  /* a renewal waits for the last close */
	/* Read without the table lock, relaxed: wd is written under it,
	 * covered is set by ops_entry.c. */
	_Atomic int wd;	      /* inotify watch (dirs), <= 0 if none */
	_Atomic bool covered; /* a watch reports its changes */
	/* Guarded by its stage lock (stage.h), but for stage_any(). */
	struct stage *_Atomic stage;
	/* The same lock: what its writers started from, its open handles
	 * that stage, and those of them closed since their last change
	 * (ops_file.c). */
	struct file_version save_base;
	bool save_base_set;
	uint32_t stage_writers, flushed_writers;
	_Atomic int64_t imaged;	  /* the run its pre-image is for
				   * (journal.h) */
	_Atomic int64_t kept;	  /* the run its content is kept for,
				   * or that made it (journal.h) */
	_Atomic bool stale_pages; /* a save was dropped, and the
				   * kernel may cache its bytes */
	_Atomic bool unnamed;	  /* the view itself removed a name of
				   * it (inode_note_unnamed) */
	/* The attributes last given to the kernel. */
	struct timespec seen_mtime, seen_ctime;
	off_t seen_size;
	uint32_t refs; /* children + fixed */
	uint64_t nlookup;
	struct inode *hnext, *wnext, *lru_prev, *lru_next;
};

struct inode_table;

/* A table whose evictable O_PATH fds stay at or below FD_BUDGET. */
struct inode_table *inode_table_new(size_t fd_budget);
void inode_table_free(struct inode_table *t);

/* Adds an inode that lives as long as the table: a synthetic directory
 * (FD < 0, SYNTH set) or a root's top directory (FD >= 0, ROOT set). */
struct inode *inode_add_fixed(struct inode_table *t, struct inode *parent, const char *name, int fd,
			      const struct stat *st, uint16_t domain, struct root *root,
			      const struct synth *synth);

/* Finds or adds the inode for the object just resolved as PARENT/NAME,
 * whose O_PATH fd is FD (ownership passes to the table), stat ST and
 * birth time BORN (NULL if unknown), and counts one kernel lookup.
 * Returns NULL (fd closed) only on -ENOMEM. */
struct inode *inode_lookup_add(struct inode_table *t, struct inode *parent, const char *name,
			       int fd, const struct stat *st, const struct timespec *born);

/* Where an object found in an overlay root belongs (struct inode's
 * overlay, lower and lower_fd). */
struct inode_layer {
	bool overlay;
	bool lower;
	int lower_fd; /* owned: closed if the table already has one */
};

/* inode_lookup_add() for an object of an overlay root, LAYER saying
 * where it belongs. */
struct inode *inode_lookup_add_layer(struct inode_table *t, struct inode *parent, const char *name,
				     int fd, const struct stat *st, const struct timespec *born,
				     struct inode_layer *layer);

/* Makes INO, a fixed inode, the top of an overlay root whose project
 * directory is LOWER_FD (owned). */
void inode_set_overlay_top(struct inode_table *t, struct inode *ino, int lower_fd);

/* statx(2) of NAME under DIRFD (FLAGS: AT_EMPTY_PATH or 0; a final
 * symlink is not followed) into ST, and the birth time into BORN.
 * Returns 1, 0 if the filesystem keeps no birth time, or -errno. */
int inode_statx(int dirfd, const char *name, int flags, struct stat *st, struct timespec *born);

/* Counts one more kernel lookup of a fixed inode. */
void inode_lookup_fixed(struct inode_table *t, struct inode *ino);

/* The kernel drops N lookups. */
void inode_forget(struct inode_table *t, struct inode *ino, uint64_t n);

/* Returns INO's O_PATH fd, pinned until inode_unpin(), or -errno
 * (-ESTALE if the object is no longer where it was last seen). A pin
 * keeps the inode alive too. */
int inode_fd_get(struct inode_table *t, struct inode *ino);
void inode_unpin(struct inode_table *t, struct inode *ino);

/* Fills ST for an evicted INO without taking an fd for it: by its name
 * in its parent, if what is there now is INO (st_dev, st_ino, type and
 * birth time agree; the birth time tells it from a later file given the
 * same inode number). Returns 0, or -EAGAIN if INO holds an fd or cannot
 * be told apart that way: inode_fd_get() then. */
int inode_stat_evicted(struct inode_table *t, struct inode *ino, struct stat *st);

/* Pins the directory INO was last seen in and copies its name there into
 * NAME. Returns the directory's fd (unpin *PARENT after use) or -errno. */
int inode_parent_fd_get(struct inode_table *t, struct inode *ino, struct inode **parent, char *name,
			size_t size);

/* Finds the inode of (DOMAIN, DEV, INO), pinned, or NULL. */
struct inode *inode_find(struct inode_table *t, uint16_t domain, dev_t dev, ino_t ino);

/* True if INO was last seen as DIR/NAME. */
bool inode_is_named(struct inode_table *t, struct inode *ino, struct inode *dir, const char *name);

/* Open handles keep the inode's fd and the inode itself; WRITER marks a
 * handle that may modify the file. */
void inode_open_ref(struct inode_table *t, struct inode *ino, bool writer);
void inode_open_unref(struct inode_table *t, struct inode *ino, bool writer);
/* Open handles of INO (and, in *WRITERS if not NULL, how many may write). */
uint32_t inode_open_count(struct inode_table *t, struct inode *ino, uint32_t *writers);

/* The object INO designates now: its (st_dev, st_ino), and its birth time
 * (*BORN). Returns whether the birth time is known. */
bool inode_identity(struct inode_table *t, const struct inode *ino, dev_t *dev, ino_t *num,
		    struct timespec *born);

/* After a staged write was published: INO now designates the object whose
 * O_PATH fd is FD (owned), attributes ST and birth time BORN (NULL if not
 * known: then taken at eviction), the file now at its name. Returns 0,
 * or -EEXIST (FD closed) if the table already holds it. */
int inode_rekey(struct inode_table *t, struct inode *ino, int fd, const struct stat *st,
		const struct timespec *born);

/* After a copy-up (docs/try.md): INO, a project's object, is now the
 * layer's copy, whose O_PATH fd is FD (owned), as inode_rekey(); a
 * directory's project directory is LOWER_FD (owned; -1 for a file). */
int inode_copied_up(struct inode_table *t, struct inode *ino, int fd, const struct stat *st,
		    const struct timespec *born, int lower_fd);

/* Remembers the attributes the kernel was just given for INO. */
void inode_note_attr(struct inode_table *t, struct inode *ino, const struct stat *st);

/* Remembers attributes ST, just read from the backing file, as given to
 * the kernel (a GETATTR), unless they show a change the kernel cannot
 * take (inode_table_renew; not while the view writes INO, whose close
 * renews what it must): then INO keeps the attributes it had, and true
 * says it must be renewed (inode_renew(), which tells its name for the
 * kernel to look up again). */
bool inode_note_seen(struct inode_table *t, struct inode *ino, const struct stat *st);

/* The inode of the object ST describes (fresh from the backing file, in
 * DOMAIN), pinned, if ST differs from what the kernel was last given for
 * it and no handle of the view is writing it (its own writes are not news
 * to the kernel); ST is noted. *RELOOKUP tells whether the kernel must
 * look its names up again: with renewal on, a regular file is renewed,
 * or, while it is open or being opened, renewed at its last close
 * (inode_renew_due(); ST is then not noted). NULL otherwise: one
 * lock for the common case of nothing new. */
struct inode *inode_find_changed(struct inode_table *t, uint16_t domain, const struct stat *st,
				 bool *relookup);

/* Renewal, for the kernel's writeback cache, under which it keeps a
 * regular file's size (and mtime) as its own writes left them and
 * ignores the size a GETATTR replies: with ON, a regular file found
 * changed from what the kernel was last given (by a lookup, a GETATTR or
 * the host watch, an OPEN) while no handle of the view has it open is
 * renewed: its inode is never found again, the next lookup of its name
 * makes a new one (a new node id), and the kernel, revalidating the
 * name, drops the old inode's size and pages with it. While it is open,
 * the renewal waits for the last close (inode_renew_due()): the kernel
 * keeps locks per inode, and handles of one file on two inodes would
 * not see each other's. Set once, at FUSE init. */
void inode_table_renew(struct inode_table *t, bool on);
/* Begins an OPEN of INO, until inode_open_end(); no renewal happens
 * meanwhile. With renewal on, -ESTALE for a regular file that was
 * renewed: the kernel found the inode by a name it is dropping, and
 * ESTALE has it look the name up again (LOOKUP_REVAL), which finds the
 * new inode, so two handles opened around a renewal never end up on two
 * inodes of one file. Returns 0 otherwise. */
int inode_open_begin(struct inode_table *t, struct inode *ino);
void inode_open_end(struct inode_table *t, struct inode *ino);
/* Renews the regular file INO whatever its attributes say (a save refused
 * over a host change: the kernel holds the stage's size), from a request
 * on HELD (0 or 1) of its handles. With other handles open, or an OPEN
 * in progress (their locks are the kernel's, on this inode), it waits
 * for the last close: inode_renew_due() then says so, and the closer
 * calls this again. Returns whether it was renewed now (renewal on, a
 * regular file, not already renewed) and has a name, which it copies
 * into *DIR (not pinned) and NAME. */
bool inode_renew(struct inode_table *t, struct inode *ino, uint32_t held, struct inode **dir,
		 char *name, size_t size);
/* Whether INO waits for a renewal and nothing of the view has it open or
 * is opening it any more. */
bool inode_renew_due(struct inode_table *t, struct inode *ino);

/* Directory watches: WD is INO's inotify watch (0 to forget it). */
void inode_set_watch(struct inode_table *t, struct inode *ino, int wd);
/* The directory watched by WD, pinned, or NULL. */
struct inode *inode_find_watch(struct inode_table *t, int wd);
/* Calls FN(ARG, WD) for the watch of every directory freed from now on,
 * with the table lock held (FN must not call back into the table). */
void inode_table_on_unwatch(struct inode_table *t, void (*fn)(void *, int), void *arg);

/* Calls FN(ARG, INO) for every inode; FN must not call into the table. */
void inode_table_each(struct inode_table *t, void (*fn)(void *, struct inode *), void *arg);

/* The view itself is about to remove a name of the object (DOMAIN, DEV,
 * INO): an unlink, or a rename over it. Marks its inode, if the table
 * holds one: a save of it that finds another file at its name then knows
 * the thread, not the host, put it there (stage.h). */
void inode_note_unnamed(struct inode_table *t, uint16_t domain, dev_t dev, ino_t ino);

/* The name DIR/NAME of the object (DOMAIN, DEV, INO), which has other
 * names, went through the view (an unlink, a rename over it). If the
 * table knows the object by that name, it falls back to the other name
 * it saw it under, if that one still designates it: the object's later
 * changes are journaled, and its fd found again, by a name it has. If
 * it is the other name the table keeps, that one is forgotten. */
void inode_name_gone(struct inode_table *t, uint16_t domain, dev_t dev, ino_t ino,
		     struct inode *dir, const char *name);

/* After a rename through the view: the object (DOMAIN, ST: what a stat
 * of it found), which was OLDPARENT/OLDNAME (NULL: not known), is now
 * NEWPARENT/NEWNAME. If the old name was the other one the table keeps
 * for a file with several names, only that one moves; if it was neither
 * (a third), nothing does. No-op if the table does not hold it. */
void inode_moved(struct inode_table *t, uint16_t domain, const struct stat *st,
		 struct inode *oldparent, const char *oldname, struct inode *newparent,
		 const char *newname);

/* The host watch saw the object INO (pinned; ST: a stat of it) appear as
 * DIR/NAME, a name the table does not know it by. A directory, or a file
 * with one name, was renamed there: that is its name now. A file with
 * several names whose name in the table still designates it got another
 * one (a link, made on the host, or put back by an undo and maybe about
 * to go again): the new one becomes an other name, the known one stays
 * (the file's changes through the view are journaled under it). Else
 * (one of its names was renamed there) the new one is its name. */
void inode_seen_as(struct inode_table *t, struct inode *ino, const struct stat *st,
		   struct inode *dir, const char *name);

/* The root directory INO is under (walks parents), or NULL for a
 * synthetic directory. */
struct root *inode_root(struct inode_table *t, struct inode *ino);

/* True if INO or a directory above it was last seen under a name that
 * MATCH accepts. */
bool inode_within(struct inode_table *t, struct inode *ino, bool (*match)(const char *name));

/* The depth of INO (then CHILD, if not NULL) below the directory TOP,
 * one of its ancestors (0 if INO is TOP, or TOP is not above it), and in
 * NAMES the first MAX names of the way down from TOP. */
size_t inode_names_below(struct inode_table *t, struct inode *ino, const struct inode *top,
			 const char *child, char (*names)[NAME_MAX + 1], size_t max);

/* Writes INO's path below the mount point ("user-data/workspace/a/b"),
 * for log messages. Returns BUF. */
char *inode_path(struct inode_table *t, struct inode *ino, const char *child, char *buf,
		 size_t size);

/* Counters for tests and diagnostics. */
struct inode_stats {
	size_t inodes, fds, evictions;
};
void inode_table_stats(struct inode_table *t, struct inode_stats *out);

#endif
