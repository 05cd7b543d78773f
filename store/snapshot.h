/* snapshot.h - what a thread's workspace and outputs hold, file by file.
 *
 * The reference rules (shared/seeds/003, "workspace change summaries"):
 *
 *   - roots in order: workspace, then outputs (uploads are user input);
 *   - a sorted walk: in each directory its files by name, then its
 *     subdirectories by name; directories named like EXCLUDED_DIRS are
 *     skipped at any depth, and a symlink is recorded as a link, never
 *     followed;
 *   - at most MAX_FILES entries (default 2,000); if there are more, the
 *     snapshot is truncated and later files and roots are not scanned;
 *   - sensitive-looking paths (snapshot_sensitive()) are metadata only:
 *     their content is never read;
 *   - other files: a 4 KiB sample decides binary or text (binary by
 *     extension, a NUL byte, invalid UTF-8; UTF-16 with a BOM is text);
 *     files up to 256 KiB get a SHA-256 and are binary too if the whole
 *     file does not decode (snapshot_text_decode()); larger ones are
 *     "large";
 *   - beyond the reference, a text whose content holds a credential
 *     (secrets.h: all of a file up to 256 KiB, the sample of a larger
 *     one) is the same stub as a sensitive name: no hash, its text not
 *     kept;
 *   - a file that vanishes (or cannot be read) while it is scanned is left
 *     out, and the snapshot still succeeds.
 *
 * Every directory is opened relative to its parent with O_NOFOLLOW, so a
 * symlink swapped in during the walk cannot lead it outside the roots.
 *
 * A scan given an earlier one (KNOWN) does not read again a file whose
 * inode, size, mtime and ctime are those KNOWN recorded, provided that
 * ctime was settled: a second (SNAPSHOT_SETTLE_NS) or more before the
 * earlier scan began. A write since changes the ctime, which users
 * cannot set; the margin covers the coarse clock file times come from
 * (git's index does the same against "racy" files).
 */
#ifndef SBX_SNAPSHOT_H
#define SBX_SNAPSHOT_H

#include "common/hash.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define SNAPSHOT_MAX_FILES 2000
#define SNAPSHOT_HASH_MAX (256 * 1024)
#define SNAPSHOT_SAMPLE 4096
#define SNAPSHOT_SETTLE_NS 1000000000LL

struct snap_file {
	char *path;	  /* virtual: "/mnt/user-data/workspace/a/b.txt" */
	const char *root; /* "workspace" or "outputs" */
	bool symlink;
	char *target; /* symlink's target, verbatim */
	int64_t size, mtime_ns;
	bool sensitive, binary, large;
	bool hashed;
	uint8_t sha256[SHA256_BYTES];
	bool absent; /* known not to exist (from the journal;
				 * never in a scan) */
	uint64_t ino;
	int64_t ctime_ns; /* as the stat that described it found them */
	bool settled;	  /* a scan found its ctime settled (see above) */
};

struct snapshot {
	struct snap_file *files;
	size_t n, cap;
	bool truncated;	  /* more files existed than MAX_FILES */
	size_t max_files; /* the limit it was taken with (0: unknown) */
	uint64_t bytes_hashed;
	int64_t base; /* as loaded: kept as its differences from snapshot
		       * BASE (0: kept whole) */
};

/* Called now and then during a scan with the files recorded so far. */
typedef void (*snapshot_progress)(void *arg, size_t files);
/* Called with the content of every text file that was hashed (so a diff
 * can be made later); a non-zero return stops the scan with that error. */
typedef int (*snapshot_keep)(void *arg, const struct snap_file *f, const uint8_t *data, size_t len);

/* Scans the roots (fds of the backing directories; -1 to skip one) into
 * OUT, calling PROGRESS and KEEP (either may be NULL) with ARG; a file
 * KNOWN (an earlier scan of the same roots, or NULL) holds unchanged is
 * described from it, not read (KEEP is not called for it). Returns 0,
 * or -errno if a root itself cannot be read or KEEP failed. */
int snapshot_take(int workspace_fd, int outputs_fd, size_t max_files, const struct snapshot *known,
		  snapshot_progress progress, snapshot_keep keep, void *arg, struct snapshot *out);
void snapshot_free(struct snapshot *s);
/* A new entry at the end of S, zeroed (NULL: out of memory). */
struct snap_file *snapshot_append(struct snapshot *s);

/* Describes one file as a scan records it: F gets PATH (a virtual path,
 * "/mnt/user-data/ROOT/..."), its root and attributes ST; a symlink its
 * TARGET; a regular file's content is read from FD (readable) unless PATH
 * is sensitive, and KEEP gets the text of a hashed file. Returns 0 (the
 * caller then frees F: snap_file_free()), -ENOENT if ST is neither a
 * regular file nor a symlink, -errno if it cannot be read, or KEEP's
 * non-zero return. */
int snapshot_describe(int fd, const struct stat *st, const char *path, const char *target,
		      snapshot_keep keep, void *arg, struct snap_file *f);
/* The same for the file NAME in directory DFD, never following a
 * symlink; -ENOENT if it does not exist. ST: what an lstat of it just
 * found, or NULL to stat it here. */
int snapshot_file_at(int dfd, const char *name, const struct stat *st, const char *path,
		     snapshot_keep keep, void *arg, struct snap_file *f);
void snap_file_free(struct snap_file *f);

/* The classification rules, exposed for tests and for the journal. */
bool snapshot_excluded_dir(const char *name);
/* True if a directory on virtual PATH is excluded: a scan never sees it. */
bool snapshot_path_excluded(const char *path);
/* True if virtual PATH is sensitive by its name alone (docs/changes.md):
 * its content is never read. */
bool snapshot_path_sensitive(const char *path);
/* True if PATH or any of its components looks like it holds a secret. */
bool snapshot_sensitive(const char *path);
bool snapshot_binary_name(const char *name);
/* True if the first bytes of a file, SAMPLE (N bytes, possibly cut in
 * the middle of a character), are text. */
bool snapshot_text_sample(const uint8_t *sample, size_t n);
/* True if the text of a file's content DATA (LEN bytes, the whole file)
 * holds a credential by the content rules (secrets.h), in its decoded
 * text: a scan makes such a file a sensitive stub. */
bool snapshot_text_secret(const char *data, size_t len);
/* The text of a file's content DATA (LEN bytes), decoded as the reference
 * decodes it: UTF-8 with or without a BOM, or UTF-16 after its BOM. Sets
 * *TEXT (malloc'd, NUL-terminated UTF-8, the BOM stripped: a diff must not
 * show it as a character) and *TEXT_LEN. Returns 0, -EILSEQ if DATA is
 * not text, or -ENOMEM. */
int snapshot_text_decode(const char *data, size_t len, char **text, size_t *text_len);

#endif
