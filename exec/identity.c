/* identity.c - see identity.h. */
#include "identity.h"
#include "common/cleanup.h"
#include "common/home.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <openssl/evp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define HOST_LOCKS "/run/sbxfs"

/* The directory of the per-uid lock files, shared by every broker of
 * this host where /run allows, else by this home's. */
static int lock_dir(const char *home)
{
	_cleanup_(closep) int run = open("/run", O_PATH | O_DIRECTORY | O_CLOEXEC);
	_cleanup_(closep) int top = -1;

	if (run >= 0 && (top = dir_ensure(run, "sbxfs", 0700)) >= 0)
		return dir_ensure(top, HOME_UIDS, 0700);
	_cleanup_(closep) int h = home_open(home);
	_cleanup_(closep) int hrun = h < 0 ? h : dir_ensure(h, HOME_RUN, 0700);
	return hrun < 0 ? hrun : dir_ensure(hrun, HOME_UIDS, 0700);
}

/* Where the search starts: a hash of the full key, so that two
 * threads whose 8-hex-digit names collide still start apart. */
static unsigned first_slot(const char *home, const char *user, const char *thread, unsigned count)
{
	unsigned char md[32];
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned slot = 0;

	if (ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) &&
	    EVP_DigestUpdate(ctx, home, strlen(home) + 1) &&
	    EVP_DigestUpdate(ctx, user, strlen(user) + 1) &&
	    EVP_DigestUpdate(ctx, thread, strlen(thread) + 1) && EVP_DigestFinal_ex(ctx, md, NULL))
		slot = ((unsigned)md[0] << 24 | (unsigned)md[1] << 16 | (unsigned)md[2] << 8 |
			md[3]) %
		       count;
	EVP_MD_CTX_free(ctx);
	return slot;
}

/* True if some account or group of the host already has ID. */
static bool id_named(uid_t id)
{
	struct passwd pw, *pp = NULL;
	struct group gr, *gp = NULL;
	char buf[4096];

	return (getpwuid_r(id, &pw, buf, sizeof(buf), &pp) == 0 && pp) ||
	       (getgrgid_r((gid_t)id, &gr, buf, sizeof(buf), &gp) == 0 && gp);
}

int identity_take(const char *home, const char *user, const char *thread, uid_t base,
		  unsigned count, struct identity *id, char *err, size_t errlen)
{
	id->lock = -1;
	if (geteuid() != 0) {
		id->uid = geteuid();
		id->gid = getegid();
		return 0;
	}
	id->uid = (uid_t)-1;
	_cleanup_(closep) int dir = lock_dir(home);
	if (dir < 0) {
		snprintf(err, errlen,
			 "cannot make the sandbox uid locks in " HOST_LOCKS "/uids: %s",
			 strerror(-dir));
		return dir;
	}
	unsigned start = first_slot(home, user, thread, count);
	for (unsigned i = 0; i < count; i++) {
		uid_t uid = base + (start + i) % count;
		char name[16];

		if (uid == 0 || id_named(uid))
			continue;
		snprintf(name, sizeof(name), "%u", (unsigned)uid);
		int fd = openat(dir, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0) {
			int e = -errno;
			snprintf(err, errlen, "cannot open the lock of sandbox uid %u: %s",
				 (unsigned)uid, strerror(errno));
			return e;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			id->uid = uid;
			id->gid = (gid_t)uid;
			id->lock = fd;
			return 0;
		}
		close(fd);
	}
	snprintf(err, errlen, "every sandbox uid from %u to %u is in use; raise sandbox_uid_count",
		 (unsigned)base, (unsigned)(base + count - 1));
	return -EAGAIN;
}

void identity_release(struct identity *id)
{
	closep(&id->lock);
	id->lock = -1;
	id->uid = (uid_t)-1;
}
