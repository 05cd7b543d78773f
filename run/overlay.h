/* overlay.h - the review and the apply of an overlay (docs/try.md): what
 * the agent changed in a project, judged against the project as it is
 * now and as it was at each path's first touch (its origin,
 * store/origins.h).
 *
 * A change is a path whose object the overlay shows differently from the
 * project: in content, type, mode or symlink target, or present on one
 * side only. Paths the agent never touched are never changes, whatever
 * the person does to them meanwhile. A change is a conflict when the
 * project's object there is not its origin any more (its inode, size,
 * mtime or ctime moved, and its content is not the origin's either), or,
 * for a path the agent made, when the project has one there now.
 *
 * Every path is opened below the layer's or the project's directory fd
 * by openat2() with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS: a symlink the
 * agent made or the person put in place meanwhile is an object, never a
 * way out.
 */
#ifndef SBX_RUN_OVERLAY_H
#define SBX_RUN_OVERLAY_H

#include "common/error.h"
#include "common/ids.h"
#include "store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

enum ov_kind { OV_ADDED, OV_MODIFIED, OV_DELETED, OV_RENAMED };

struct ov_change {
	char *path; /* below the project: "src/a.c" */
	char *from; /* OV_RENAMED: the path it had (deleted there) */
	enum ov_kind kind;
	bool in_project, in_overlay; /* PATH's object on each side */
	struct stat project;	     /* as lstat() found it, if in_project */
	struct stat overlay;	     /* the layer's object, if in_overlay */
	const char *conflict;	     /* why it is one, or NULL */
	bool origin;		     /* the agent first touched PATH over the
				      * project's object (else: made it) */
	bool base_hashed;	     /* the origin's content is known: */
	uint8_t base_sha256[32];     /* its SHA-256 (a --3way's base) */
};

struct ov_review {
	struct ov_change *v; /* by path; directories too (ov_is_dir()) */
	size_t n, cap;
	size_t conflicts;
	/* Project files the agent read and never changed, changed on the
	 * project since it read them (its read marks): what its changes may
	 * rest on. By path. */
	char **stale;
	size_t n_stale, cap_stale;
	int layer_fd, project_fd; /* borrowed: O_PATH directories */
};

/* Reviews the overlay whose layer is LAYER_FD, of the project PROJECT_FD
 * (O_PATH directories, left to the caller), with the origins of USER's
 * THREAD in S. Returns 0 with OUT filled (ov_review_free()), or -errno. */
int ov_review(int layer_fd, int project_fd, struct store *s, const char *user, const char *thread,
	      struct ov_review *out);
void ov_review_free(struct ov_review *r);

/* Whether change C is of a directory (on the side it is on). */
bool ov_is_dir(const struct ov_change *c);
/* "added", "modified", "deleted" or "renamed". */
const char *ov_kind_name(enum ov_kind k);
/* git's one-letter status of C: A, M, D, R, T (a type changed). */
char ov_status_letter(const struct ov_change *c);

/* Whether change C is chosen by the N PATHS: all are if N is 0; else
 * one of its paths (a rename's either) is one of them or below one. */
bool ov_chosen(const struct ov_change *c, const char *const *paths, size_t n);

/* Whether PATH is inside a repository's internals (a .git component):
 * never shown as a file's change, never applied as one. */
bool ov_in_git(const char *path);

/* Build output and the like, counted but not listed unless asked for:
 * PATH has a component such as node_modules, target, .venv. */
bool ov_noise(const char *path);

/* Opens PATH below ROOT (O_PATH | O_NOFOLLOW and FLAGS), following no
 * symlink: an fd, or -errno. */
int ov_open(int root, const char *path, int flags);
/* PATH's directory below ROOT, opened so (O_PATH), and its last
 * component into *BASE: an fd, or -errno. */
int ov_parent(int root, const char *path, const char **base);

/* Why a diff summarizes a change's content ("Binary files ... differ")
 * rather than show it. */
enum ov_hidden {
	OV_SHOWN,	   /* its content is in the diff (or it has none) */
	OV_SECRET_NAME,	   /* its name looks like a secret's (.env, *.pem...) */
	OV_SECRET_CONTENT, /* its text holds a credential (store/secrets.h) */
	OV_BINARY,	   /* a NUL byte in the first 8,000 of a side */
};

/* The git-style diff of C (headers, then hunks) appended to *OUT
 * (malloc'd, *LEN bytes): 0, or -errno. A binary file, and one whose
 * name or text looks like it holds a secret (either side, as the run
 * reports judge), is summarized ("Binary files ... differ", with why),
 * and *HIDDEN (if not NULL) says why its content is not shown. */
int ov_diff(const struct ov_review *r, const struct ov_change *c, char **out, size_t *len,
	    enum ov_hidden *hidden);

/* What ov_apply() does, and with what. */
struct ov_apply {
	const char *const *only; /* N_ONLY paths: those, and what is below */
	size_t n_only;
	bool dry_run;	     /* judge and say, write nothing */
	bool all_or_nothing; /* a conflict among the chosen: nothing written */
	bool three_way;	     /* a text file changed on both sides is merged
			      * against the origin's content (diff3 -m), with
			      * conflict markers where the sides overlap */
	struct store *s;     /* the origins of USER's THREAD, moved to what
			      * the apply leaves */
	const char *user, *thread;
	/* HOME (or NULL: not recorded) and PROJECT, the project's absolute
	 * path: an apply that writes is a run of the project's record
	 * (run/project_run.h), which sbx run undo takes back. */
	const char *home, *project;
	/* Told each chosen change's outcome: "applied" ("would apply" in
	 * a dry run), "merged" (--3way), "conflict", "skipped" or
	 * "failed", and why (or NULL). */
	void (*say)(void *arg, const struct ov_change *c, const char *outcome, const char *why);
	void *arg;
};

struct ov_applied {
	size_t applied, conflicts, skipped, failed;
	size_t merged, marked;		/* --3way: merged, of them with conflict markers */
	int64_t run;			/* the apply's run (0: it wrote nothing) */
	char record[THREAD_ID_MAX + 1]; /* the project's record: the run's thread */
};

/* Applies R's chosen changes to the project: each path checked again
 * against what the review saw just before it is written, each file and
 * symlink published whole (made under a temporary name in its directory,
 * then renamed over the path: a reader, or a crash, sees the old or the
 * new object, never a part), removals deepest first, placements parents
 * first. Paths with a .git component, FIFOs, sockets and devices are
 * skipped. Returns 0 with *OUT (a conflict or a failure is counted
 * there, not an error), or -errno (E) if the project cannot be written
 * at all, or its run could not be begun (nothing written) or ended. */
int ov_apply(struct ov_review *r, const struct ov_apply *a, struct ov_applied *out,
	     struct error *e);

/* A name for a temporary entry in a project directory, which the next
 * apply to the project removes if it is left there (a killed apply's or
 * undo's). */
void ov_temp_name(char *out, size_t size);

/* Removes the temporary entries (ov_temp_name()) in the directories of
 * the project's N PATHS, which a killed apply or undo left, made and not
 * yet renamed. Applies and undos of a project take turns: none is
 * another's in flight. Each directory is read once. */
void ov_drop_leftovers(int project_fd, const char *const *paths, size_t n);

/* The origins of the N PATHS of USER's overlay THREAD in S become what
 * the project PROJECT_FD holds there now (none where it holds nothing),
 * in one transaction: after an apply, or its undo, wrote them. */
void ov_origins_follow(struct store *s, const char *user, const char *thread, int project_fd,
		       const char *const *paths, size_t n);

/* Drops overlay THREAD of USER in the home HOMEFD: its thread's
 * directory, the layer with it, and its origins in S. Returns 0 or
 * -errno. */
int ov_discard(int homefd, struct store *s, const char *user, const char *thread);

#endif
