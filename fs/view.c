/* view.c - see view.h. */
#include "view.h"
#include "confine.h"
#include "quota.h"
#include "common/cleanup.h"
#include "common/log.h"
#include "common/proc.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define SYNTH_TOP_INO ((ino_t)UINT64_MAX - 1)
#define SYNTH_USER_DATA_INO ((ino_t)UINT64_MAX - 2)
#define SYNTH_SKILLS_INO ((ino_t)UINT64_MAX - 3)
#define SYNTH_DOMAIN UINT16_MAX

static const char *const reserved_mount_names[] = VIEW_TOP_NAMES;

int mount_spec_parse(const char *arg, struct mount_spec *out, const char **why)
{
	const char *eq = strchr(arg, '='), *name = arg + 5, *host;
	size_t namelen, hostlen;

	memset(out, 0, sizeof(*out));
	if (strncmp(arg, "/mnt/", 5) || !eq) {
		*why = "expected /mnt/NAME=HOSTDIR[:ro]";
		return -EINVAL;
	}
	namelen = (size_t)(eq - name);
	if (namelen == 0 || namelen > NAME_MAX || memchr(name, '/', namelen)) {
		*why = "NAME must be one path component below /mnt";
		return -EINVAL;
	}
	memcpy(out->name, name, namelen);
	if (!confine_name_ok(out->name)) {
		*why = "NAME must be one path component below /mnt";
		return -EINVAL;
	}
	for (size_t i = 0; i < 3; i++) {
		if (!strcmp(out->name, reserved_mount_names[i])) {
			*why = "/mnt/user-data, /mnt/skills and /mnt/acp-workspace are reserved";
			return -EINVAL;
		}
	}
	host = eq + 1;
	hostlen = strlen(host);
	if (hostlen > 3 &&
	    (!strcmp(host + hostlen - 3, ":ro") || !strcmp(host + hostlen - 3, ":rw"))) {
		out->read_only = host[hostlen - 1] == 'o';
		hostlen -= 3;
	}
	if (hostlen == 0 || host[0] != '/') {
		*why = "HOSTDIR must be an absolute path";
		return -EINVAL;
	}
	if (hostlen >= sizeof(out->host)) {
		*why = "HOSTDIR is too long";
		return -EINVAL;
	}
	memcpy(out->host, host, hostlen);
	return 0;
}

static int fail(char *err, size_t errlen, int r, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int r, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < errlen)
		snprintf(err + n, errlen - (size_t)n, ": %s", strerror(-r));
	return r;
}

/* Directory FD and each one above it, to "/" (or as far as they can be
 * opened), into *UP (malloc'd). Returns how many, or -errno. */
static ssize_t ancestry(int fd, struct dir_id **up)
{
	_cleanup_(closep) int cur = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	struct dir_id *v = NULL;
	size_t n = 0, cap = 0;
	struct stat st;

	for (; cur >= 0 && n < 4096 && fstat(cur, &st) == 0; n++) {
		if (n > 0 && v[n - 1].dev == st.st_dev && v[n - 1].ino == st.st_ino)
			break; /* ".." of "/" is "/" */
		if (n == cap) {
			struct dir_id *grown = realloc(v, (cap = cap ? 2 * cap : 16) * sizeof(*v));
			if (!grown) {
				free(v);
				return -ENOMEM;
			}
			v = grown;
		}
		v[n] = (struct dir_id){ st.st_dev, st.st_ino };
		int next = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		close(cur);
		cur = next;
	}
	*up = v;
	return (ssize_t)n;
}

static bool in_ancestry(const struct dir_id *up, size_t n, dev_t dev, ino_t ino)
{
	for (size_t i = 0; i < n; i++)
		if (up[i].dev == dev && up[i].ino == ino)
			return true;
	return false;
}

/* True if the directory (DEV, INO) is FD itself or one of its ancestors. */
static bool is_self_or_ancestor(int fd, dev_t dev, ino_t ino)
{
	_cleanup_(freep) struct dir_id *up = NULL;
	ssize_t n = ancestry(fd, &up);

	return n > 0 && in_ancestry(up, (size_t)n, dev, ino);
}

/* The index of backing filesystem DEV among the view's, a new one if
 * no domain has it yet. */
static uint16_t devidx_for(const struct view *v, dev_t dev)
{
	uint16_t next = 0;

	for (size_t d = 0; d < v->ndomains; d++) {
		if (v->domains[d].dev == dev)
			return v->domains[d].devidx;
		if (v->domains[d].devidx >= next)
			next = (uint16_t)(v->domains[d].devidx + 1);
		if (v->domains[d].lower_devidx >= next)
			next = (uint16_t)(v->domains[d].lower_devidx + 1);
	}
	return next;
}

static uint16_t domain_for(struct view *v, const struct stat *st, bool ro)
{
	for (size_t d = 0; d < v->ndomains; d++)
		if (v->domains[d].dev == st->st_dev && !ro && !v->domains[d].read_only)
			return (uint16_t)d;
	uint16_t devidx = devidx_for(v, st->st_dev);
	v->domains[v->ndomains] = (struct domain){
		.dev = st->st_dev, .read_only = ro, .devidx = devidx, .lower_devidx = devidx
	};
	return (uint16_t)v->ndomains++;
}

/* Makes ROOT the layer of project PROJECT (docs/try.md): its top's
 * project directory, and the project's filesystem an index of its own
 * where it is not the layer's. */
static int add_overlay(struct view *v, struct root *root, const char *project, int homefd,
		       const char *home, char *err, size_t errlen)
{
	struct stat st, hst;
	int fd = open(project, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) < 0 || fstat(homefd, &hst) < 0) {
		int r = neg_errno();
		if (fd >= 0)
			close(fd);
		return fail(err, errlen, r, "cannot open project %s", project);
	}
	/* Neither in the home nor holding it: the layer, the kept files and
	 * the store are never the project's. */
	if (is_self_or_ancestor(fd, hst.st_dev, hst.st_ino) ||
	    is_self_or_ancestor(homefd, st.st_dev, st.st_ino)) {
		close(fd);
		return fail(err, errlen, -EINVAL, "project %s overlaps the home %s", project, home);
	}
	struct domain *d = &v->domains[root->top->domain];
	if (st.st_dev != d->dev) {
		d->lower_devidx = devidx_for(v, st.st_dev);
		if (d->lower_devidx == d->devidx)
			d->lower_devidx = (uint16_t)(d->devidx + 1);
	}
	root->overlay = true;
	inode_set_overlay_top(v->inodes, root->top, fd);
	return 0;
}

static struct inode *add_synth(struct view *v, struct inode *parent, const char *name,
			       struct synth *s, ino_t ino)
{
	struct stat st = { .st_dev = 0, .st_ino = ino, .st_mode = S_IFDIR };

	s->ino = ino;
	return inode_add_fixed(v->inodes, parent, name, -1, &st, SYNTH_DOMAIN, NULL, s);
}

/* Frees what ROOT holds besides its inode. */
static void root_forget(struct root *root)
{
	free(root->host);
	root->host = NULL;
	free(root->up);
	root->up = NULL;
	root->nup = 0;
}

/* Adds root NAME (fd FD, ownership taken) under synthetic directory S. */
static int add_root(struct view *v, struct inode *parent, struct synth *s, const char *name, int fd,
		    bool ro, bool uploads, const char *host, char *err, size_t errlen)
{
	struct root *root = &v->roots[v->nroots];
	struct stat st;
	uint16_t dom;

	ssize_t nup = fstat(fd, &st) < 0 ? neg_errno() : ancestry(fd, &root->up);

	if (nup < 0) {
		close(fd);
		return fail(err, errlen, (int)nup, "cannot stat %s", host);
	}
	root->nup = (size_t)nup;
	/* Each root's ancestry is taken once: a walk up from every root for
	 * every other was two thirds of a mount's system calls. */
	for (size_t i = 0; i < v->nroots; i++) {
		struct root *o = &v->roots[i];
		if (in_ancestry(root->up, root->nup, o->top->dev, o->top->ino) ||
		    in_ancestry(o->up, o->nup, st.st_dev, st.st_ino)) {
			close(fd);
			root_forget(root);
			return fail(err, errlen, -EINVAL, "%s (for %s) overlaps %s (for %s)", host,
				    name, o->host, o->name);
		}
	}
	dom = domain_for(v, &st, ro);
	root->name = name;
	root->read_only = ro;
	root->uploads = uploads;
	root->host = strdup(host);
	root->top = root->host ? inode_add_fixed(v->inodes, parent, name, fd, &st, dom, root, NULL)
			       : NULL;
	if (!root->top) {
		root_forget(root);
		close(fd);
		return fail(err, errlen, -ENOMEM, "cannot add %s", name);
	}
	s->entry[s->n++] = (struct synth_entry){ name, root->top };
	v->nroots++;
	return 0;
}

/* How the view shows each skill category (common/home.h says where it
 * is): how deep below it a skill is (integrations' skills are one
 * directory per provider), and whose list of disabled skills counts. */
static const struct category {
	uint8_t depth;
	enum skill_scope scope;
} categories[SKILL_CATEGORIES] = {
	[SKILLS_PUBLIC] = { 1, SKILL_SCOPE_PUBLIC },
	[SKILLS_CUSTOM] = { 1, SKILL_SCOPE_USER },
	[SKILLS_LEGACY] = { 1, SKILL_SCOPE_USER },
	[SKILLS_INTEGRATIONS] = { 2, SKILL_SCOPE_USER },
};

/* A home of before the categories kept its skills in $SBX_HOME/skills
 * itself: they are no longer shown, say so once at mount. */
static void note_old_skills(int homefd, const char *home)
{
	_cleanup_(closep) int fd = openat(homefd, "skills",
					  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_(closedirp) DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	size_t n = 0;
	char first[NAME_MAX + 1] = "";

	if (!d)
		return;
	fd = -1; /* the stream owns it */
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, "public") || !strcmp(de->d_name, "custom"))
			continue;
		if (!n++)
			snprintf(first, sizeof(first), "%s", de->d_name);
	}
	if (n)
		log_warn(
			"%s/skills holds %zu entr%s ('%s'%s) that no skill category shows: move public skills to %s/skills/public",
			home, n, n == 1 ? "y" : "ies", first, n > 1 ? ", ..." : "", home);
}

/* /mnt/skills: the root --skills DIR, or the categories (created 0755
 * where missing) in a read-only synthetic directory. */
static int add_skills(struct view *v, const struct view_config *cfg, int homefd, char *err,
		      size_t errlen)
{
	const char *user_skills[] = { "users", cfg->user, "skills" };
	char host[PATH_MAX];
	int r = 0;

	if (cfg->skills) {
		int fd = open(cfg->skills, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return fail(err, errlen, neg_errno(), "cannot open skills %s", cfg->skills);
		return add_root(v, v->top, &v->top_dir, "skills", fd, true, false, cfg->skills, err,
				errlen);
	}
	v->skills_top = add_synth(v, v->top, "skills", &v->skills_dir, SYNTH_SKILLS_INO);
	if (!v->skills_top)
		return fail(err, errlen, -ENOMEM, "cannot build the view");
	v->skills_dir.read_only = true;
	v->top_dir.entry[v->top_dir.n++] = (struct synth_entry){ "skills", v->skills_top };
	_cleanup_(closep) int ufd = dir_ensure_path(homefd, user_skills, 3, 0755);
	if (ufd < 0)
		return fail(err, errlen, ufd, "cannot open %s/users/%s/skills", cfg->home,
			    cfg->user);
	v->skills = skills_new(homefd, ufd);
	if (!v->skills)
		return fail(err, errlen, -ENOMEM, "cannot build the view");
	note_old_skills(homefd, cfg->home);
	for (int i = 0; i < SKILL_CATEGORIES && r >= 0; i++) {
		const struct home_skills *k = &home_skills[i];
		const struct category *c = &categories[i];
		const char *path[4];

		for (size_t j = 0; j < k->n; j++)
			path[j] = k->path[j] ? k->path[j] : cfg->user;
		home_skills_path(cfg->home, cfg->user, i, host, sizeof(host));
		int fd = dir_ensure_path(homefd, path, k->n, 0755);
		if (fd < 0)
			return fail(err, errlen, fd, "cannot open skills %s", host);
		r = add_root(v, v->skills_top, &v->skills_dir, k->name, fd, true, false, host, err,
			     errlen);
		if (r >= 0) {
			struct root *root = &v->roots[v->nroots - 1];
			root->skill_depth = c->depth;
			root->skill_scope = c->scope;
			v->domains[root->top->domain].skill_root = root;
		}
	}
	return r;
}

int view_skill_check(struct view *v, struct inode *dir, const char *name, char *skill, size_t size)
{
	char names[2][NAME_MAX + 1];
	const struct root *root;

	if (dir->synth || !(root = v->domains[dir->domain].skill_root))
		return 0;
	size_t depth = inode_names_below(v->inodes, dir, root->top, name, names, 2);
	if (depth < root->skill_depth)
		return 0; /* above the skills: a category or a provider */
	const char *s = names[root->skill_depth - 1];
	if (!skills_disabled(v->skills, root->skill_scope, s))
		return 0;
	snprintf(skill, size, "%s", s);
	return -EACCES;
}

bool view_skill_holder(struct view *v, struct inode *dir)
{
	const struct root *root;

	if (dir->synth || !(root = v->domains[dir->domain].skill_root))
		return false;
	return inode_names_below(v->inodes, dir, root->top, NULL, NULL, 0) + 1 == root->skill_depth;
}

static size_t default_fd_budget(void)
{
	struct rlimit rl;

	/* Half the descriptors for cached inodes, the rest for open files,
	 * directories and the FUSE channels. */
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return 8192;
	return rl.rlim_cur / 2 > 256 ? rl.rlim_cur / 2 : 256;
}

int view_open(struct view *v, const struct view_config *cfg, char *err, size_t errlen)
{
	_cleanup_(closep) int homefd = -1;
	int fds[THREAD_NDIRS], r;
	char host[PATH_MAX];

	memset(v, 0, sizeof(*v));
	for (size_t i = 0; i < VIEW_NAME_LOCKS; i++)
		pthread_rwlock_init(&v->name_locks[i], NULL);
	pthread_mutex_init(&v->copy_up_lock, NULL);
	v->uid = geteuid();
	v->gid = getegid();
	long overflow = proc_sys_long("kernel/overflowuid");
	v->overflow_uid = overflow >= 0 ? (uid_t)overflow : 65534;
	v->map_owner = cfg->map_owner;
	v->map_uid = cfg->map_uid;
	v->map_gid = cfg->map_gid;
	clock_gettime(CLOCK_REALTIME, &v->born);
	v->timeout = cfg->timeout;
	v->timeout_watched = cfg->timeout_watched;
	v->portable_names = cfg->portable_names;
	v->writeback = cfg->writeback;

	homefd = home_open(cfg->home);
	if (homefd < 0)
		return fail(err, errlen, homefd, "cannot open home %s", cfg->home);
	/* A project's record (the runs of sbx try apply) is no thread's
	 * files: its "workspace" is the person's project itself. (A thread
	 * whose record cannot be read is no record: what is wrong with its
	 * directory is said below.) */
	char recorded[PATH_MAX];
	if (home_project_get(homefd, cfg->user, cfg->thread, recorded, sizeof(recorded)) > 0)
		return fail(err, errlen, -EINVAL,
			    "thread %s/%s is the record of the applies to %s, never mounted",
			    cfg->user, cfg->thread, recorded);
	r = home_thread_dirs(homefd, cfg->user, cfg->thread, fds);
	if (r < 0)
		return fail(err, errlen, r,
			    "cannot create the directories of thread %s/%s under %s", cfg->user,
			    cfg->thread, cfg->home);
	v->inodes = inode_table_new(cfg->fd_budget ? cfg->fd_budget : default_fd_budget());
	if (v->inodes) {
		v->top = add_synth(v, NULL, NULL, &v->top_dir, SYNTH_TOP_INO);
		v->user_data = v->top ? add_synth(v, v->top, "user-data", &v->user_data_dir,
						  SYNTH_USER_DATA_INO)
				      : NULL;
	}
	if (!v->user_data) {
		for (int i = 0; i < THREAD_NDIRS; i++)
			close(fds[i]);
		view_close(v);
		return fail(err, errlen, -ENOMEM, "cannot build the view");
	}
	v->top_dir.entry[v->top_dir.n++] = (struct synth_entry){ "user-data", v->user_data };

	r = 0;
	for (int i = 0; i < THREAD_NDIRS; i++) {
		if (r >= 0 && home_thread_path(cfg->home, cfg->user, cfg->thread,
					       home_thread_dir_rel(i), host, sizeof(host)) < 0)
			r = fail(err, errlen, -ENAMETOOLONG, "the path of thread %s/%s is too long",
				 cfg->user, cfg->thread);
		if (r < 0) {
			close(fds[i]);
			continue;
		}
		r = i == THREAD_ACP
			    ? add_root(v, v->top, &v->top_dir, home_thread_dir_name(i), fds[i],
				       !cfg->acp_writable, false, host, err, errlen)
			    : add_root(v, v->user_data, &v->user_data_dir, home_thread_dir_name(i),
				       fds[i], false, i == THREAD_UPLOADS, host, err, errlen);
		if (r >= 0)
			v->roots[v->nroots - 1].counted = true;
	}
	/* A thread sbx try made an overlay is one at every mount. */
	int is_overlay = r < 0 ? 0
			       : home_overlay_get(homefd, cfg->user, cfg->thread, recorded,
						  sizeof(recorded));
	if (is_overlay < 0)
		r = fail(err, errlen, is_overlay, "cannot read %s/users/%s/threads/%s/%s",
			 cfg->home, cfg->user, cfg->thread, OVERLAY_RECORD);
	else if (is_overlay && cfg->overlay && strcmp(cfg->overlay, recorded))
		r = fail(err, errlen, -EINVAL, "thread %s/%s is an overlay of %s, not of %s",
			 cfg->user, cfg->thread, recorded, cfg->overlay);
	const char *project = cfg->overlay ? cfg->overlay : is_overlay ? recorded : NULL;
	if (r >= 0 && project)
		r = add_overlay(v, &v->roots[THREAD_WORKSPACE], project, homefd, cfg->home, err,
				errlen);
	if (r >= 0)
		r = add_skills(v, cfg, homefd, err, errlen);
	for (size_t i = 0; r >= 0 && i < cfg->nmounts; i++) {
		const struct mount_spec *m = &cfg->mounts[i];
		int fd;

		for (size_t j = 0; j < v->top_dir.n; j++)
			if (!strcmp(v->top_dir.entry[j].name, m->name))
				r = fail(err, errlen, -EEXIST, "/mnt/%s is given twice", m->name);
		if (r < 0)
			break;
		fd = open(m->host, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			r = fail(err, errlen, neg_errno(), "cannot open mount /mnt/%s=%s", m->name,
				 m->host);
			break;
		}
		r = add_root(v, v->top, &v->top_dir, m->name, fd, m->read_only, false, m->host, err,
			     errlen);
	}
	if (r < 0) {
		view_close(v);
		return r;
	}
	int counted[VIEW_MAX_ROOTS + 1];
	size_t n = 0;
	for (size_t i = 0; i < v->nroots; i++)
		if (v->roots[i].counted)
			counted[n++] = v->roots[i].top->fd;
	/* Kept files are the thread's files too: what a run removed or
	 * changed in place stays on the disk until they are dropped. */
	_cleanup_(closep) int undo = -1;
	if ((cfg->quota_bytes || cfg->quota_inodes) &&
	    (undo = home_undo_top(homefd, cfg->user, cfg->thread)) >= 0)
		counted[n++] = undo;
	v->quota = quota_new(cfg->quota_bytes, cfg->quota_inodes, counted, n);
	return 0;
}

int view_charge(struct view *v, struct inode *ino, uint64_t bytes, uint64_t inodes, char *why,
		size_t whylen)
{
	struct root *root;

	if (!v->quota || !(root = inode_root(v->inodes, ino)) || !root->counted)
		return 0;
	return quota_charge(v->quota, bytes, inodes, why, whylen);
}

void view_took(struct view *v, uint64_t bytes)
{
	quota_took(v->quota, bytes);
}

void view_release(struct view *v, struct inode *ino, const struct stat *st)
{
	struct root *root;

	if (!v->quota || !(root = inode_root(v->inodes, ino)) || !root->counted)
		return;
	/* Another link keeps a file's space (counted once). */
	bool last = st && (S_ISDIR(st->st_mode) || st->st_nlink <= 1);
	quota_release(v->quota, last ? (uint64_t)st->st_blocks * 512 : 0, last ? 1 : 0);
}

void view_close(struct view *v)
{
	for (size_t i = 0; i < v->nroots; i++)
		root_forget(&v->roots[i]);
	inode_table_free(v->inodes);
	v->inodes = NULL;
	skills_free(v->skills);
	v->skills = NULL;
	quota_free(v->quota);
	v->quota = NULL;
}

static pthread_rwlock_t *names_lock_of(struct view *v, struct inode *dir)
{
	uintptr_t h = (uintptr_t)dir;

	return &v->name_locks[(h >> 6 ^ h >> 12) % VIEW_NAME_LOCKS];
}

void view_names_lock(struct view *v, struct inode *dir, bool exclusive)
{
	if (exclusive)
		pthread_rwlock_wrlock(names_lock_of(v, dir));
	else
		pthread_rwlock_rdlock(names_lock_of(v, dir));
}

void view_names_hold(struct view *v, struct inode *a, struct inode *b)
{
	pthread_rwlock_rdlock(names_lock_of(v, a));
	if (b && names_lock_of(v, b) != names_lock_of(v, a))
		pthread_rwlock_rdlock(names_lock_of(v, b));
}

void view_names_release(struct view *v, struct inode *a, struct inode *b)
{
	if (b && names_lock_of(v, b) != names_lock_of(v, a))
		pthread_rwlock_unlock(names_lock_of(v, b));
	pthread_rwlock_unlock(names_lock_of(v, a));
}

void view_names_unlock(struct view *v, struct inode *dir)
{
	pthread_rwlock_unlock(names_lock_of(v, dir));
}

char *view_path(struct view *v, struct inode *dir, const char *name, char *buf, size_t size)
{
	static const char prefix[] = "/mnt/";

	snprintf(buf, size, "%s", prefix);
	inode_path(v->inodes, dir, name, buf + sizeof(prefix) - 1, size - (sizeof(prefix) - 1));
	return buf;
}

int view_may_modify(const struct view *v, const struct inode *dir)
{
	if (dir->synth)
		return dir->synth->read_only ? -EROFS : -EPERM;
	/* A project's object shows through an overlay, never changed by
	 * it. */
	return v->domains[dir->domain].read_only || dir->lower || view_changes_refused(v) ? -EROFS
											  : 0;
}

void view_refuse_changes(void *arg, const char *why)
{
	struct view *v = arg;

	__atomic_store_n(&v->changes_refused, true, __ATOMIC_RELEASE);
	log_error("refusing every change from now on (Read-only file system); reads go on: %s."
		  " The changes not recorded are listed above. Check the store (sbx store"
		  " check), recover it (sbx store --help), then mount the view again",
		  why);
}

bool view_changes_refused(const struct view *v)
{
	return __atomic_load_n(&v->changes_refused, __ATOMIC_ACQUIRE);
}

void view_synth_attr(const struct view *v, const struct inode *ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino->synth->ino;
	st->st_mode = S_IFDIR | 0555;
	st->st_nlink = 2 + ino->synth->n;
	st->st_uid = v->uid;
	st->st_gid = v->gid;
	view_map_owner(v, st);
	st->st_size = 4096;
	st->st_blksize = 4096;
	st->st_atim = st->st_mtim = st->st_ctim = v->born;
}
