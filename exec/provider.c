/* provider.c - see provider.h. */
#include "provider.h"
#include "common/cleanup.h"
#include "common/home.h"
#include "common/log.h"
#include "common/mounts.h"
#include "common/spawn.h"
#include "store/lease.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

struct view {
	struct view *next;
	char *user, *thread;
	char id[SANDBOX_ID_LEN + 1];
	char mount[PATH_MAX];
	struct identity ident;
	char **owners;
	size_t nowners;
	size_t running;		     /* commands in it now */
	unsigned max_shell_sessions; /* an acquire's, until unmounted; 0: none */
	bool mounted;
	uint64_t mnt_id;   /* the mount's id, once mounted (0: unknown) */
	time_t idle_since; /* no lease, no command: parked */
};

struct provider {
	pthread_mutex_t lock;
	char home[PATH_MAX];
	const struct config *config;
	struct view *views;
};

void sandbox_id(const char *thread, char id[SANDBOX_ID_LEN + 1])
{
	unsigned char md[32];

	EVP_Digest(thread, strlen(thread), md, NULL, EVP_sha256(), NULL);
	for (int i = 0; i < SANDBOX_ID_LEN / 2; i++)
		snprintf(id + 2 * i, 3, "%02x", md[i]);
}

/* HOME/run/KIND/USER (KIND: views or locks), created (0700) if missing;
 * its fd. */
static int user_dir(const struct provider *p, const char *kind, const char *user)
{
	_cleanup_(closep) int home = home_open(p->home);
	_cleanup_(closep) int run = -1, sub = -1;

	if (home < 0)
		return home;
	if ((run = dir_ensure(home, HOME_RUN, 0700)) < 0)
		return run;
	if ((sub = dir_ensure(run, kind, 0700)) < 0)
		return sub;
	return dir_ensure(sub, user, 0700);
}

/* Takes the view's lock file (cross-process); returns its fd. */
static int lock_view(const struct provider *p, const struct view *v)
{
	_cleanup_(closep) int dir = user_dir(p, HOME_LOCKS, v->user);

	if (dir < 0)
		return dir;
	int fd = openat(dir, v->thread, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	while (flock(fd, LOCK_EX) < 0)
		if (errno != EINTR) {
			int e = -errno;
			close(fd);
			return e;
		}
	return fd;
}

/* Why sbxfs refused to mount V (LEASE_EXIT_REFUSED): another host holds
 * the thread, or a capacity limit (its own line in the log says which). */
static void refused(struct provider *p, const struct view *v, char *err, size_t errlen)
{
	struct store *s;
	struct lease l;
	char why[PATH_MAX + 256];

	if (store_open(p->home, &s, why, sizeof(why)) == 0) {
		int r = store_lease_get(s, v->user, v->thread, &l);
		store_close(s);
		if (r == 0 && lease_live(&l)) {
			snprintf(err, errlen,
				 "%s/%s is mounted on host %s (its lease expires in %.1f s unless"
				 " renewed)",
				 v->user, v->thread, l.host,
				 (double)(l.expires_ns - l.now_ns) / 1e9);
			return;
		}
	}
	snprintf(err, errlen,
		 "sbxfs refused to mount %s/%s: a capacity limit is reached, or another host"
		 " holds it (the broker's log says which)",
		 v->user, v->thread);
}

/* The id of the mount at PATH (statx's, from the path's walk alone: the
 * view's daemon is not asked), or 0 if the kernel does not say. */
static uint64_t mount_id(const char *path)
{
	struct statx stx;

	if (statx(AT_FDCWD, path, AT_STATX_DONT_SYNC | AT_NO_AUTOMOUNT, STATX_MNT_ID, &stx) < 0 ||
	    !(stx.stx_mask & STATX_MNT_ID))
		return 0;
	return stx.stx_mnt_id;
}

/* Mounts V (under its lock): a stale mount is detached first. */
static int mount_view(struct provider *p, struct view *v, char *err, size_t errlen)
{
	_cleanup_(closep) int lock = lock_view(p, v);
	_cleanup_(closep) int dir = -1;
	char exe[PATH_MAX];
	int r;

	if (lock < 0) {
		snprintf(err, errlen, "cannot lock the view's mount point: %s", strerror(-lock));
		return lock;
	}
	if (is_mount_point(v->mount)) {
		if (view_unmount(v->mount, true) < 0) {
			snprintf(err, errlen, "a stale mount at %s cannot be detached", v->mount);
			return -EBUSY;
		}
		log_info("detached a stale mount at %s", v->mount);
	}
	dir = user_dir(p, HOME_VIEWS, v->user);
	if (dir < 0 || ((r = mkdirat(dir, v->thread, 0700)) < 0 && errno != EEXIST)) {
		snprintf(err, errlen, "cannot make the mount point %s: %s", v->mount,
			 strerror(errno));
		return -errno;
	}
	/* sbxfs returns once the mount answers, with a one-line reason
	 * on stderr (which is the broker's log) when it cannot. */
	const char *argv[20 + 2 * CONFIG_MAX_MOUNTS];
	char mounts[CONFIG_MAX_MOUNTS][PATH_MAX + 64], owner[32], bytes[32], inodes[32];
	const struct config_limits *lim = &p->config->limits;
	size_t n = 0;
	sibling_program("sbxfs", exe, sizeof(exe));
	argv[n++] = exe;
	argv[n++] = "--home";
	argv[n++] = p->home;
	argv[n++] = "--user";
	argv[n++] = v->user;
	argv[n++] = "--thread";
	argv[n++] = v->thread;
	for (size_t i = 0; i < p->config->nmounts; i++) {
		const struct config_mount *m = &p->config->mounts[i];
		snprintf(mounts[i], sizeof(mounts[i]), "/mnt/%s=%s%s", m->name, m->hostdir,
			 m->ro ? ":ro" : "");
		argv[n++] = "--mount";
		argv[n++] = mounts[i];
	}
	if (identity_separate(&v->ident)) {
		/* The sandbox's uid reaches the view, and sees the home's
		 * files as its own. */
		snprintf(owner, sizeof(owner), "%u:%u", (unsigned)v->ident.uid,
			 (unsigned)v->ident.gid);
		argv[n++] = "-o";
		argv[n++] = "allow_other";
		argv[n++] = "--map-owner";
		argv[n++] = owner;
	}
	if (lim->disk) {
		snprintf(bytes, sizeof(bytes), "%llu", (unsigned long long)lim->disk);
		argv[n++] = "--quota-bytes";
		argv[n++] = bytes;
	}
	if (lim->disk_inodes) {
		snprintf(inodes, sizeof(inodes), "%llu", (unsigned long long)lim->disk_inodes);
		argv[n++] = "--quota-inodes";
		argv[n++] = inodes;
	}
	argv[n++] = v->mount;
	argv[n] = NULL;
	char why[512];
	r = spawn_wait_why(argv, why, sizeof(why));
	if (r == LEASE_EXIT_REFUSED) {
		refused(p, v, err, errlen);
		return -EBUSY;
	}
	if (r != 0) {
		snprintf(err, errlen, "sbxfs could not mount %s/%s: %s", v->user, v->thread,
			 *why ? why
			      : "it exited with no reason given (the broker's log may say more)");
		return -EIO;
	}
	v->mounted = true;
	v->mnt_id = mount_id(v->mount);
	log_info("mounted %s/%s (sandbox %s) at %s", v->user, v->thread, v->id, v->mount);
	return 0;
}

static void unmount_view(struct provider *p, struct view *v, bool lazy)
{
	_cleanup_(closep) int lock = lock_view(p, v);
	int r = view_unmount(v->mount, lazy);

	if (r < 0 && !lazy) {
		log_warn("%s is busy; detaching it", v->mount);
		r = view_unmount(v->mount, true);
	}
	if (r < 0)
		log_warn("cannot unmount %s: %s", v->mount, strerror(-r));
	else
		log_info("unmounted %s/%s (sandbox %s)", v->user, v->thread, v->id);
	v->mounted = false;
	v->max_shell_sessions = 0;
}

static void view_free(struct view *v)
{
	identity_release(&v->ident);
	for (size_t i = 0; i < v->nowners; i++)
		free(v->owners[i]);
	free(v->owners);
	free(v->user);
	free(v->thread);
	free(v);
}

static struct view *find(struct provider *p, const char *user, const char *thread)
{
	for (struct view *v = p->views; v; v = v->next)
		if (!strcmp(v->user, user) && !strcmp(v->thread, thread))
			return v;
	return NULL;
}

static struct view *find_or_add(struct provider *p, const char *user, const char *thread, char *err,
				size_t errlen)
{
	struct view *v = find(p, user, thread);

	if (v)
		return v;
	v = calloc(1, sizeof(*v));
	if (!v || !(v->user = strdup(user)) || !(v->thread = strdup(thread))) {
		if (v)
			free(v->user);
		free(v);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	v->ident.lock = -1;
	sandbox_id(thread, v->id);
	if ((size_t)snprintf(v->mount, sizeof(v->mount), "%s/" HOME_RUN "/" HOME_VIEWS "/%s/%s",
			     p->home, user, thread) >= sizeof(v->mount)) {
		snprintf(err, errlen,
			 "the mount point under %s/" HOME_RUN "/" HOME_VIEWS " is too long",
			 p->home);
		view_free(v);
		return NULL;
	}
	if (identity_take(p->home, user, thread, p->config->sandbox_uid_base,
			  p->config->sandbox_uid_count, &v->ident, err, errlen) < 0) {
		view_free(v);
		return NULL;
	}
	v->idle_since = time(NULL);
	v->next = p->views;
	p->views = v;
	return v;
}

/* Detaches what a broker that died left mounted under HOME/run/views. */
static void detach_stale(struct provider *p)
{
	char path[PATH_MAX];
	if ((size_t)snprintf(path, sizeof(path), "%s/" HOME_RUN "/" HOME_VIEWS, p->home) >=
	    sizeof(path))
		return;
	_cleanup_(closedirp) DIR *users = opendir(path);
	struct dirent *u, *e;

	while (users && (u = readdir(users))) {
		if (u->d_name[0] == '.')
			continue;
		char upath[PATH_MAX];
		if ((size_t)snprintf(upath, sizeof(upath), "%s/%s", path, u->d_name) >=
		    sizeof(upath))
			continue;
		_cleanup_(closedirp) DIR *ids = opendir(upath);
		while (ids && (e = readdir(ids))) {
			char mp[PATH_MAX];
			if ((size_t)snprintf(mp, sizeof(mp), "%s/%s", upath, e->d_name) >=
				    sizeof(mp) ||
			    e->d_name[0] == '.' || !is_mount_point(mp))
				continue;
			int r = view_unmount(mp, true);
			log_info("a view left mounted at %s by an earlier broker: %s", mp,
				 r < 0 ? strerror(-r) : "detached");
		}
	}
}

struct provider *provider_new(const char *home, const struct config *c)
{
	struct provider *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	pthread_mutex_init(&p->lock, NULL);
	snprintf(p->home, sizeof(p->home), "%s", home);
	p->config = c;
	detach_stale(p);
	return p;
}

void provider_free(struct provider *p)
{
	if (!p)
		return;
	while (p->views) {
		struct view *v = p->views;
		p->views = v->next;
		if (v->mounted)
			unmount_view(p, v, false);
		view_free(v);
	}
	pthread_mutex_destroy(&p->lock);
	free(p);
}

/* Whether V's mount is still at its mount point: the one it mounted, by
 * its id (a look-up in the kernel alone), or, where the kernel gives no
 * ids, any mount there (the mount table read: some 50 us a call). */
static bool still_mounted(const struct view *v)
{
	return v->mnt_id ? mount_id(v->mount) == v->mnt_id : is_mount_point(v->mount);
}

/* V mounted and answering (mounted again if its daemon died), under the
 * provider's lock. Every command and file tool asks first. */
static int ensure_mounted(struct provider *p, struct view *v, char *err, size_t errlen)
{
	struct statfs sf;

	if (v->mounted && still_mounted(v)) {
		/* statfs always reaches the daemon. */
		if (statfs(v->mount, &sf) == 0)
			return 0;
		log_warn("the view of %s/%s does not answer (%s); mounting it again", v->user,
			 v->thread, strerror(errno));
	}
	v->mounted = false;
	return mount_view(p, v, err, errlen);
}

static void update_idle(struct view *v)
{
	if (v->nowners == 0 && v->running == 0)
		v->idle_since = time(NULL);
}

int provider_acquire(struct provider *p, const char *user, const char *thread, const char *owner,
		     unsigned *max_sessions, char *mount, size_t size, char id[SANDBOX_ID_LEN + 1],
		     char *err, size_t errlen)
{
	int r = -ENOMEM;

	pthread_mutex_lock(&p->lock);
	struct view *v = find_or_add(p, user, thread, err, errlen);
	if (!v)
		goto out;
	if ((r = ensure_mounted(p, v, err, errlen)) < 0)
		goto out;
	bool held = false;
	for (size_t i = 0; i < v->nowners && !held; i++)
		held = !strcmp(v->owners[i], owner);
	if (!held) {
		char **o = realloc(v->owners, (v->nowners + 1) * sizeof(*o));
		if (!o || !(o[v->nowners] = strdup(owner))) {
			if (o)
				v->owners = o;
			snprintf(err, errlen, "out of memory");
			r = -ENOMEM;
			goto out;
		}
		v->owners = o;
		v->nowners++;
	}
	if (*max_sessions)
		v->max_shell_sessions = *max_sessions;
	*max_sessions = v->max_shell_sessions;
	snprintf(mount, size, "%s", v->mount);
	memcpy(id, v->id, SANDBOX_ID_LEN + 1);
out:
	pthread_mutex_unlock(&p->lock);
	return r;
}

int provider_release(struct provider *p, const char *user, const char *thread, const char *owner)
{
	int r = -ENOENT;

	pthread_mutex_lock(&p->lock);
	struct view *v = find(p, user, thread);
	for (size_t i = 0; v && i < v->nowners; i++) {
		if (strcmp(v->owners[i], owner))
			continue;
		free(v->owners[i]);
		v->owners[i] = v->owners[--v->nowners];
		update_idle(v);
		r = v->nowners == 0;
		break;
	}
	pthread_mutex_unlock(&p->lock);
	return r;
}

/* provider_use(), or with MOUNT false provider_reserve(). */
static int use(struct provider *p, const char *user, const char *thread, bool mount,
	       struct sandbox_view *out, char *err, size_t errlen)
{
	int r = -ENOMEM;

	pthread_mutex_lock(&p->lock);
	struct view *v = find_or_add(p, user, thread, err, errlen);
	if (v && (r = mount ? ensure_mounted(p, v, err, errlen) : 0) == 0) {
		v->running++;
		snprintf(out->mount, sizeof(out->mount), "%s", v->mount);
		memcpy(out->id, v->id, sizeof(out->id));
		out->ident = v->ident;
		out->max_shell_sessions = v->max_shell_sessions;
	}
	pthread_mutex_unlock(&p->lock);
	return r;
}

int provider_use(struct provider *p, const char *user, const char *thread, struct sandbox_view *out,
		 char *err, size_t errlen)
{
	return use(p, user, thread, true, out, err, errlen);
}

int provider_reserve(struct provider *p, const char *user, const char *thread,
		     struct sandbox_view *out, char *err, size_t errlen)
{
	return use(p, user, thread, false, out, err, errlen);
}

void provider_unuse(struct provider *p, const char *user, const char *thread)
{
	pthread_mutex_lock(&p->lock);
	struct view *v = find(p, user, thread);
	if (v && v->running) {
		v->running--;
		update_idle(v);
	}
	pthread_mutex_unlock(&p->lock);
}

void provider_tick(struct provider *p,
		   bool (*busy)(void *arg, const char *user, const char *thread), void *arg)
{
	time_t now = time(NULL);

	pthread_mutex_lock(&p->lock);
	for (struct view *v = p->views; v; v = v->next)
		if (v->mounted && v->nowners == 0 && v->running == 0 &&
		    now - v->idle_since >= (time_t)p->config->idle_timeout &&
		    !busy(arg, v->user, v->thread)) {
			log_info("%s/%s idle for %u s", v->user, v->thread,
				 p->config->idle_timeout);
			unmount_view(p, v, false);
		}
	pthread_mutex_unlock(&p->lock);
}

void provider_each(struct provider *p,
		   void (*fn)(void *arg, const char *user, const char *thread, const char *id,
			      const char *mount, uid_t uid, size_t leases, size_t running,
			      bool mounted),
		   void *arg)
{
	pthread_mutex_lock(&p->lock);
	for (struct view *v = p->views; v; v = v->next)
		fn(arg, v->user, v->thread, v->id, v->mount, v->ident.uid, v->nowners, v->running,
		   v->mounted);
	pthread_mutex_unlock(&p->lock);
}
