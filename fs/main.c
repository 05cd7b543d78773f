/* main.c - the sbxfs daemon: options, checks, mount, readiness, loop.
 *
 * sbxfs [options] MOUNTPOINT mounts one thread's view and returns once the
 * mount answers (a stat of MOUNTPOINT is served by the new daemon); with
 * -f it stays in the foreground. Failures before that point are reported
 * on stderr in one line and the exit status is 1 (2 for usage errors).
 */
#include "channel.h"
#include "gate.h"
#include "journal.h"
#include "ops.h"
#include "owner.h"
#include "quota.h"
#include "stage.h"
#include "view.h"
#include "watch.h"
#include "common/proc.h"
#include "common/cleanup.h"
#include "common/home.h"
#include "common/ids.h"
#include "common/log.h"
#include "common/mounts.h"
#include "common/spawn.h"
#include "common/viewreg.h"
#include "store/store.h"
#include "store/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SBX_VERSION
#define SBX_VERSION "0.1.0"
#endif

/* How many leases' time a view's store writer waits, idle, before it
 * lets its connection go (store_writer_rest_after()). */
#define WRITER_REST_LEASES 3

struct options {
	struct view_config view;
	const char *mountpoint;
	const char *log_path;
	char fuse_opts[4096];
	bool foreground, debug, single_thread;
	const char *host;      /* --host: the lease's host id */
	int64_t lease_wait_ms; /* --lease-wait */
	char home_buf[PATH_MAX];
	char log_file[PATH_MAX + 64]; /* where the daemon logs, for messages */
};

/* What sbxfs calls itself in its help and errors: NAME "sbxfs", or "sbx
 * mount" when sbx mount runs it (it says so in SBXFS_NAME_ENV), and LABEL,
 * the prefix of a message: "sbxfs" or "sbx: mount", as sbx's own. */
static struct {
	char name[64], label[64];
} prog;

static void prog_setup(char **argv)
{
	const char *name = getenv(SBXFS_NAME_ENV);
	size_t n;

	snprintf(prog.name, sizeof(prog.name), "%s", name && *name ? name : "sbxfs");
	unsetenv(SBXFS_NAME_ENV); /* the daemon's children are not sbx mount */
	n = strcspn(prog.name, " ");
	if (prog.name[n])
		snprintf(prog.label, sizeof(prog.label), "%.*s: %s", (int)n, prog.name,
			 prog.name + n + 1);
	else
		snprintf(prog.label, sizeof(prog.label), "%s", prog.name);
	/* getopt's own messages begin with argv[0], else the full path. */
	argv[0] = prog.label;
}

static const char usage_text[] =
	"\n"
	"Mounts one agent thread's sandbox view at MOUNTPOINT:\n"
	"  MOUNTPOINT/user-data/{workspace,uploads,outputs}  read-write\n"
	"  MOUNTPOINT/skills/{public,custom,legacy,integrations}  read-only\n"
	"  MOUNTPOINT/acp-workspace                          read-write\n"
	"  MOUNTPOINT/NAME                                   per --mount\n"
	"The thread's directories live under $SBX_HOME/users/USER/threads/THREAD\n"
	"and are created (mode 0700) if missing. sbxfs returns once the mount\n"
	"answers; unmount with 'sbx umount MOUNTPOINT' or 'fusermount3 -u'.\n"
	"\n"
	"Options:\n"
	"  --user ID                 user id (required): 1 to 255 of [A-Za-z0-9_-]\n"
	"  --thread ID               thread id (required): 1 to 64 of [A-Za-z0-9_-]\n"
	"  --home DIR                $SBX_HOME (default: $SBX_HOME, else /var/lib/sbxfs\n"
	"                            for root, else $XDG_DATA_HOME/sbxfs or\n"
	"                            ~/.local/share/sbxfs)\n"
	"  --store STORE             where the home's records are: sqlite ($SBX_HOME/\n"
	"                            sbx.db) or a PostgreSQL server (postgresql://...,\n"
	"                            or host=... dbname=...); default: $SBX_STORE,\n"
	"                            else store in $SBX_HOME/sbx.conf, else sqlite\n"
	"  --host NAME               this host's id in the thread's lease (default:\n"
	"                            $SBX_HOST, else host = in sbx.conf, else the\n"
	"                            host name): a thread is mounted on one host at\n"
	"                            a time\n"
	"  --lease-wait SEC          while another host holds the thread's lease,\n"
	"                            wait up to SEC for it to end (default: 0)\n"
	"  --skills DIR              one plain skills root instead of the categories\n"
	"                            (default: $SBX_HOME/skills/public, .../users/\n"
	"                            USER/skills/custom, skills/custom as legacy,\n"
	"                            integrations/skills)\n"
	"  --mount /mnt/NAME=HOSTDIR[:ro|:rw]\n"
	"                            also show HOSTDIR at MOUNTPOINT/NAME, read-only\n"
	"                            with :ro (repeatable)\n"
	"  --portable-names=on|off   refuse Windows device names such as NUL.txt\n"
	"                            for new entries (default: on)\n"
	"  --acp-workspace=ro|rw     MOUNTPOINT/acp-workspace read-only, as the\n"
	"                            reference has it for the agent (default), or\n"
	"                            writable: a view for the ACP agent itself\n"
	"  --cache-timeout SEC       how long the kernel may cache names,\n"
	"                            attributes and pages (default: 3600); edits\n"
	"                            made on the host are pushed to the kernel at\n"
	"                            once by the host watch\n"
	"  --host-watch=on|off       watch the backing directories for host-side\n"
	"                            edits (default: on; a view that cannot, the\n"
	"                            user's inotify instances all taken, is not\n"
	"                            mounted); with off host edits show up\n"
	"                            within min(1, --cache-timeout) seconds\n"
	"  --rbw MODE                read-before-write gate: enforce (default) refuses\n"
	"                            (EACCES) to overwrite, truncate or replace an\n"
	"                            existing file the thread has not read in its\n"
	"                            current version; strict also wants a fresh\n"
	"                            read after the thread's own writes; audit only\n"
	"                            records what enforce would refuse; off\n"
	"  --rbw-unlink              the gate also covers unlink (a file must have\n"
	"                            been read) and rmdir (listed)\n"
	"  --staging=on|strict|off   atomic staged writes (default: on): a rewritten\n"
	"                            file is replaced whole at close or fsync, or\n"
	"                            not at all; where that cannot be done as POSIX\n"
	"                            says (set-id files, a directory the writer may\n"
	"                            not write), in place; strict refuses those\n"
	"                            opens instead; off writes in place\n"
	"  --writeback[=on|off]      the kernel's writeback cache (default: off):\n"
	"                            writes are gathered in memory and sent in\n"
	"                            large pieces, but their errors (no space,\n"
	"                            quota, I/O) show at close or fsync, not at\n"
	"                            write(2); with the gate on, a writer it would\n"
	"                            refuse at open writes through instead\n"
	"  --max-watches N           watch at most N directories for host edits\n"
	"                            (default: as many as inotify allows); below\n"
	"                            the others host edits show up within a second\n"
	"  --fd-budget N             cached inodes that keep an open O_PATH fd\n"
	"                            (default: half the open-file limit); others\n"
	"                            are found again by name when used\n"
	"  --map-owner UID:GID       show the files of the daemon's user as owned\n"
	"                            by UID:GID, and serve UID's requests as the\n"
	"                            daemon's user's (a sandbox; it may not set\n"
	"                            set-id bits); used by sbx broker\n"
	"  --quota-bytes N           refuse (EDQUOT) writes that would take the\n"
	"                            thread's directories past N bytes (0: none)\n"
	"  --quota-inodes N          refuse new files and directories past N\n"
	"                            (0: none)\n"
	"  --overlay DIR             the workspace shows project DIR copy-on-write:\n"
	"                            changes go to the thread's workspace directory\n"
	"                            (the layer), never to DIR (docs/try.md)\n"
	"  --log FILE                daemon log (default: stderr with -f, else\n"
	"                            $SBX_HOME/log/sbxfs-USER-THREAD.log)\n"
	"  -o OPT[,OPT...]           FUSE mount options, e.g. allow_other (which\n"
	"                            also turns on default_permissions)\n"
	"  -f, --foreground          stay in the foreground, log to stderr\n"
	"  -d, --debug               log every request (implies -f)\n"
	"  -s                        single-threaded loop (for debugging)\n"
	"  -h, --help                show this help\n"
	"  -V, --version             show the version\n";

static __attribute__((format(printf, 1, 2))) int usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	int r = usage_verror(prog.label, prog.name, fmt, ap);
	va_end(ap);
	return r;
}

static int append_fuse_opt(struct options *o, const char *opt)
{
	size_t n = strlen(o->fuse_opts);
	int w = snprintf(o->fuse_opts + n, sizeof(o->fuse_opts) - n, "%s%s", n ? "," : "", opt);

	return w < 0 || (size_t)w >= sizeof(o->fuse_opts) - n ? -E2BIG : 0;
}

static bool has_fuse_opt(const char *opts, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = opts; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, name, len) && (p[len] == ',' || !p[len]))
			return true;
	return false;
}

/* Takes optarg of option --NAME, which is A or B, into *OUT: true if it
 * is YES. Returns 0, or the exit status of the usage error. */
static int either(const char *name, const char *a, const char *b, const char *yes, bool *out)
{
	if (strcmp(optarg, a) && strcmp(optarg, b))
		return usage_error("--%s takes %s or %s, not '%s'", name, a, b, optarg);
	*out = !strcmp(optarg, yes);
	return 0;
}

/* Returns 0, or the exit status for a usage error / --help / --version. */
static int parse_options(int argc, char **argv, struct options *o, bool *exit_now)
{
	enum {
		OPT_USER = 256,
		OPT_THREAD,
		OPT_HOME,
		OPT_SKILLS,
		OPT_MOUNT,
		OPT_PORTABLE,
		OPT_ACP,
		OPT_TIMEOUT,
		OPT_WRITEBACK,
		OPT_LOG,
		OPT_FD_BUDGET,
		OPT_HOST_WATCH,
		OPT_MAX_WATCHES,
		OPT_RBW,
		OPT_RBW_UNLINK,
		OPT_STAGING,
		OPT_MAP_OWNER,
		OPT_QUOTA_BYTES,
		OPT_QUOTA_INODES,
		OPT_STORE,
		OPT_HOST,
		OPT_LEASE_WAIT,
		OPT_OVERLAY
	};
	static const struct option longopts[] = {
		{ "user", required_argument, NULL, OPT_USER },
		{ "thread", required_argument, NULL, OPT_THREAD },
		{ "home", required_argument, NULL, OPT_HOME },
		{ "skills", required_argument, NULL, OPT_SKILLS },
		{ "mount", required_argument, NULL, OPT_MOUNT },
		{ "portable-names", required_argument, NULL, OPT_PORTABLE },
		{ "acp-workspace", required_argument, NULL, OPT_ACP },
		{ "cache-timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "host-watch", required_argument, NULL, OPT_HOST_WATCH },
		{ "max-watches", required_argument, NULL, OPT_MAX_WATCHES },
		{ "writeback", optional_argument, NULL, OPT_WRITEBACK },
		{ "rbw", required_argument, NULL, OPT_RBW },
		{ "rbw-unlink", no_argument, NULL, OPT_RBW_UNLINK },
		{ "staging", required_argument, NULL, OPT_STAGING },
		{ "log", required_argument, NULL, OPT_LOG },
		{ "fd-budget", required_argument, NULL, OPT_FD_BUDGET },
		{ "map-owner", required_argument, NULL, OPT_MAP_OWNER },
		{ "quota-bytes", required_argument, NULL, OPT_QUOTA_BYTES },
		{ "quota-inodes", required_argument, NULL, OPT_QUOTA_INODES },
		{ "store", required_argument, NULL, OPT_STORE },
		{ "host", required_argument, NULL, OPT_HOST },
		{ "lease-wait", required_argument, NULL, OPT_LEASE_WAIT },
		{ "overlay", required_argument, NULL, OPT_OVERLAY },
		{ "foreground", no_argument, NULL, 'f' },
		{ "debug", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	const char *why;
	char *end;
	int c, r;

	*exit_now = false;
	o->view.timeout_watched = 3600;
	o->view.host_watch = true;
	o->view.portable_names = true;
	o->view.staging = true;
	while ((c = getopt_long(argc, argv, "fdso:hV", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_USER:
			o->view.user = optarg;
			break;
		case OPT_THREAD:
			o->view.thread = optarg;
			break;
		case OPT_HOME:
			o->view.home = optarg;
			break;
		case OPT_STORE:
			/* The environment carries it: store_open() reads it, and
			 * so would anything this daemon started. */
			if (!store_target_ok(optarg) || strlen(optarg) >= STORE_TARGET_MAX ||
			    setenv(STORE_ENV, optarg, 1) < 0)
				return usage_error(
					"--store takes sqlite, a postgresql:// URL or a libpq keyword string");
			break;
		case OPT_HOST:
			if (!lease_host_ok(optarg))
				return usage_error(
					"--host takes 1 to 64 letters, digits, '.', '_' or"
					" '-', not '%s'",
					optarg);
			o->host = optarg;
			break;
		case OPT_LEASE_WAIT: {
			errno = 0;
			double sec = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(sec >= 0) || sec > 86400)
				return usage_error(
					"--lease-wait takes seconds from 0 to 86400, not '%s'",
					optarg);
			o->lease_wait_ms = (int64_t)(sec * 1000);
			break;
		}
		case OPT_SKILLS:
			o->view.skills = optarg;
			break;
		case OPT_MOUNT:
			if (o->view.nmounts == VIEW_MAX_MOUNTS)
				return usage_error("at most 32 --mount options");
			if (mount_spec_parse(optarg, &o->view.mounts[o->view.nmounts], &why) < 0)
				return usage_error("invalid --mount '%s': %s", optarg, why);
			for (size_t i = 0; i < o->view.nmounts; i++)
				if (!strcmp(o->view.mounts[i].name,
					    o->view.mounts[o->view.nmounts].name))
					return usage_error("/mnt/%s is given twice",
							   o->view.mounts[i].name);
			o->view.nmounts++;
			break;
		case OPT_PORTABLE:
			if ((r = either("portable-names", "on", "off", "on",
					&o->view.portable_names)))
				return r;
			break;
		case OPT_ACP:
			if ((r = either("acp-workspace", "ro", "rw", "rw", &o->view.acp_writable)))
				return r;
			break;
		case OPT_TIMEOUT:
			errno = 0;
			o->view.timeout_watched = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(o->view.timeout_watched >= 0) ||
			    o->view.timeout_watched > 86400)
				return usage_error(
					"--cache-timeout takes seconds from 0 to 86400, not '%s'",
					optarg);
			break;
		case OPT_HOST_WATCH:
			if ((r = either("host-watch", "on", "off", "on", &o->view.host_watch)))
				return r;
			break;
		case OPT_WRITEBACK:
			o->view.writeback = true; /* --writeback alone: on */
			if (optarg &&
			    (r = either("writeback", "on", "off", "on", &o->view.writeback)))
				return r;
			break;
		case OPT_RBW: {
			enum gate_mode mode;
			if (gate_mode_parse(optarg, &mode) < 0)
				return usage_error(
					"--rbw takes enforce, strict, audit or off, not '%s'",
					optarg);
			o->view.rbw = (int)mode;
			break;
		}
		case OPT_RBW_UNLINK:
			o->view.rbw_unlink = true;
			break;
		case OPT_STAGING:
			if (strcmp(optarg, "on") && strcmp(optarg, "strict") &&
			    strcmp(optarg, "off"))
				return usage_error("--staging takes on, strict or off, not '%s'",
						   optarg);
			o->view.staging = strcmp(optarg, "off") != 0;
			o->view.staging_strict = !strcmp(optarg, "strict");
			break;
		case OPT_LOG:
			o->log_path = optarg;
			break;
		case OPT_FD_BUDGET:
		case OPT_MAX_WATCHES: {
			unsigned long n;

			errno = 0;
			n = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || n < 1 || n > 1000000 ||
			    optarg[0] == '-')
				return usage_error(
					c == OPT_FD_BUDGET
						? "--fd-budget takes a count from 1 to 1000000, not '%s'"
						: "--max-watches takes a count from 1 to 1000000, not '%s'",
					optarg);
			if (c == OPT_FD_BUDGET)
				o->view.fd_budget = n;
			else
				o->view.max_watches = n;
			break;
		}
		case OPT_MAP_OWNER: {
			unsigned long uid, gid;
			char *colon;

			errno = 0;
			uid = strtoul(optarg, &colon, 10);
			gid = *colon == ':' ? strtoul(colon + 1, &end, 10) : 0;
			if (errno || colon == optarg || *colon != ':' || end == colon + 1 || *end ||
			    optarg[0] == '-' || colon[1] == '-' || uid == 0 || gid == 0 ||
			    uid > 0x7fffffff || gid > 0x7fffffff)
				return usage_error(
					"--map-owner takes UID:GID, both from 1 to 2^31-1, not '%s'",
					optarg);
			o->view.map_owner = true;
			o->view.map_uid = (uid_t)uid;
			o->view.map_gid = (gid_t)gid;
			break;
		}
		case OPT_QUOTA_BYTES:
		case OPT_QUOTA_INODES: {
			unsigned long long n;

			errno = 0;
			n = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-')
				return usage_error(
					c == OPT_QUOTA_BYTES
						? "--quota-bytes takes a number of bytes (0: none), not '%s'"
						: "--quota-inodes takes a count (0: none), not '%s'",
					optarg);
			if (c == OPT_QUOTA_BYTES)
				o->view.quota_bytes = n;
			else
				o->view.quota_inodes = n;
			break;
		}
		case OPT_OVERLAY:
			o->view.overlay = optarg;
			break;
		case 'f':
			o->foreground = true;
			break;
		case 'd':
			o->debug = o->foreground = true;
			break;
		case 's':
			o->single_thread = true;
			break;
		case 'o':
			if (append_fuse_opt(o, optarg) < 0)
				return usage_error("-o options are too long");
			break;
		case 'h':
			printf("Usage: %s --user ID --thread ID [options] MOUNTPOINT\n", prog.name);
			fputs(usage_text, stdout);
			*exit_now = true;
			return 0;
		case 'V':
			printf("sbxfs %s (libfuse %d)\n", SBX_VERSION, fuse_version());
			*exit_now = true;
			return 0;
		default:
			return usage_error(NULL);
		}
	}
	if (optind != argc - 1)
		return optind < argc ? usage_error("one MOUNTPOINT expected, got extra '%s'",
						   argv[optind + 1])
				     : usage_error("MOUNTPOINT is missing");
	o->mountpoint = argv[optind];
	/* Unwatched caches must let host edits through within a second. */
	o->view.timeout = o->view.timeout_watched < 1 ? o->view.timeout_watched : 1;
	if (!o->view.host_watch)
		o->view.timeout_watched = o->view.timeout;
	if (!o->view.user || !o->view.thread)
		return usage_error("--user and --thread are required");
	if (user_id_check(o->view.user, &why) < 0)
		return usage_error("invalid user id '%s': %s", o->view.user, why);
	if (thread_id_check(o->view.thread, &why) < 0)
		return usage_error("invalid thread id '%s': %s", o->view.thread, why);
	if (o->view.home && !*o->view.home)
		return usage_error("--home is empty");
	if (!o->view.home) {
		if (home_default(o->home_buf, sizeof(o->home_buf)) < 0)
			return usage_error("no home: set --home or $SBX_HOME");
		o->view.home = o->home_buf;
	}
	return 0;
}

/* True if PROG is an executable in /usr/bin or on $PATH. */
static bool have_program(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "/usr/bin/%s", prog);
	if (access(buf, X_OK) == 0)
		return true;
	for (const char *p = path; p && *p;) {
		size_t n = strcspn(p, ":");
		if (n &&
		    snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, p, prog) < (int)sizeof(buf) &&
		    access(buf, X_OK) == 0)
			return true;
		p += n + (p[n] == ':');
	}
	return false;
}

/* A stale FUSE mount (its daemon died) answers ENOTCONN; detach it so the
 * new mount can take its place. Returns 0 or -errno with a message out. */
static int check_mountpoint(const char *mp)
{
	struct stat st, up;
	struct statfs sf;
	char parent[PATH_MAX];

	/* statfs always reaches the daemon; stat may be answered from the
	 * dead mount's attribute cache. */
	if (statfs(mp, &sf) < 0 && errno == ENOTCONN) {
		int r = geteuid() == 0 ? umount2(mp, MNT_DETACH) : -1;
		if (r < 0) {
			pid_t pid = fork();
			if (pid == 0) {
				execlp("fusermount3", "fusermount3", "-u", "-z", mp, (char *)NULL);
				_exit(127);
			}
			int status = 0;
			r = pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
					    WEXITSTATUS(status) == 0
				    ? 0
				    : -1;
		}
		if (r < 0 || stat(mp, &st) < 0) {
			log_error(
				"%s is a stale mount whose daemon died and it could not be detached; run: fusermount3 -u -z %s",
				mp, mp);
			return -ENOTCONN;
		}
		log_info("detached the stale mount at %s (its daemon had died)", mp);
	}
	if (stat(mp, &st) < 0) {
		log_error("cannot use mount point %s: %s", mp, strerror(errno));
		return -errno;
	}
	if (!S_ISDIR(st.st_mode)) {
		log_error("mount point %s is not a directory", mp);
		return -ENOTDIR;
	}
	snprintf(parent, sizeof(parent), "%s/..", mp);
	if (stat(parent, &up) == 0 && up.st_dev != st.st_dev) {
		char type[64];
		/* sbx umount takes down views only: for anything else, say
		 * what is there and what does unmount it. */
		int r = view_mounted_at(mp, type, sizeof(type));
		if (r > 0)
			log_error(
				"%s is already a mount point, a view: unmount it first (sbx umount %s)",
				mp, mp);
		else if (r == 0)
			log_error(
				"%s is already a mount point, a %s mount, not an sbxfs view: unmount"
				" it with umount(8), or choose another mount point",
				mp, type);
		else
			log_error("%s is already a mount point: unmount it first, or choose another"
				  " mount point",
				  mp);
		return -EBUSY;
	}
	if (geteuid() != 0 && !have_program("fusermount3")) {
		log_error(
			"fusermount3 is missing: a user other than root mounts through it (install the fuse3 package)");
		return -ENOENT;
	}
	if (access("/dev/fuse", R_OK | W_OK) < 0) {
		int e = errno;
		log_error(
			"cannot open /dev/fuse: %s (%s)", strerror(e),
			e == EACCES
				? "this user may not use it; Debian makes it mode 0666, or run as root"
				: "load the fuse module; in a container pass --device /dev/fuse");
		return -ENODEV;
	}
	return 0;
}

static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* Opens the daemon's log: --log, else $SBX_HOME/log/sbxfs-USER-THREAD.log.
 * Its directory goes to *DIR (O_PATH, -1 if it cannot be had) and its
 * name to NAME, for log_set_file(). Returns the fd or -errno. */
static int open_log(struct options *o, int *dir, char name[static NAME_MAX + 1])
{
	_cleanup_(closep) int homefd = -1;
	int fd;

	*dir = -1;
	if (o->log_path) {
		snprintf(o->log_file, sizeof(o->log_file), "%s", o->log_path);
		fd = open(o->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		const char *slash = strrchr(o->log_path, '/');
		char *parent = slash ? strndup(o->log_path, (size_t)(slash - o->log_path) + 1)
				     : strdup(".");
		if (parent && fd >= 0)
			*dir = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
		free(parent);
		snprintf(name, NAME_MAX + 1, "%s", slash ? slash + 1 : o->log_path);
	} else {
		homefd = home_open(o->view.home);
		*dir = homefd < 0 ? homefd : dir_ensure(homefd, HOME_LOG, 0700);
		if (*dir < 0)
			return *dir;
		snprintf(name, NAME_MAX + 1, "sbxfs-%s-%s.log", o->view.user, o->view.thread);
		snprintf(o->log_file, sizeof(o->log_file), "%s/" HOME_LOG "/%s", o->view.home,
			 name);
		fd = openat(*dir, name, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC,
			    0600);
	}
	if (fd < 0) {
		int r = neg_errno();
		if (*dir >= 0)
			close(*dir);
		*dir = -1;
		return r;
	}
	return fd;
}

static struct fuse_session *session_new(struct options *o, struct view *v)
{
	char fsname[600];
	const char *argv[8];
	int argc = 0;

	argv[argc++] = "sbxfs";
	if (o->debug)
		argv[argc++] = "-d";
	/* The type becomes fuse.sbxfs, by which sbx umount knows a view
	 * (VIEW_FSTYPE); the source names the thread. */
	snprintf(fsname, sizeof(fsname), "fsname=sbxfs:%s/%s,subtype=sbxfs", o->view.user,
		 o->view.thread);
	if (append_fuse_opt(o, fsname) < 0)
		return NULL;
	/* Where other users come in, the kernel applies permission checks
	 * and the rules for privileged changes (chown, set-id bits, others'
	 * times) with each caller's own rights. A private view's callers are
	 * the mounting user's: the daemon applies those rules itself
	 * (ops_entry.c), sparing the kernel's GETATTR of a directory after
	 * each of its changes, which a delete-heavy workload pays 25-50%
	 * for. */
	if (has_fuse_opt(o->fuse_opts, "allow_other") &&
	    !has_fuse_opt(o->fuse_opts, "default_permissions") &&
	    append_fuse_opt(o, "default_permissions") < 0)
		return NULL;
	v->default_permissions = has_fuse_opt(o->fuse_opts, "default_permissions");
	argv[argc++] = "-o";
	argv[argc++] = o->fuse_opts;
	struct fuse_args args = FUSE_ARGS_INIT(argc, (char **)argv);
	struct fuse_session *se = fuse_session_new(&args, &view_ops, sizeof(view_ops), v);
	fuse_opt_free_args(&args); /* libfuse may have copied into it */
	return se;
}

/* Writes into HINT why the watch could not be had (ERROR, from
 * watch_new()) and the fix, if the cause is the user's limit of inotify
 * instances (one per view); else "". */
static void watch_limit_hint(int error, char *hint, size_t size)
{
	long max = error == EMFILE ? proc_sys_long("fs/inotify/max_user_instances") : -1;

	hint[0] = '\0';
	if (max > 0)
		snprintf(hint, size,
			 " (each view takes one of the user's %ld inotify instances,"
			 " fs.inotify.max_user_instances): raise the limit, e.g. sysctl"
			 " fs.inotify.max_user_instances=%ld",
			 max, max < 1024 ? 2048 : max * 2);
}

static int run_loop(struct options *o, struct fuse_session *se)
{
	struct fuse_loop_config *cfg;
	int r;

	if (o->single_thread)
		return fuse_session_loop(se);
	cfg = fuse_loop_cfg_create();
	if (!cfg)
		return -ENOMEM;
	/* One /dev/fuse fd per worker: no contention on a shared queue. */
	fuse_loop_cfg_set_clone_fd(cfg, 1);
	r = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	return r;
}

/* The kernel sizes FUSE readahead from the bdi default (128 KiB), far
 * below what sequential reads want: each request is a round trip. The
 * bdi of a FUSE mount is tunable only after INIT, and only by root. */
static void set_readahead(const struct stat *st, unsigned kb)
{
	char path[128], val[32];
	int fd, n;

	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", major(st->st_dev),
		 minor(st->st_dev));
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return; /* not root: the kernel default stays */
	n = snprintf(val, sizeof(val), "%u", kb);
	if (write(fd, val, (size_t)n) != n)
		log_debug("cannot set %s: %s", path, strerror(errno));
	close(fd);
}

/* Waits until the child mounted (a byte on READY) and the mount answers. */
static int wait_ready(int ready, pid_t child, const char *mp, const char *log)
{
	char c;
	ssize_t n;
	struct stat st;
	int status;

	do
		n = read(ready, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n == 1 && stat(mp, &st) == 0) {
		set_readahead(&st, 1024);
		return 0;
	}
	if (waitpid(child, &status, WNOHANG) == child && WIFEXITED(status) &&
	    WEXITSTATUS(status) != 0)
		return WEXITSTATUS(status);
	log_error("the daemon did not come up at %s; its log says why: %s", mp, log);
	return 1;
}

/* The daemon's own threads started from here (the watch, the store
 * writer, the gate's hasher, the quota's scan) inherit a mask without
 * the signals that end the loop: libfuse's loop waits for them on this
 * thread (its sem_wait is what the signal interrupts; its workers block
 * them), and one taken by another thread would leave the loop waiting
 * for a request that may never come. SIG_SETMASK with OLD ends it. */
static void quiet_threads_begin(sigset_t *old)
{
	sigset_t ending;

	sigemptyset(&ending);
	sigaddset(&ending, SIGTERM);
	sigaddset(&ending, SIGINT);
	sigaddset(&ending, SIGHUP);
	sigaddset(&ending, SIGQUIT);
	pthread_sigmask(SIG_BLOCK, &ending, old);
}

/* The lease is lost (owner.h): the loop ends as by SIGTERM (the loop's
 * threads take it), and main() unmounts. */
static void lease_lost(void *arg, const char *why)
{
	(void)arg;
	(void)why;
	kill(getpid(), SIGTERM);
}

/* The store writer (journal, marks, audit rows) and the read-before-write
 * gate, with its marks from earlier mounts. Without a usable store the
 * view still works: no journal, marks in memory, refusals in the log only.
 * Runs after the fork: the gate and the writer have threads, SQLite
 * connections do not cross fork(). Returns 0 or -ENOMEM. */
static int services_start(const struct view_config *cfg, struct view *v, struct owner *owner)
{
	char err[PATH_MAX + 256];
	struct store *s;
	int n;

	v->gate = NULL;
	v->writer = NULL;
	quota_start(v->quota);
	if (cfg->rbw != GATE_OFF) {
		v->gate = gate_new((enum gate_mode)cfg->rbw, cfg->rbw_unlink, NULL);
		if (!v->gate)
			return -ENOMEM;
	}
	if (store_open(cfg->home, &s, err, sizeof(err)) < 0) {
		log_warn(
			"no change journal; read marks and audit rows are kept in memory and this log only: %s",
			err);
		return 0;
	}
	n = gate_load(v->gate, s, cfg->user, cfg->thread);
	if (n < 0)
		log_warn("read marks of earlier mounts are not used: %s", strerror(-n));
	else if (n > 0)
		log_info("%d read marks from earlier mounts", n);
	int64_t since = 0;
	if (store_run_open_since(s, cfg->user, cfg->thread, &since) < 0)
		since = 0;
	if ((n = owner_fence(owner, s)) < 0) {
		log_warn("no change journal: cannot fence the store with the lease: %s",
			 strerror(-n));
		store_close(s);
		return 0;
	}
	v->writer = store_writer_start(s, cfg->user, cfg->thread);
	store_writer_on_fenced(v->writer, owner_lose, owner);
	store_writer_on_failed(v->writer, view_refuse_changes, v);
	/* An idle view's writer gives its PostgreSQL connection back after
	 * three leases' time (the heartbeat keeps its own): 1,000 idle views
	 * then hold 1,000 server processes, not 2,000. */
	store_writer_rest_after(v->writer, WRITER_REST_LEASES * owner_lease_ms(owner));
	if (!v->writer)
		log_warn(
			"no change journal; read marks and audit rows are kept in memory and this log only: cannot start the store writer");
	gate_set_writer(v->gate, v->writer);
	if (since) /* a run was open before this mount */
		journal_run(v, NULL, since);
	return 0;
}

/* Frees the view and what main() attached to it. */
static void view_end(struct view *v)
{
	ops_close_all(v);
	stage_close(v);
	journal_free(v->journal);
	v->journal = NULL;
	channel_free(v->channel); /* after the session: its hooks use it */
	v->channel = NULL;
	view_close(v);
}

int main(int argc, char **argv)
{
	/* From the heap, zeroed as it is used: on the stack its room for
	 * every --mount would be a daemon's resident memory (1,000 views). */
	_cleanup_(freep) struct options *o = calloc(1, sizeof(*o));
	struct view v;
	struct fuse_session *se;
	struct owner *owner = NULL;
	char err[PATH_MAX + 256];
	int pipefd[2] = { -1, -1 }, r, logfd = -1, logdir = -1;
	char logname[NAME_MAX + 1];
	bool exit_now;

	prog_setup(argv);
	/* Until it detaches, sbxfs speaks as the command that was typed. */
	log_setup(prog.label, NULL, LOG_INFO, false);
	if (!o) {
		log_error("%s", strerror(ENOMEM));
		return 1;
	}
	r = parse_options(argc, argv, o, &exit_now);
	if (r || exit_now)
		return r;
	if (o->debug)
		log_setup("sbxfs", NULL, LOG_DEBUG, true);
	if (o->foreground && o->log_path) {
		int fd = open_log(o, &logdir, logname);
		FILE *f = fd < 0 ? NULL : fdopen(fd, "a");
		if (!f) {
			log_error("cannot open the log file %s: %s", o->log_path,
				  strerror(fd < 0 ? -fd : errno));
			return 1;
		}
		log_setup("sbxfs", f, o->debug ? LOG_DEBUG : LOG_INFO, true);
		if (logdir >= 0)
			log_set_file(logdir, logname, LOG_FILE_MAX);
	}
	raise_fd_limit();
	umask(0); /* the kernel already applied the caller's umask */
	if (check_mountpoint(o->mountpoint) < 0)
		return 1;
	if (view_open(&v, &o->view, err, sizeof(err)) < 0) {
		log_error("%s", err);
		return 1;
	}
	if (stage_setup(&v, &o->view, err, sizeof(err)) < 0) {
		log_error("%s", err);
		view_end(&v);
		return 1;
	}
	v.journal = journal_new(o->view.home, o->view.user, o->view.thread);
	if (!v.journal || ops_open_files_new(&v) < 0) {
		log_error("cannot build the view: %s", strerror(ENOMEM));
		view_end(&v);
		return 1;
	}
	/* A view that cannot watch would show host edits up to a second
	 * late, or later than its cache promised: it says so and is not
	 * mounted, rather than mounted to keep less than it says. */
	if (o->view.host_watch && o->view.timeout_watched > o->view.timeout &&
	    !(v.watch = watch_new(&v, o->view.max_watches, err, sizeof(err)))) {
		char hint[256];
		watch_limit_hint(errno, hint, sizeof(hint));
		log_error("cannot watch the backing directories for host edits: %s%s; or mount"
			  " with --host-watch=off (host edits then show up within %g s)",
			  err, hint, o->view.timeout);
		view_end(&v);
		return 1;
	}
	if (geteuid() == 0) {
		r = ops_enable_creds_switch();
		if (r < 0)
			log_warn(
				"new files will belong to root: cannot keep capabilities across fsuid changes: %s",
				strerror(-r));
		v.creds_switch = r == 0;
	}
	/* Before the mount: a thread another host holds is not mounted. */
	if ((r = owner_acquire(o->view.home, o->view.user, o->view.thread, o->host,
			       o->lease_wait_ms, &owner, err, sizeof(err))) < 0) {
		log_error("%s", err);
		watch_free(v.watch);
		view_end(&v);
		return r == -EBUSY || r == -EUSERS ? LEASE_EXIT_REFUSED : 1;
	}
	if (!o->foreground) {
		logfd = open_log(o, &logdir, logname);
		if (logfd < 0) {
			log_error("cannot open the log file: %s", strerror(-logfd));
			view_end(&v);
			return 1;
		}
		if (pipe2(pipefd, O_CLOEXEC) < 0) {
			log_error("pipe: %s", strerror(errno));
			return 1;
		}
		pid_t pid = fork();
		if (pid < 0) {
			log_error("fork: %s", strerror(errno));
			return 1;
		}
		if (pid > 0) {
			close(pipefd[1]);
			r = wait_ready(pipefd[0], pid, o->mountpoint, o->log_file);
			owner_free(owner, false); /* the child's now */
			watch_free(v.watch);
			view_end(&v);
			return r;
		}
		close(pipefd[0]);
		setsid();
	}

	se = session_new(o, &v);
	if (!se) {
		log_error("invalid FUSE options '%s'", o->fuse_opts);
		owner_free(owner, true);
		view_end(&v);
		return 1;
	}
	v.session = se;
	/* As the mount table will spell it: resolved now, while it is
	 * still a plain directory (resolved once mounted, it would call
	 * into the view itself). */
	char canonical[PATH_MAX];
	if (!realpath(o->mountpoint, canonical))
		snprintf(canonical, sizeof(canonical), "%s", o->mountpoint);
	if (fuse_set_signal_handlers(se) != 0 || fuse_session_mount(se, o->mountpoint) != 0) {
		log_error("cannot mount %s (see the message above)", o->mountpoint);
		owner_free(owner, true);
		fuse_session_destroy(se);
		view_end(&v);
		return 1;
	}
	if ((r = channel_install(se, &v)) < 0)
		log_warn(
			"every write costs a second request (security.capability): cannot hook the FUSE channel: %s",
			strerror(-r));
	if (!o->foreground) {
		int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (devnull >= 0) {
			dup2(devnull, STDIN_FILENO);
			dup2(devnull, STDOUT_FILENO);
			close(devnull);
		}
		dup2(logfd, STDERR_FILENO);
		close(logfd);
		log_setup("sbxfs", NULL, LOG_INFO, true);
		if (logdir >= 0)
			log_set_file(logdir, logname, LOG_FILE_MAX);
		if (write(pipefd[1], "M", 1) != 1)
			log_warn("could not signal readiness");
		close(pipefd[1]);
	}
	sigset_t loop_mask;
	quiet_threads_begin(&loop_mask);
	if (v.watch && (r = watch_start(v.watch, se)) < 0) {
		log_warn("host-side edits show up within %g s: cannot start the watch thread: %s",
			 o->view.timeout, strerror(-r));
		watch_free(v.watch);
		v.watch = NULL;
		v.timeout_watched = v.timeout;
	}
	/* No request is served before the loop runs, so the gate may start
	 * this late: its messages then go to the log. */
	stage_sweep(&v, &o->view);
	if ((r = owner_start(owner, lease_lost, NULL, err, sizeof(err))) < 0 ||
	    services_start(&o->view, &v, owner) < 0) {
		log_error("%s",
			  r < 0 ? err : "cannot start the read-before-write gate: out of memory");
		owner_free(owner, true);
		fuse_session_unmount(se);
		fuse_session_destroy(se);
		view_end(&v);
		return 1;
	}
	pthread_sigmask(SIG_SETMASK, &loop_mask, NULL);
	log_info("mounted %s/%s at %s (read-before-write: %s%s)", o->view.user, o->view.thread,
		 o->mountpoint, gate_mode_name((enum gate_mode)o->view.rbw),
		 o->view.rbw_unlink ? ", unlink too" : "");
	_cleanup_(closep) int homefd = home_open(o->view.home);
	if (homefd < 0 || (r = viewreg_add(homefd, o->view.user, o->view.thread, canonical)) < 0)
		log_warn("sbx run cannot find this view (run/mounted): %s",
			 strerror(homefd < 0 ? -homefd : -r));
	r = run_loop(o, se);
	if (owner_lost(owner)) /* at once: the store may not answer the rest */
		fuse_session_unmount(se);
	watch_free(v.watch);
	v.watch = NULL;
	gate_free(v.gate);
	v.gate = NULL;
	store_writer_stop(v.writer);
	v.writer = NULL;
	char lost[320] = "";
	if (owner_lost(owner))
		snprintf(lost, sizeof(lost), "%s", owner_lost(owner));
	owner_free(owner, true); /* after the writer's last rows */
	fuse_session_unmount(se);
	if (homefd >= 0)
		viewreg_remove(homefd, o->view.user, o->view.thread);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	view_end(&v);
	/* libfuse reports the signal that ended the loop as its result. */
	bool clean = !lost[0] && (r == 0 || r == SIGTERM || r == SIGINT || r == SIGHUP);
	log_flush_repeats(); /* what was held back, before the last line */
	if (lost[0])
		log_error("unmounted %s: it lost its thread's lease (%s)", o->mountpoint, lost);
	else
		log_info("unmounted %s (%s)", o->mountpoint, clean ? "clean" : "loop error");
	return clean ? 0 : 1;
}
