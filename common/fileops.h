/* fileops.h - what a copy of a file and a record of its attributes need,
 * shared by the view's stages, its pre-images and sbx run undo.
 *
 * A file's attributes ("meta") are its owner, group, mode, times and
 * extended attributes (POSIX ACLs among them), recorded as one opaque
 * blob the store keeps and meta_apply() gives back.
 */
#ifndef SBX_FILEOPS_H
#define SBX_FILEOPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* Gives the new file FD the owner, group, mode and extended attributes
 * of the file RFD (any descriptor of it but an O_PATH one), whose
 * attributes are ST. */
int file_copy_metadata(int fd, int rfd, const struct stat *st);

/* Replaces FD's content with RFD's: a reflink where the filesystem
 * shares blocks, else RFD's data ranges (holes stay holes) by
 * copy_file_range, else by read and write. */
int file_copy_content(int fd, int rfd);

/* The SHA-256 of what FD (open for reading) holds from its offset on,
 * into OUT: 0, or -errno. */
int file_sha256(int fd, uint8_t out[32]);

struct meta {
	mode_t mode; /* type and permission bits */
	uid_t uid;
	gid_t gid;
	int64_t atime_ns, mtime_ns;
	char *xattrs; /* name NUL, 4-byte little-endian length, value; ... */
	size_t xattrs_len;
};

/* Reads the attributes of NAME in DIRFD (NULL or "": DIRFD itself), a
 * symlink not followed (a symlink's extended attributes are not read). */
int meta_read(int dirfd, const char *name, struct meta *m);
void meta_free(struct meta *m);

/* M as one blob (malloc'd, *LEN bytes), and back (-EINVAL if it is not
 * one). */
int meta_encode(const struct meta *m, uint8_t **out, size_t *len);
int meta_decode(const uint8_t *blob, size_t len, struct meta *m);

/* Gives NAME in DIRFD (NULL or "": DIRFD itself) the attributes M:
 * owner, mode, extended attributes (those it has and M lacks removed),
 * then times. A symlink is not followed: only its owner and times are
 * set. */
int meta_apply(int dirfd, const char *name, const struct meta *m);

#endif
