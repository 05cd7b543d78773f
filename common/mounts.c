/* mounts.c - see mounts.h. */
#include "mounts.h"
#include "cleanup.h"
#include "spawn.h"

#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <unistd.h>

int view_unmount(const char *mp, bool lazy)
{
	struct statfs sf;
	/* statfs always reaches the daemon (stat may hit the kernel cache). */
	bool stale = statfs(mp, &sf) < 0 && errno == ENOTCONN;

	if (geteuid() == 0)
		return umount2(mp, stale || lazy ? MNT_DETACH : 0) == 0 ? 0 : -errno;
	const char *const fusermount[] = { "fusermount3", "-u", stale || lazy ? "-z" : "-q", mp,
					   NULL };
	int r = spawn_wait(fusermount);
	return r == 0 ? 0 : r < 0 ? r : -EBUSY;
}

void mount_unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] && s[3]) {
			*o++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/* A line of a mountinfo table, split in place:
 * ID PARENT MAJOR:MINOR ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE ... */
struct mount_line {
	char *dev, *root, *point, *type;
	bool propagated; /* a peer or a slave (shared:N, master:N) */
};

static bool mount_line_split(char *line, struct mount_line *m)
{
	char *save = NULL, *f[6] = { NULL }, *t;

	f[0] = strtok_r(line, " \n", &save);
	for (int i = 1; i < 6 && f[i - 1]; i++)
		f[i] = strtok_r(NULL, " \n", &save);
	if (!f[5])
		return false;
	m->dev = f[2];
	m->root = f[3];
	m->point = f[4];
	mount_unescape(m->root);
	mount_unescape(m->point);
	m->propagated = false;
	while ((t = strtok_r(NULL, " \n", &save)) && strcmp(t, "-"))
		m->propagated |= !strncmp(t, "shared:", 7) || !strncmp(t, "master:", 7);
	m->type = t ? strtok_r(NULL, " \n", &save) : NULL;
	return m->type != NULL;
}

bool mountinfo_find(const char *mp, char *type, size_t size, char *dev, size_t devsize)
{
	_cleanup_(fclosep) FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[8192];
	struct mount_line m;
	bool found = false;

	while (f && fgets(line, sizeof(line), f)) {
		if (!mount_line_split(line, &m) || strcmp(m.point, mp))
			continue;
		/* Mounts stacked on one path are listed bottom up. */
		found = true;
		snprintf(type, size, "%s", m.type);
		if (dev)
			snprintf(dev, devsize, "%s", m.dev);
	}
	return found;
}

bool is_mount_point(const char *mp)
{
	char type[64];

	return mountinfo_find(mp, type, sizeof(type), NULL, 0);
}

/* MP as an absolute path without symlinks, as the mount tables spell it.
 * A dead FUSE daemon's mount point may fail to resolve itself (ENOTCONN):
 * then its directory is resolved and its name appended. */
static int mount_path(const char *mp, char out[PATH_MAX])
{
	char parent[PATH_MAX];

	if (realpath(mp, out))
		return 0;
	int e = neg_errno();
	if (e != -ENOTCONN)
		return e;
	_cleanup_(freep) char *a = strdup(mp), *b = strdup(mp);
	if (!a || !b)
		return -ENOMEM;
	const char *base = basename(a), *dir = dirname(b);
	if (!strcmp(base, ".") || !strcmp(base, "..") || !strcmp(base, "/") ||
	    !realpath(dir, parent))
		return e;
	if ((size_t)snprintf(out, PATH_MAX, "%s/%s", strcmp(parent, "/") ? parent : "", base) >=
	    PATH_MAX)
		return -ENAMETOOLONG;
	return 0;
}

int view_mounted_at(const char *mp, char *type, size_t size)
{
	char path[PATH_MAX];
	int r = mount_path(mp, path);

	if (r < 0)
		return r;
	if (!mountinfo_find(path, type, size, NULL, 0))
		return -EINVAL; /* as umount2(2) says it */
	return !strcmp(type, VIEW_FSTYPE);
}

/* Whether the mount table at TABLE holds a mount of device DEV that an
 * unmount of MP will not take with it: any but a copy at MP itself
 * that gets the unmount by propagation (a slave or peer there). */
static bool holds(const char *table, const char *dev, const char *mp)
{
	_cleanup_(fclosep) FILE *f = fopen(table, "re");
	char line[8192];
	struct mount_line m;

	while (f && fgets(line, sizeof(line), f)) {
		if (!mount_line_split(line, &m) || strcmp(m.dev, dev))
			continue;
		if (!(m.propagated && !strcmp(m.point, mp) && !strcmp(m.root, "/")))
			return true;
	}
	return false;
}

int view_holders(const char *mp, struct view_holder *h, size_t max)
{
	char path[PATH_MAX], type[64], dev[32], own[64] = "", seen[64][64], ns[64];
	size_t nseen = 0;
	int n = 0, r = mount_path(mp, path);

	if (r < 0)
		return r;
	if (!mountinfo_find(path, type, sizeof(type), dev, sizeof(dev)))
		return -EINVAL;
	if (readlink("/proc/self/ns/mnt", own, sizeof(own) - 1) < 0)
		return neg_errno();
	_cleanup_(closedirp) DIR *proc = opendir("/proc");
	if (!proc)
		return neg_errno();
	/* Ascending pids: a namespace is named by its first process. */
	for (struct dirent *e; (e = readdir(proc));) {
		char link[PATH_MAX], table[PATH_MAX];
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(link, sizeof(link), "/proc/%s/ns/mnt", e->d_name);
		ssize_t len = readlink(link, ns, sizeof(ns) - 1);
		if (len < 0)
			continue; /* gone, or not ours to see */
		ns[len] = '\0';
		bool known = !strcmp(ns, own);
		for (size_t i = 0; i < nseen && !known; i++)
			known = !strcmp(seen[i], ns);
		if (known)
			continue;
		if (nseen < sizeof(seen) / sizeof(*seen))
			snprintf(seen[nseen++], sizeof(*seen), "%s", ns);
		snprintf(table, sizeof(table), "/proc/%s/mountinfo", e->d_name);
		if (!holds(table, dev, path))
			continue;
		if ((size_t)n < max) {
			h[n].pid = (pid_t)atoi(e->d_name);
			snprintf(table, sizeof(table), "/proc/%s/comm", e->d_name);
			_cleanup_(fclosep) FILE *comm = fopen(table, "re");
			if (!comm || !fgets(h[n].comm, sizeof(h[n].comm), comm))
				snprintf(h[n].comm, sizeof(h[n].comm), "?");
			h[n].comm[strcspn(h[n].comm, "\n")] = '\0';
		}
		n++;
	}
	return n;
}
