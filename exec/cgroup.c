/* cgroup.c - see cgroup.h. */
#include "cgroup.h"
#include "common/cleanup.h"
#include "common/log.h"
#include "common/units.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum ctl { CTL_PIDS, CTL_MEMORY, CTL_CPU, NCTL };
static const char *const ctl_name[NCTL] = { "pids", "memory", "cpu" };

/* One cgroup hierarchy the broker uses. */
struct hier {
	int version;	     /* 1 or 2 */
	char base[PATH_MAX]; /* <the broker's cgroup>/sbx-<home> */
	unsigned ctls;	     /* 1 << enum ctl */
};

struct cgroups {
	struct config_limits c;
	struct hier h[NCTL];
	size_t nh;
	int hier_of[NCTL];    /* index into h, -1: the fallback */
	char why[NCTL][320];  /* what holds instead, and why */
	char tag[24];	      /* sbx-<home> */
	bool probe;	      /* only look (sbx doctor): make nothing */
	char v2_why[400];     /* why the unified hierarchy is not used */
	char v2_top[400];     /* used at its top instead of our cgroup: why */
	pthread_mutex_t lock; /* groups being made, the graves */
	unsigned long next_leaf;
	char **grave; /* leaves to remove once empty */
	size_t ngrave, grave_cap;
};

/* Leaves DIR for cgroups_tick() to remove. */
static void bury(struct cgroups *l, const char *dir)
{
	pthread_mutex_lock(&l->lock);
	if (l->ngrave == l->grave_cap) {
		size_t cap = l->grave_cap ? 2 * l->grave_cap : 16;
		char **g = realloc(l->grave, cap * sizeof(*g));
		if (g) {
			l->grave = g;
			l->grave_cap = cap;
		}
	}
	char *copy = l->ngrave < l->grave_cap ? strdup(dir) : NULL;
	if (copy)
		l->grave[l->ngrave++] = copy;
	pthread_mutex_unlock(&l->lock);
}

struct cgroup_leaf {
	struct cgroups *l;
	char dir[NCTL][PATH_MAX];   /* per hierarchy: the leaf */
	char group[NCTL][PATH_MAX]; /* per hierarchy: the sandbox */
	int procs[NCTL];	    /* the leaf's cgroup.procs, O_WRONLY */
	int v2dir;		    /* the unified leaf, for CLONE_INTO_CGROUP */
	uid_t uid;
	bool separate;
	long long pids_seen, oom_seen;
};

/* ---- small file helpers ------------------------------------------------------ */

/* snprintf for paths and messages here: cgroup paths are a few hundred
 * bytes (ids are at most 128), far below the PATH_MAX buffers. */
static __attribute__((format(printf, 3, 4))) void fmt(char *buf, size_t size, const char *f, ...)
{
	va_list ap;

	va_start(ap, f);
	vsnprintf(buf, size, f, ap);
	va_end(ap);
}

static int write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	int r = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) < 0)
		r = -errno;
	close(fd);
	return r;
}

static int write_at(const char *dir, const char *file, const char *text)
{
	char path[PATH_MAX + 64];

	fmt(path, sizeof(path), "%s/%s", dir, file);
	return write_text(path, text);
}

/* mkdir that is fine with an existing directory. */
static int make_dir(const char *path)
{
	return mkdir(path, 0755) == 0 || errno == EEXIST ? 0 : -errno;
}

/* The number after "KEY " in DIR/FILE ("max 3", "oom_kill 1"), or, with
 * KEY NULL, the file's first number; -1 if there is none. */
static long long read_number(const char *dir, const char *file, const char *key)
{
	char path[PATH_MAX + 64], buf[4096];

	fmt(path, sizeof(path), "%s/%s", dir, file);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (!key)
		return strtoll(buf, NULL, 10);
	size_t k = strlen(key);
	for (char *line = buf; line && *line;
	     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (!strncmp(line, key, k) && line[k] == ' ')
			return strtoll(line + k + 1, NULL, 10);
	return -1;
}

/* True if the whitespace- or comma-separated LIST holds WORD. */
static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; (p = strstr(p, word)); p += n)
		if ((p == list || strchr(" ,\t\n", p[-1])) && (!p[n] || strchr(" ,\t\n", p[n])))
			return true;
	return false;
}

/* ---- finding the hierarchies -------------------------------------------------- */

struct mounts {
	char v2[PATH_MAX]; /* "" if none */
	char v1[NCTL][PATH_MAX];
	char v2_path[PATH_MAX]; /* our cgroup in each */
	char v1_path[NCTL][PATH_MAX];
};

static void read_mounts(struct mounts *m)
{
	_cleanup_(fclosep) FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];

	memset(m, 0, sizeof(*m));
	while (f && fgets(line, sizeof(line), f)) {
		/* id parent dev root MOUNTPOINT opts... - FSTYPE SOURCE SUPER */
		char *save = NULL, *field = strtok_r(line, " ", &save), *mp = NULL;
		for (int i = 0; field && i < 4; i++)
			field = strtok_r(NULL, " ", &save);
		mp = field;
		while (field && strcmp(field, "-"))
			field = strtok_r(NULL, " ", &save);
		char *type = field ? strtok_r(NULL, " ", &save) : NULL;
		char *source = type ? strtok_r(NULL, " ", &save) : NULL;
		char *super = source ? strtok_r(NULL, " \n", &save) : NULL;
		if (!mp || !type)
			continue;
		if (!strcmp(type, "cgroup2") && !m->v2[0])
			fmt(m->v2, sizeof(m->v2), "%s", mp);
		else if (!strcmp(type, "cgroup") && super)
			for (int c = 0; c < NCTL; c++)
				if (!m->v1[c][0] && has_word(super, ctl_name[c]))
					fmt(m->v1[c], sizeof(m->v1[c]), "%s", mp);
	}
	_cleanup_(fclosep) FILE *g = fopen("/proc/self/cgroup", "re");
	while (g && fgets(line, sizeof(line), g)) {
		/* N:CONTROLLERS:PATH */
		char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;
		if (!b)
			continue;
		*b = '\0';
		b[strcspn(b + 1, "\n") + 1] = '\0';
		if (!a[1])
			fmt(m->v2_path, sizeof(m->v2_path), "%s", b + 1);
		for (int c = 0; c < NCTL; c++)
			if (has_word(a + 1, ctl_name[c]))
				fmt(m->v1_path[c], sizeof(m->v1_path[c]), "%s", b + 1);
	}
}

/* Removes DIR and every cgroup below it, killing what runs there. */
static void remove_tree(const char *dir, int version)
{
	_cleanup_(closedirp) DIR *d = opendir(dir);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char sub[PATH_MAX];
		if (e->d_type != DT_DIR || e->d_name[0] == '.' ||
		    (size_t)snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name) >= sizeof(sub))
			continue;
		remove_tree(sub, version);
	}
	if (rmdir(dir) == 0 || errno == ENOENT)
		return;
	/* Processes left by a broker that died. */
	struct cgroup_leaf leaf = { 0 };
	fmt(leaf.dir[0], sizeof(leaf.dir[0]), "%s", dir);
	(void)version;
	cgroup_kill(&leaf);
	/* Killed processes leave it once reaped; a loaded host takes a
	 * while (a one-second bound left cgroups behind under load). */
	int i = 0;
	while (rmdir(dir) < 0 && errno == EBUSY && i++ < 500)
		usleep(10000);
	if (i > 500)
		log_warn("cannot remove the cgroup %s: still busy after 5 s", dir);
}

/* Processes in cgroup DIR, other than us. */
static int others_in(const char *dir)
{
	char path[PATH_MAX + 16], line[32];
	int n = 0;

	fmt(path, sizeof(path), "%s/cgroup.procs", dir);
	_cleanup_(fclosep) FILE *f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		n += atoi(line) != getpid();
	return n;
}

/* Makes BASE (DIR/TAG) for the controllers CTLS of a v2 hierarchy at DIR
 * (ROOT: the hierarchy's root), enabling them on the way; with PROBE
 * only finds out whether it could. Returns 0, or -errno with a reason
 * in WHY. */
static int setup_v2(const char *dir, bool root, const char *tag, unsigned ctls, bool probe,
		    char *base, char *why, size_t whylen)
{
	char enable[64] = "", control[PATH_MAX + 32];
	int r;

	for (int c = 0; c < NCTL; c++)
		if (ctls & (1u << c))
			fmt(enable + strlen(enable), sizeof(enable) - strlen(enable), "+%s ",
			    ctl_name[c]);
	fmt(control, sizeof(control), "%s/cgroup.subtree_control", dir);
	fmt(base, PATH_MAX, "%s/%s", dir, tag);
	/* A cgroup with processes cannot give its children controllers
	 * (only the root can): the broker moves itself into a leaf of its
	 * own, which it may only if it is alone there. */
	if (!root && others_in(dir) > 0) {
		fmt(why, whylen,
		    "the broker's cgroup %s holds other processes, so it cannot"
		    " delegate controllers (run the broker in a cgroup of its own, e.g. a"
		    " systemd service with Delegate=yes)",
		    dir);
		return -EBUSY;
	}
	if (probe) {
		if (access(control, W_OK) == 0)
			return 0;
		r = -errno;
		fmt(why, whylen, "cannot enable %sin %s: %s", enable, dir, strerror(-r));
		return r;
	}
	if (!root) {
		char leaf[PATH_MAX], pid[16];
		fmt(leaf, sizeof(leaf), "%s/%s-broker", dir, tag);
		fmt(pid, sizeof(pid), "%d", (int)getpid());
		if ((r = make_dir(leaf)) < 0 || (r = write_at(leaf, "cgroup.procs", pid)) < 0) {
			fmt(why, whylen, "cannot move the broker into %s: %s", leaf, strerror(-r));
			return r;
		}
	}
	if ((r = write_at(dir, "cgroup.subtree_control", enable)) < 0) {
		fmt(why, whylen, "cannot enable %sin %s: %s", enable, dir, strerror(-r));
		return r;
	}
	remove_tree(base, 2);
	if ((r = make_dir(base)) < 0 ||
	    (r = write_at(base, "cgroup.subtree_control", enable)) < 0) {
		fmt(why, whylen, "cannot make %s: %s", base, strerror(-r));
		return r;
	}
	return 0;
}

static int setup_v1(const char *dir, const char *tag, bool probe, char *base, char *why,
		    size_t whylen)
{
	fmt(base, PATH_MAX, "%s/%s", dir, tag);
	if (probe) {
		if (access(dir, W_OK) == 0)
			return 0;
		int e = -errno;
		fmt(why, whylen, "cannot make groups in %s: %s", dir, strerror(errno));
		return e;
	}
	remove_tree(base, 1);
	if (mkdir(base, 0755) < 0) {
		int e = -errno;
		fmt(why, whylen, "cannot make %s: %s", base, strerror(errno));
		return e;
	}
	return 0;
}

/* The controllers with something to enforce: no cgroup is made, and no
 * process moved, for a limit that is not set. */
static unsigned wanted(const struct config_limits *c)
{
	return (c->pids ? 1u << CTL_PIDS : 0) | (c->memory ? 1u << CTL_MEMORY : 0) |
	       (c->cpu_milli || c->cpu_weight != 100 ? 1u << CTL_CPU : 0);
}

/* The controllers of WANT that the unified hierarchy MOUNT offers at our
 * cgroup PATH (or at TOP, its root, if not NULL). */
static unsigned v2_offered(const char *top, const char *mount, const char *path, unsigned want)
{
	char file[2 * PATH_MAX + 32], offered[256] = "";
	unsigned v2 = 0;

	if (top)
		fmt(file, sizeof(file), "%s/cgroup.controllers", top);
	else
		fmt(file, sizeof(file), "%s%s/cgroup.controllers", mount,
		    strcmp(path, "/") ? path : "");
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, offered, sizeof(offered) - 1) : -1;
	if (fd >= 0)
		close(fd);
	offered[n > 0 ? n : 0] = '\0';
	for (int c = 0; c < NCTL; c++)
		if (has_word(offered, ctl_name[c]) && (want & (1u << c)))
			v2 |= 1u << c;
	return v2;
}

static void find_hierarchies(struct cgroups *l)
{
	struct mounts m;
	char why[320] = "";
	unsigned want = wanted(&l->c);

	read_mounts(&m);
	/* The unified hierarchy first, for whatever it offers us: in the
	 * broker's own cgroup where it may delegate; else, as root, at the
	 * top of the hierarchy, as Docker's cgroupfs driver does. */
	if (!m.v2[0] || !m.v2_path[0])
		fmt(l->v2_why, sizeof(l->v2_why), "no cgroup2 hierarchy is mounted");
	for (int top = 0; top < 2 && l->nh == 0 && m.v2[0] && m.v2_path[0]; top++) {
		bool root = top || !strcmp(m.v2_path, "/");
		if (top && (geteuid() != 0 || !strcmp(m.v2_path, "/")))
			break;
		unsigned v2 = v2_offered(top ? m.v2 : NULL, m.v2, m.v2_path, want);
		if (!v2) {
			if (!top)
				fmt(why, sizeof(why),
				    "the unified hierarchy at %s offers none of"
				    " pids, memory, cpu to the broker's cgroup",
				    m.v2);
			if (!top || !l->v2_why[0])
				fmt(l->v2_why, sizeof(l->v2_why), "%s (they are in cgroup v1)",
				    why);
			continue;
		}
		struct hier *h = &l->h[l->nh];
		char dir[2 * PATH_MAX];
		fmt(dir, sizeof(dir), "%s%s", m.v2, root ? "" : m.v2_path);
		if (setup_v2(dir, root, l->tag, v2, l->probe, h->base, why, sizeof(why)) == 0) {
			h->version = 2;
			h->ctls = v2;
			for (int c = 0; c < NCTL; c++)
				if (v2 & (1u << c))
					l->hier_of[c] = 0;
			l->nh = 1;
			if (top)
				fmt(l->v2_top, sizeof(l->v2_top), "%s", why);
			break;
		}
		for (int c = 0; c < NCTL; c++)
			if (v2 & (1u << c))
				fmt(l->why[c], sizeof(l->why[c]), "cgroup v2: %s", why);
		fmt(l->v2_why, sizeof(l->v2_why), "%s", why);
	}
	char dir[2 * PATH_MAX];
	for (int c = 0; c < NCTL; c++) {
		if (l->hier_of[c] >= 0 || !m.v1[c][0] || !(want & (1u << c)))
			continue;
		fmt(dir, sizeof(dir), "%s%s", m.v1[c],
		    strcmp(m.v1_path[c], "/") ? m.v1_path[c] : "");
		/* Controllers sharing a v1 hierarchy (cpu,cpuacct) share it here. */
		int same = -1;
		for (size_t i = 0; i < l->nh; i++)
			if (l->h[i].version == 1 && !strncmp(l->h[i].base, dir, strlen(dir)) &&
			    l->h[i].base[strlen(dir)] == '/')
				same = (int)i;
		if (same >= 0) {
			l->h[same].ctls |= 1u << c;
			l->hier_of[c] = same;
			continue;
		}
		struct hier *h = &l->h[l->nh];
		if (setup_v1(dir, l->tag, l->probe, h->base, why, sizeof(why)) < 0) {
			fmt(l->why[c], sizeof(l->why[c]), "cgroup v1: %s", why);
			continue;
		}
		h->version = 1;
		h->ctls = 1u << c;
		l->hier_of[c] = (int)l->nh++;
	}
	for (int c = 0; c < NCTL; c++)
		if (l->hier_of[c] < 0 && !l->why[c][0])
			fmt(l->why[c], sizeof(l->why[c]),
			    "no cgroup hierarchy of this host offers"
			    " the %s controller",
			    ctl_name[c]);
}

struct cgroups *cgroups_new(const struct config_limits *c, const char *home, bool probe)
{
	struct cgroups *l = calloc(1, sizeof(*l));
	unsigned char md[32];

	if (!l)
		return NULL;
	l->c = *c;
	l->probe = probe;
	pthread_mutex_init(&l->lock, NULL);
	for (int i = 0; i < NCTL; i++)
		l->hier_of[i] = -1;
	EVP_Digest(home, strlen(home), md, NULL, EVP_sha256(), NULL);
	fmt(l->tag, sizeof(l->tag), "sbx-%02x%02x%02x%02x%02x%02x", md[0], md[1], md[2], md[3],
	    md[4], md[5]);
	if (c->cgroups)
		find_hierarchies(l);
	else
		for (int i = 0; i < NCTL; i++)
			fmt(l->why[i], sizeof(l->why[i]), "cgroups = off in sbx.conf");
	if (l->v2_top[0] && !probe)
		log_warn("cgroup v2: the broker's own cgroup cannot hold the sandboxes' (%s);"
			 " they are made at the top of the hierarchy instead",
			 l->v2_top);
	return l;
}

void cgroups_free(struct cgroups *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->nh && !l->probe; i++)
		remove_tree(l->h[i].base, l->h[i].version);
	for (size_t i = 0; i < l->ngrave; i++)
		free(l->grave[i]);
	free(l->grave);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

const char *cgroups_v2_why(const struct cgroups *l)
{
	return l->nh && l->h[0].version == 2 ? NULL
	       : l->v2_why[0]		     ? l->v2_why
					     : "cgroups = off in sbx.conf";
}

void cgroups_describe(const struct cgroups *l,
		      void (*fn)(void *arg, const char *limit, const char *how, const char *text),
		      void *arg)
{
	const struct config_limits *c = &l->c;
	char text[512], size[32], swap[32];

	for (int k = 0; k < NCTL; k++) {
		int h = l->hier_of[k];
		const char *how = h >= 0 ? (l->h[h].version == 2 ? "cgroup v2" : "cgroup v1")
					 : "rlimit";
		bool unset = (k == CTL_PIDS && !c->pids) || (k == CTL_MEMORY && !c->memory) ||
			     (k == CTL_CPU && !c->cpu_milli && c->cpu_weight == 100);
		switch (k) {
		case CTL_PIDS:
			fmt(text, sizeof(text), "at most %u processes and threads per sandbox",
			    c->pids);
			break;
		case CTL_MEMORY:
			fmt(text, sizeof(text), "at most %s of memory per sandbox, %s of swap",
			    size_text(c->memory, size, sizeof(size)),
			    size_text(c->swap, swap, sizeof(swap)));
			break;
		default:
			if (c->cpu_milli)
				fmt(text, sizeof(text), "at most %u.%03u CPUs, weight %u",
				    c->cpu_milli / 1000, c->cpu_milli % 1000, c->cpu_weight);
			else
				fmt(text, sizeof(text), "weight %u, no quota", c->cpu_weight);
		}
		if (unset) {
			fmt(text, sizeof(text), "no limit set in sbx.conf");
			how = "none";
		} else if (h < 0) {
			size_t n = strlen(text);
			switch (k) {
			case CTL_PIDS:
				fmt(text + n, sizeof(text) - n,
				    " by RLIMIT_NPROC on the sandbox's"
				    " own uid (%s)",
				    l->why[k]);
				break;
			case CTL_MEMORY:
				fmt(text + n, sizeof(text) - n,
				    " by RLIMIT_DATA per process: an"
				    " allocation beyond it fails instead of being killed (%s)",
				    l->why[k]);
				break;
			default:
				fmt(text, sizeof(text),
				    "nice %d for a weight below 100, no quota"
				    " (%s)",
				    c->cpu_weight < 100 ? 10 : 0, l->why[k]);
			}
		}
		fn(arg, ctl_name[k], how, text);
	}
}

/* ---- groups and leaves ---------------------------------------------------------- */

/* Writes the limits of L's controllers in H into the sandbox group G. */
static int set_limits(const struct cgroups *l, const struct hier *h, const char *g)
{
	const struct config_limits *c = &l->c;
	char v[64];
	int r = 0;

	if ((h->ctls & (1u << CTL_PIDS)) && c->pids) {
		fmt(v, sizeof(v), "%u", c->pids);
		r = write_at(g, "pids.max", v);
	}
	if (r == 0 && (h->ctls & (1u << CTL_MEMORY)) && c->memory) {
		fmt(v, sizeof(v), "%" PRIu64, c->memory);
		if (h->version == 2) {
			r = write_at(g, "memory.max", v);
			fmt(v, sizeof(v), "%" PRIu64, c->swap);
			if (r == 0 && write_at(g, "memory.swap.max", v) < 0 && errno != ENOENT)
				r = -errno;
		} else {
			r = write_at(g, "memory.limit_in_bytes", v);
			fmt(v, sizeof(v), "%" PRIu64, c->memory + c->swap);
			/* Only where swap is accounted. */
			if (r == 0)
				(void)write_at(g, "memory.memsw.limit_in_bytes", v);
		}
	}
	if (r == 0 && (h->ctls & (1u << CTL_CPU))) {
		const unsigned period = 100000;
		if (h->version == 2) {
			if (c->cpu_milli)
				fmt(v, sizeof(v), "%u %u", c->cpu_milli * (period / 1000), period);
			else
				fmt(v, sizeof(v), "max %u", period);
			r = write_at(g, "cpu.max", v);
			fmt(v, sizeof(v), "%u", c->cpu_weight);
			if (r == 0)
				r = write_at(g, "cpu.weight", v);
		} else {
			fmt(v, sizeof(v), "%u", period);
			r = write_at(g, "cpu.cfs_period_us", v);
			fmt(v, sizeof(v), "%d",
			    c->cpu_milli ? (int)(c->cpu_milli * (period / 1000)) : -1);
			if (r == 0)
				r = write_at(g, "cpu.cfs_quota_us", v);
			fmt(v, sizeof(v), "%u",
			    c->cpu_weight * 1024 / 100 < 2 ? 2 : c->cpu_weight * 1024 / 100);
			if (r == 0)
				r = write_at(g, "cpu.shares", v);
		}
	}
	return r;
}

/* The controllers of H, as "+pids +memory " for subtree_control. */
static void enable_list(const struct hier *h, char *buf, size_t size)
{
	buf[0] = '\0';
	for (int c = 0; c < NCTL; c++)
		if (h->ctls & (1u << c))
			fmt(buf + strlen(buf), size - strlen(buf), "+%s ", ctl_name[c]);
}

/* Makes the sandbox group of USER's THREAD in H (into G) and LEAF below
 * it, under L's lock. */
static int make_leaf(struct cgroups *l, const struct hier *h, const char *user, const char *thread,
		     unsigned long n, char *g, char *leaf)
{
	char u[PATH_MAX], enable[64];
	int r;

	enable_list(h, enable, sizeof(enable));
	/* Prefixes: a thread named "pids.max" must not meet the file. */
	fmt(u, sizeof(u), "%s/u-%s", h->base, user);
	fmt(g, PATH_MAX, "%s/t-%s", u, thread);
	fmt(leaf, PATH_MAX, "%s/c-%lu", g, n);
	if ((r = make_dir(u)) < 0 ||
	    (h->version == 2 && (r = write_at(u, "cgroup.subtree_control", enable)) < 0))
		return r;
	bool fresh = mkdir(g, 0755) == 0;
	if (!fresh && errno != EEXIST)
		return -errno;
	if (fresh && ((r = set_limits(l, h, g)) < 0 ||
		      (h->version == 2 && (r = write_at(g, "cgroup.subtree_control", enable)) < 0)))
		return r;
	if (mkdir(leaf, 0755) < 0)
		return -errno;
	/* An OOM kill in a leaf takes the whole leaf: the command. */
	if (h->version == 2 && (h->ctls & (1u << CTL_MEMORY)))
		(void)write_at(leaf, "memory.oom.group", "1");
	return 0;
}

/* pids.events "max" where L's pids hierarchy counts LEAF's hits: the leaf
 * itself in v1 (the forking cgroup), the sandbox group in v2 (the one
 * whose limit was reached). */
static long long pids_events(const struct cgroup_leaf *leaf)
{
	int h = leaf->l->hier_of[CTL_PIDS];

	if (h < 0)
		return 0;
	return read_number(leaf->l->h[h].version == 1 ? leaf->dir[h] : leaf->group[h],
			   "pids.events", "max");
}

static long long oom_kills(const struct cgroup_leaf *leaf)
{
	int h = leaf->l->hier_of[CTL_MEMORY];

	if (h < 0)
		return 0;
	return read_number(leaf->dir[h],
			   leaf->l->h[h].version == 2 ? "memory.events" : "memory.oom_control",
			   "oom_kill");
}

int cgroup_leaf_new(struct cgroups *l, const char *user, const char *thread, uid_t uid,
		    bool separate, struct cgroup_leaf **out, char *err, size_t errlen)
{
	struct cgroup_leaf *leaf = calloc(1, sizeof(*leaf));
	int r = 0;

	*out = NULL;
	if (!leaf) {
		fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	leaf->l = l;
	leaf->uid = uid;
	leaf->separate = separate;
	for (int i = 0; i < NCTL; i++)
		leaf->procs[i] = -1;
	leaf->v2dir = -1;
	pthread_mutex_lock(&l->lock);
	unsigned long n = ++l->next_leaf;
	for (size_t i = 0; i < l->nh && r == 0; i++)
		if ((r = make_leaf(l, &l->h[i], user, thread, n, leaf->group[i], leaf->dir[i])) < 0)
			fmt(err, errlen, "cannot make the cgroup %s: %s", leaf->dir[i],
			    strerror(-r));
	pthread_mutex_unlock(&l->lock);
	for (size_t i = 0; i < l->nh && r == 0; i++) {
		char path[PATH_MAX + 16];
		fmt(path, sizeof(path), "%s/cgroup.procs", leaf->dir[i]);
		if ((leaf->procs[i] = open(path, O_WRONLY | O_CLOEXEC)) < 0) {
			r = -errno;
			fmt(err, errlen, "cannot open %s: %s", path, strerror(errno));
		}
	}
	if (r == 0 && l->nh && l->h[0].version == 2)
		leaf->v2dir = open(leaf->dir[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r < 0) {
		cgroup_leaf_free(leaf);
		return r;
	}
	leaf->pids_seen = pids_events(leaf);
	leaf->oom_seen = oom_kills(leaf);
	*out = leaf;
	return 0;
}

void cgroup_launch(const struct cgroup_leaf *leaf, struct launch *launch)
{
	const struct cgroups *l = leaf->l;
	const struct config_limits *c = &l->c;

	/* The unified hierarchy is h[0]: its leaf is the one a clone3 can
	 * be born into, and the one the child need not write then. */
	for (size_t i = 0; i < l->nh && launch->ncgroups < LAUNCH_MAX_CGROUPS; i++)
		launch->cgroup_procs[launch->ncgroups++] = leaf->procs[i];
	launch->cgroup_dir = leaf->v2dir;
	if (l->hier_of[CTL_PIDS] < 0 && c->pids && leaf->separate &&
	    launch->nrlimits < LAUNCH_MAX_RLIMITS) {
		launch->rlimits[launch->nrlimits].resource = RLIMIT_NPROC;
		launch->rlimits[launch->nrlimits++].lim = (struct rlimit){ c->pids, c->pids };
	}
	if (l->hier_of[CTL_MEMORY] < 0 && c->memory && launch->nrlimits < LAUNCH_MAX_RLIMITS) {
		launch->rlimits[launch->nrlimits].resource = RLIMIT_DATA;
		launch->rlimits[launch->nrlimits++].lim = (struct rlimit){ c->memory, c->memory };
	}
	if (l->hier_of[CTL_CPU] < 0 && c->cpu_weight < 100)
		launch->nice = 10;
}

/* Processes whose real uid is UID (the fallback's sandbox-wide count). */
static unsigned count_uid(uid_t uid)
{
	_cleanup_(closedirp) DIR *d = opendir("/proc");
	struct dirent *e;
	unsigned n = 0;
	struct stat st;

	while (d && (e = readdir(d)))
		if (e->d_name[0] >= '1' && e->d_name[0] <= '9' &&
		    fstatat(dirfd(d), e->d_name, &st, 0) == 0 && st.st_uid == uid)
			n++;
	return n;
}

enum limit_hit cgroup_check(struct cgroup_leaf *leaf)
{
	const struct cgroups *l = leaf->l;
	long long oom = oom_kills(leaf), pids = pids_events(leaf);

	if (oom > leaf->oom_seen) {
		leaf->oom_seen = oom;
		return LIMIT_MEMORY;
	}
	if (pids > leaf->pids_seen) {
		leaf->pids_seen = pids;
		int h = l->hier_of[CTL_PIDS];
		if (l->h[h].version == 1)
			return LIMIT_PIDS;
		/* v2 counts the hit at the sandbox: the leaf with the most
		 * processes is the one that forks. */
		long long mine = read_number(leaf->dir[h], "pids.current", NULL), most = 0;
		_cleanup_(closedirp) DIR *d = opendir(leaf->group[h]);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			char sub[2 * PATH_MAX];
			if (strncmp(e->d_name, "c-", 2))
				continue;
			fmt(sub, sizeof(sub), "%s/%s", leaf->group[h], e->d_name);
			long long n = read_number(sub, "pids.current", NULL);
			most = n > most ? n : most;
		}
		return mine > 0 && mine >= most ? LIMIT_PIDS : LIMIT_NONE;
	}
	if (l->hier_of[CTL_PIDS] < 0 && l->c.pids && leaf->separate &&
	    count_uid(leaf->uid) >= l->c.pids)
		return LIMIT_PIDS;
	return LIMIT_NONE;
}

/* Signals every process of cgroup DIR; with WAIT, until none is left (a
 * fork bomb forks while it is read; bounded). */
static void kill_cgroup(const char *dir, bool wait)
{
	char path[PATH_MAX + 16];

	fmt(path, sizeof(path), "%s/cgroup.kill", dir);
	bool killfile = write_text(path, "1") == 0;
	fmt(path, sizeof(path), "%s/cgroup.procs", dir);
	for (int round = 0; round < (wait ? 2000 : 1); round++) {
		_cleanup_(fclosep) FILE *f = fopen(path, "re");
		char line[32];
		int n = 0;
		while (f && fgets(line, sizeof(line), f)) {
			n++;
			if (!killfile)
				kill((pid_t)atoi(line), SIGKILL);
		}
		if (n == 0 || !wait)
			return;
		usleep(1000); /* the kernel takes them out as they die */
	}
	log_warn("%s still holds processes after they were killed", dir);
}

/* Under the fallback, every process of a sandbox's own uid is its own:
 * a child that becomes the uid kills them all (kill(-1) as that uid). */
static void kill_uid(uid_t uid)
{
	for (int round = 0; round < 50 && count_uid(uid) > 0; round++) {
		pid_t pid = fork();
		if (pid == 0) {
			if (syscall(SYS_setresgid, (gid_t)uid, (gid_t)uid, (gid_t)uid) == 0 &&
			    syscall(SYS_setresuid, uid, uid, uid) == 0)
				kill(-1, SIGKILL);
			_exit(0);
		}
		if (pid > 0)
			waitpid(pid, NULL, 0);
		usleep(2000);
	}
}

enum limit_hit cgroup_check_ended(struct cgroup_leaf *leaf, bool killed)
{
	enum limit_hit hit = cgroup_check(leaf);

	for (int i = 0; hit == LIMIT_NONE && killed && i < 20; i++) {
		usleep(5000);
		hit = cgroup_check(leaf);
	}
	return hit;
}

void cgroup_kill(struct cgroup_leaf *leaf)
{
	bool any = false;

	for (int i = 0; i < NCTL; i++)
		if (leaf->dir[i][0]) {
			kill_cgroup(leaf->dir[i], true);
			any = true;
		}
	if (!any && leaf->separate && leaf->l)
		kill_uid(leaf->uid);
}

void cgroup_leaf_free(struct cgroup_leaf *leaf)
{
	if (!leaf)
		return;
	closep(&leaf->v2dir);
	for (int i = 0; i < NCTL; i++) {
		closep(&leaf->procs[i]);
		if (!leaf->dir[i][0])
			continue;
		kill_cgroup(leaf->dir[i], false);
		/* Dead processes leave the group as they are reaped, a moment
		 * later: then cgroups_tick() removes it, off the command's
		 * way. */
		if (rmdir(leaf->dir[i]) < 0 && errno == EBUSY)
			bury(leaf->l, leaf->dir[i]);
	}
	free(leaf);
}

void cgroups_tick(struct cgroups *l)
{
	pthread_mutex_lock(&l->lock);
	for (size_t i = 0; i < l->ngrave;) {
		kill_cgroup(l->grave[i], false);
		if (rmdir(l->grave[i]) == 0 || errno != EBUSY) {
			free(l->grave[i]);
			l->grave[i] = l->grave[--l->ngrave];
		} else {
			i++;
		}
	}
	pthread_mutex_unlock(&l->lock);
}

char *cgroups_notice(const struct cgroups *l, enum limit_hit hit, char *buf, size_t size)
{
	char mem[32];

	if (hit == LIMIT_MEMORY)
		fmt(buf, size, "killed: out of memory (limit %s)",
		    size_text(l->c.memory, mem, sizeof(mem)));
	else if (hit == LIMIT_PIDS)
		fmt(buf, size, "killed: process limit %u reached", l->c.pids);
	else
		buf[0] = '\0';
	return buf;
}
