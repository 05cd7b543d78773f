/* gate_request.h - read-before-write applied to the view's requests.
 *
 * gate.c keeps the marks and decides on versions; it knows nothing of the
 * view. This is the view's side of it: which file a request changes, the
 * path a refusal is logged and audited under, which changes are exempt
 * (files inside a version-control directory: .git, .hg, .svn), which are
 * gated although they only add or move a name (into such a directory),
 * and which carry a current mark across the ctime they move (links,
 * renames). A request calls it once to begin a change and once to end it:
 *
 *   gate_file_begin()  ... gate_unlock()	a change of one file's content
 *					or metadata (through a handle or
 *					by name)
 *   gate_*_begin()     ... gate_names_end()	a change of names (ops_change.c)
 *
 * A begin returns 0 with the ticket locked for the change (or unlocked
 * where the gate is off or has nothing to decide; ending it then does
 * nothing), or refuses: -EACCES (-EXDEV for a directory moved into a
 * version-control directory) with nothing locked, logged and audited. In
 * audit mode a would-be refusal is logged and audited and the change goes
 * ahead. Hold at most one gate lock at a time, taken after the file's
 * stage lock (stage.h).
 */
#ifndef SBX_GATE_REQUEST_H
#define SBX_GATE_REQUEST_H

#include "gate.h"
#include "fuse_api.h"

#include <stdbool.h>
#include <sys/stat.h>

struct view;
struct inode;

/* Locks T for the file INO (FD any fd of it: an open file, its stage, or
 * its O_PATH fd; ST its attributes, if the caller just took them, else
 * NULL) and, if OP is set, decides a content change OP of it ("write",
 * "truncate", ...). Returns -errno if FD cannot be looked at. */
int gate_file_begin(struct view *v, fuse_req_t req, struct gate_ticket *t, struct inode *ino,
		    int fd, const struct stat *st, const char *op);

/* True if a content change of the file INO (FD any fd of it, ST its
 * attributes or NULL) would pass the gate now; nothing is logged or
 * audited, nothing locked after. For a handle opened to write, whose
 * writes the kernel's writeback cache holds back until the gate could
 * no longer refuse them: one that would not pass bypasses the cache
 * (ops_file.c), and the gate decides its writes one by one. */
bool gate_file_passes(struct view *v, struct inode *ino, int fd, const struct stat *st);

/* The gate of one change of names, from one of the begins below (or
 * gate_names_none()) to gate_names_end(), and for a rename or a removal
 * gate_names_commit() once the change is made. */
struct gate_names {
	struct gate_ticket t;
	int fd;		       /* the file decided on, or -1 */
	bool fd_owned;	       /*   closed by gate_names_end() */
	bool replaces;	       /* a rename's target was there (gate on) */
	bool forget;	       /* a file's name is removed */
	bool exchange;	       /* a rename exchanges two names */
	bool carry, carry_dst; /* a rename's marks to carry across, */
	struct stat src, dst;  /*   from the files' attributes before */
};

/* A new name (mknod, mkdir, symlink, create): nothing to decide. */
void gate_names_none(struct gate_names *g);
/* DIR gets a new link to FILE (FD its O_PATH fd, kept by the caller). */
int gate_link_begin(struct view *v, fuse_req_t req, struct gate_names *g, struct inode *file,
		    int fd, struct inode *dir);
/* DIR/NAME (directory fd DFD) is removed: unlink, or rmdir if RMDIR.
 * Decided only with --rbw-unlink. */
int gate_remove_begin(struct view *v, fuse_req_t req, struct gate_names *g, struct inode *dir,
		      int dfd, const char *name, bool rmdir);
/* FROM/NAME (fd FFD) moves to TO/NEWNAME (fd TFD) with renameat2 FLAGS:
 * replacing a file overwrites it, an exchange overwrites both, and a file
 * entering a version-control directory sheds its gate, so each of them is
 * decided. */
int gate_rename_begin(struct view *v, fuse_req_t req, struct gate_names *g, struct inode *from,
		      int ffd, const char *name, struct inode *to, int tfd, const char *newname,
		      unsigned int flags);
/* Unlocks after the syscall (DONE: it succeeded): other hard links of the
 * file saw their ctime move, and a current mark stays current. */
void gate_names_end(struct gate_names *g, bool done);
/* After the change, the stored marks follow the names: a removed file's
 * is dropped; a renamed file's current mark stays current and is stored
 * under its new path. The arguments are those of the begin. */
void gate_names_commit(struct view *v, struct gate_names *g, struct inode *from, int ffd,
		       const char *name, struct inode *to, int tfd, const char *newname);

/* Stores the mark of INO (attributes ST, FD a descriptor of it) if it
 * moved since last stored (a writer's close, an fsync): gate_persist(). */
void gate_store(struct view *v, struct inode *ino, int fd, const struct stat *st);

#endif
