/* doctor.c - sbx doctor: what this host allows, and which protection of
 * the exec sandbox holds here (docs/security-model.md), each with the
 * reason when it does not. It only looks: nothing is mounted, no cgroup
 * is made, and a broker of the home keeps running undisturbed.
 */
#include "args.h"
#include "cli.h"
#include "common/proc.h"
#include "common/cleanup.h"
#include "common/units.h"
#include "exec/cgroup.h"
#include "common/config.h"
#include "common/home.h"
#include "exec/filter.h"
#include "exec/identity.h"
#include "exec/sandbox.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <linux/fs.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char usage[] =
	"Usage: sbx doctor [--home DIR] [--config FILE] [--format text|json]\n"
	"\n"
	"Says what this host allows the exec broker - /dev/fuse, fusermount3,\n"
	"user namespaces, bubblewrap, cgroup delegation, seccomp, openat2,\n"
	"reflinks on the home's filesystem, inotify limits, the home's store\n"
	"and whether the home is on a filesystem other hosts share - each ok or\n"
	"no, and lists each protection of the sandbox as active, partial (it\n"
	"holds, less than it could), inactive or n/a (not asked for), with the\n"
	"reason. Exits 0 when every protection is active or n/a, 1 otherwise.\n"
	"  --config FILE   the broker's configuration (default HOME/sbx.conf)\n"
	"  --format text   a line per check (default)\n"
	"  --format json   one object: {\"host\": [...], \"protections\": [...]}\n";

/* What a line says: a host check holds (ok) or not (no); a protection
 * holds (active), holds less than it could (partial: an rlimit for a
 * cgroup, host mode allowed), does not (inactive), or is not asked for
 * (n/a). sbx.1 lists these. */
enum state { OK, NO, ACTIVE, PARTIAL, INACTIVE, NOT_ASKED };

static const char *const state_names[] = {
	[OK] = "ok",
	[NO] = "no",
	[ACTIVE] = "active",
	[PARTIAL] = "partial",
	[INACTIVE] = "inactive",
	[NOT_ASKED] = "n/a",
};

struct report {
	bool json;
	json_t *host, *protections;
	bool all_active;
};

static __attribute__((format(printf, 4, 5))) void say(struct report *r, enum state state,
						      const char *what, const char *fmt, ...)
{
	bool protection = state >= ACTIVE;
	char text[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (protection && state != ACTIVE && state != NOT_ASKED)
		r->all_active = false;
	if (r->json) {
		json_array_append_new(protection ? r->protections : r->host,
				      json_pack("{s:s, s:s, s:s}", "name", what, "state",
						state_names[state], "detail", text));
		return;
	}
	printf("  %-8s %s: %s\n", state_names[state], what, text);
}

static void check_fuse(struct report *r)
{
	struct stat st;

	if (stat("/dev/fuse", &st) < 0 || !S_ISCHR(st.st_mode)) {
		say(r, NO, "/dev/fuse",
		    "missing: views cannot be mounted (modprobe fuse;"
		    " in a container, pass --device /dev/fuse)");
		return;
	}
	int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		say(r, NO, "/dev/fuse", "cannot be opened: %s", strerror(errno));
		return;
	}
	close(fd);
	say(r, OK, "/dev/fuse", "a character device this user may open");
}

static void check_fusermount(struct report *r)
{
	static const char *const places[] = { "/usr/bin/fusermount3", "/bin/fusermount3" };
	struct stat st;

	for (size_t i = 0; i < 2; i++)
		if (stat(places[i], &st) == 0) {
			bool setuid = (st.st_mode & S_ISUID) && st.st_uid == 0;
			say(r, setuid || geteuid() == 0 ? OK : NO, "fusermount3", "%s%s", places[i],
			    setuid ? " (set-user-ID root)"
				   : " is not set-user-ID root: users other than root cannot mount views");
			return;
		}
	say(r, geteuid() == 0 ? OK : NO, "fusermount3", "not installed%s",
	    geteuid() == 0 ? " (root mounts without it)" : ": install fuse3 to mount views");
}

static void check_seccomp(struct report *r, size_t *refused)
{
	char err[256];
	void *prog;
	size_t len;

	*refused = 0;
	while (filter_refused[*refused])
		(*refused)++;
	if (prctl(PR_GET_SECCOMP) < 0 && errno == EINVAL) {
		say(r, NO, "seccomp", "this kernel has no seccomp");
		return;
	}
	if (filter_program(&prog, &len, err, sizeof(err)) < 0) {
		say(r, NO, "seccomp", "%s", err);
		return;
	}
	free(prog);
	say(r, OK, "seccomp",
	    "a filter of %zu instructions: %zu calls refused, and"
	    " namespaces, clone3, terminal injection and personalities",
	    len / 8, *refused);
}

static void check_openat2(struct report *r)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_BENEATH };
	int fd = (int)syscall(SYS_openat2, AT_FDCWD, ".", &how, sizeof(how));

	if (fd >= 0) {
		close(fd);
		say(r, OK, "openat2", "RESOLVE_BENEATH confines every lookup of the view");
	} else {
		say(r, NO, "openat2", "%s: the view checks each name by hand instead",
		    strerror(errno));
	}
}

/* Whether HOME's filesystem shares extents (FICLONE): staged saves are
 * then a clone, not a copy. */
static void check_reflinks(struct report *r, const char *home)
{
	char a[PATH_MAX + 32], b[PATH_MAX + 40];
	struct statfs sf;

	snprintf(a, sizeof(a), "%s/.sbx-doctor-XXXXXX", home);
	int fa = mkstemp(a);
	if (fa < 0) {
		say(r, NO, "reflinks", "cannot try in %s: %s", home, strerror(errno));
		return;
	}
	snprintf(b, sizeof(b), "%s.b", a);
	int fb = open(b, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	bool ok = fb >= 0 && write(fa, "x", 1) == 1 && ioctl(fb, FICLONE, fa) == 0;
	int e = errno;
	unlink(a);
	if (fb >= 0) {
		unlink(b);
		close(fb);
	}
	close(fa);
	statfs(home, &sf);
	if (ok)
		say(r, OK, "reflinks", "%s shares extents: a staged save costs no copy", home);
	else
		say(r, NO, "reflinks", "%s (filesystem 0x%lx): %s: staged saves copy the file",
		    home, (unsigned long)sf.f_type, strerror(e));
}

/* Where the home's records are, and whether they can be used as they
 * are (sbx store check says more). */
static void check_store(struct report *r, const char *home)
{
	char target[STORE_TARGET_MAX], shown[STORE_TARGET_MAX], err[1024];
	int version;
	bool postgres;

	if (store_where(home, target, sizeof(target), err, sizeof(err)) < 0) {
		say(r, NO, "store", "%s", err);
		return;
	}
	store_target_shown(target, shown, sizeof(shown));
	if (store_probe(target, &version, &postgres, err, sizeof(err)) < 0)
		say(r, NO, "store", "%s: %s", shown, err);
	else if (version > STORE_SCHEMA_VERSION)
		say(r, NO, "store", "%s: schema version %d, newer than this sbx's %d", shown,
		    version, STORE_SCHEMA_VERSION);
	else
		say(r, OK, "store", "%s %s: schema version %d (this sbx: %d)",
		    postgres ? "postgresql" : "sqlite", shown, version, STORE_SCHEMA_VERSION);
}

/* A home on a filesystem other hosts change too (NFS, SMB, a cluster
 * filesystem, FUSE): inotify sees this host's changes only, so a view's
 * long caches would not learn of another host's (docs/configuration.md,
 * "Several hosts: the shared home"). */
static void check_shared(struct report *r, const char *home)
{
	static const struct {
		unsigned long magic;
		const char *name;
	} shared[] = {
		{ 0x6969, "NFS" },	 { 0xff534d42, "CIFS" },   { 0xfe534d42, "SMB2" },
		{ 0x65735546, "FUSE" },	 { 0x00c36400, "Ceph" },   { 0x01161970, "GFS2" },
		{ 0x7461636f, "OCFS2" }, { 0x0bd00bd0, "Lustre" }, { 0x47504653, "GPFS" },
		{ 0x5346414f, "AFS" },
	};
	struct statfs sf;
	char users[PATH_MAX + 8];

	/* The threads' files: HOME/users, where several hosts mount what
	 * they share (docs/configuration.md, "Several hosts"). */
	snprintf(users, sizeof(users), "%s/users", home);
	if (access(users, F_OK) == 0)
		home = users;
	if (statfs(home, &sf) < 0) {
		say(r, NO, "shared home", "cannot look at %s: %s", home, strerror(errno));
		return;
	}
	for (size_t i = 0; i < sizeof(shared) / sizeof(shared[0]); i++)
		if ((unsigned long)sf.f_type == shared[i].magic) {
			say(r, NO, "shared home",
			    "%s is on %s: inotify does not see what other hosts change there,"
			    " so views must not cache long (mount them with --cache-timeout 1:"
			    " another host's edits then show within 1 s)",
			    home, shared[i].name);
			return;
		}
	say(r, OK, "shared home",
	    "%s is on a local filesystem (0x%lx): inotify sees every change made to it", home,
	    (unsigned long)sf.f_type);
}

static void check_inotify(struct report *r)
{
	long watches = proc_sys_long("fs/inotify/max_user_watches");
	long instances = proc_sys_long("fs/inotify/max_user_instances");

	say(r, instances >= 128 ? OK : NO, "inotify",
	    "%ld watches and %ld instances per user: each view watches its directories with one"
	    " instance, so at most %ld views of one user can be mounted (one more is refused,"
	    " saying so; --host-watch=off mounts it with host edits showing within 1 s). For"
	    " more: sysctl fs.inotify.max_user_instances=N (views + 10)",
	    watches, instances, instances);
}

struct limit_lines {
	struct report *r;
	bool cgroup_v2, cgroup_v1;
};

static void limit_line(void *arg, const char *limit, const char *how, const char *text)
{
	struct limit_lines *l = arg;
	char what[64];

	l->cgroup_v2 |= !strcmp(how, "cgroup v2");
	l->cgroup_v1 |= !strcmp(how, "cgroup v1");
	snprintf(what, sizeof(what), "%s limit", !strcmp(limit, "pids") ? "process" : limit);
	/* An rlimit holds, but less than a cgroup: said as such. */
	say(l->r,
	    !strcmp(how, "rlimit") ? PARTIAL
	    : !strcmp(how, "none") ? NOT_ASKED
				   : ACTIVE,
	    what, "%s: %s", how, text);
}

static void protections(struct report *r, const struct config *c, const char *home,
			const struct sandbox *sb, const char *sb_err, bool sandbox_runs,
			size_t refused)
{
	bool root = geteuid() == 0;
	char size[32];

	if (!sb)
		say(r, INACTIVE, "namespace sandbox", "%s", sb_err);
	else if (!sandbox_runs)
		say(r, INACTIVE, "namespace sandbox",
		    "bubblewrap cannot make a sandbox"
		    " here (see bubblewrap above)");
	if (root)
		say(r, sb ? ACTIVE : INACTIVE, "no host root inside",
		    "each sandbox runs"
		    " as a host uid of its own (%u to %u), uid %d \"%s\" inside, no capability",
		    (unsigned)c->sandbox_uid_base,
		    (unsigned)(c->sandbox_uid_base + c->sandbox_uid_count - 1), SANDBOX_UID,
		    SANDBOX_USER);
	else
		say(r, sb ? ACTIVE : INACTIVE, "no host root inside",
		    "sandboxes run as"
		    " this user (uid %u), uid %d inside, no capability; they share the uid with"
		    " each other and with you (run the broker as root for a uid per sandbox)",
		    (unsigned)geteuid(), SANDBOX_UID);
	say(r, ACTIVE, "caller's privileges in the view",
	    "the kernel checks"
	    " permissions, chown, set-id bits and times with the caller's own capabilities"
	    " (default_permissions on the broker's views); a sandbox may not set set-id bits");
	say(r, sb ? ACTIVE : INACTIVE, "kernel interfaces",
	    "/proc/sys, sysrq-trigger,"
	    " irq, bus, fs read-only; kcore, keys, timer_list, sched_debug and the like masked;"
	    " no /sys");
	say(r, sb ? ACTIVE : INACTIVE, "seccomp filter",
	    "%zu calls refused (Docker's"
	    " default profile's), no new namespaces",
	    refused);
	say(r, sb ? ACTIVE : INACTIVE, "host secrets",
	    "%zu paths of /etc that other"
	    " users may not read are masked; /root, /home, /run, /var and the store are not"
	    " there",
	    sb ? sandbox_masked(sb) : 0);
	say(r, ACTIVE, "boundary hygiene",
	    "descriptors closed (close_range), the"
	    " request's variables set inside only, no controlling terminal");
	say(r, ACTIVE, "one view per thread",
	    "views, locks, sessions, uids and"
	    " cgroups keyed by (user, thread) in full");
	struct cgroups *cg = cgroups_new(&c->limits, home, true);
	struct limit_lines lines = { r, false, false };
	if (cg)
		cgroups_describe(cg, limit_line, &lines);
	cgroups_free(cg);
	if (c->limits.disk || c->limits.disk_inodes)
		say(r, ACTIVE, "disk quota", "%s and %llu files per thread (EDQUOT)",
		    c->limits.disk ? size_text(c->limits.disk, size, sizeof(size))
				   : "no byte limit",
		    (unsigned long long)c->limits.disk_inodes);
	else
		say(r, NOT_ASKED, "disk quota", "disk = 0 and disk_inodes = 0 in sbx.conf");
	if (c->allow_host_bash)
		say(r, PARTIAL, "host mode",
		    "allowed (allow_host_bash = true): the path"
		    " guard refuses plain host paths, but host mode is no boundary");
	else
		say(r, NOT_ASKED, "host mode", "off (allow_host_bash = false)");
}

int cmd_doctor(int argc, char **argv, const char *home)
{
	static const struct option longopts[] = {
		{ "home", required_argument, NULL, 'H' },
		{ "config", required_argument, NULL, 'c' },
		{ "format", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct report r = { .all_active = true };
	const char *config_path = NULL;
	char h[PATH_MAX], path[PATH_MAX + 32], err[512];
	int c;

	getopt_begin(argv, "doctor");
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'H':
			home = optarg;
			break;
		case 'c':
			config_path = optarg;
			break;
		case 'F':
			if (strcmp(optarg, "text") && strcmp(optarg, "json"))
				return usage_error("doctor",
						   "--format takes text or json, not '%s'", optarg);
			r.json = !strcmp(optarg, "json");
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			return usage_error("doctor", NULL);
		}
	}
	if (optind != argc)
		return usage_error("doctor", "unexpected argument '%s'", argv[optind]);
	if (resolve_home("doctor", home, h, sizeof(h)) < 0)
		return 2;
	struct config cf;
	snprintf(path, sizeof(path), "%s/" HOME_CONFIG, h);
	int cr = config_load(config_path ? config_path : path, &cf, err, sizeof(err));
	if (cr < 0 && !(cr == -ENOENT && !config_path)) {
		fprintf(stderr, "sbx: doctor: %s\n", err);
		return 1;
	}
	r.host = json_array();
	r.protections = json_array();
	if (!r.json)
		printf("this host (sbx doctor, home %s):\n", h);

	check_fuse(&r);
	check_fusermount(&r);
	long userns = proc_sys_long("user/max_user_namespaces");
	char sb_err[512] = "";
	struct sandbox *sb = sandbox_new(&cf, sb_err, sizeof(sb_err));
	bool runs = false;
	if (!sb) {
		say(&r, NO, "bubblewrap", "%s", sb_err);
	} else {
		struct identity id;
		char why[512];
		bool taken = identity_take(h, "-", "-doctor", cf.sandbox_uid_base,
					   cf.sandbox_uid_count, &id, why, sizeof(why)) == 0;
		runs = taken && sandbox_probe(sb, &id, why, sizeof(why)) == 0;
		if (taken)
			identity_release(&id);
		say(&r, runs ? OK : NO, "bubblewrap", "%s%s%s%s", sandbox_bwrap(sb),
		    runs ? " makes a sandbox as a sandbox uid" : ": ", runs ? "" : why,
		    runs && sandbox_leaves_chroot(sb) ? " (leaving this chroot first, in the"
							" sandbox's own mount namespace)"
						      : "");
	}
	say(&r, userns > 0 && (runs || !sb) ? OK : NO, "user namespaces",
	    "user.max_user_namespaces = %ld%s", userns,
	    userns > 0 && (runs || !sb) ? "" : ": bubblewrap needs one per sandbox");
	struct cgroups *cg = cgroups_new(&cf.limits, h, true);
	const char *v2 = cg ? cgroups_v2_why(cg) : "out of memory";
	say(&r, v2 ? NO : OK, "cgroup v2 delegation", "%s",
	    v2 ? v2 : "the broker can make a group per sandbox with its own limits");
	cgroups_free(cg);
	size_t refused;
	check_seccomp(&r, &refused);
	check_openat2(&r);
	check_reflinks(&r, h);
	check_inotify(&r);
	check_store(&r, h);
	check_shared(&r, h);
	if (!r.json)
		printf("\nprotections of the exec sandbox:\n");
	protections(&r, &cf, h, sb, sb_err, runs, refused);
	sandbox_free(sb);
	config_free(&cf);
	if (r.json) {
		json_t *o = json_pack("{s:o, s:o, s:b}", "host", r.host, "protections",
				      r.protections, "all_active", r.all_active);
		json_dumpf(o, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
		putchar('\n');
		json_decref(o);
	} else {
		json_decref(r.host);
		json_decref(r.protections);
		printf("\n%s\n",
		       r.all_active ? "every protection is active"
				    : "some protections are not active: see the reasons above");
	}
	return r.all_active ? 0 : 1;
}
