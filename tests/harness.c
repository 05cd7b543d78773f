/* harness.c - see harness.h. */
#include "harness.h"
#include "common/control.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

const char *test_dir(const char *tag)
{
	static unsigned seq;
	const char *base = getenv("SBX_TEST_DIR");
	char buf[PATH_MAX];

	if (!base)
		base = "/tmp";
	snprintf(buf, sizeof(buf), "%s/%s.%d.%u", base, tag, (int)getpid(), seq++);
	if (mkdir(buf, 0755) < 0 && errno != EEXIST)
		ck_abort_msg("mkdir %s: %s", buf, strerror(errno));
	return strdup(buf);
}

const char *test_bin(const char *prog)
{
	static char buf[PATH_MAX];
	const char *bin = getenv("SBX_BIN");

	snprintf(buf, sizeof(buf), "%s/%s", bin ? bin : "bin", prog);
	return buf;
}

int tview_mount(struct tview *v, const char *home, const char *user, const char *thread,
		const char *const *extra)
{
	return tview_mount_at(v, test_dir("mnt"), home, user, thread, extra);
}

int tview_mount_at(struct tview *v, const char *mnt, const char *home, const char *user,
		   const char *thread, const char *const *extra)
{
	const char *argv[64];
	int argc = 0, status;
	char sbxfs[PATH_MAX];
	pid_t pid;

	char homebuf[PATH_MAX];

	/* HOME may be V's own home (a remount). */
	snprintf(homebuf, sizeof(homebuf), "%s", home ? home : test_dir("home"));
	if (!home)
		test_home_store(homebuf);
	memset(v, 0, sizeof(*v));
	snprintf(v->home, sizeof(v->home), "%s", homebuf);
	snprintf(v->mnt, sizeof(v->mnt), "%s", mnt);
	snprintf(v->user, sizeof(v->user), "%s", user);
	snprintf(v->thread, sizeof(v->thread), "%s", thread);
	snprintf(sbxfs, sizeof(sbxfs), "%s", test_bin("sbxfs"));
	argv[argc++] = sbxfs;
	argv[argc++] = "--home";
	argv[argc++] = v->home;
	argv[argc++] = "--user";
	argv[argc++] = user;
	argv[argc++] = "--thread";
	argv[argc++] = thread;
	for (int i = 0; extra && extra[i] && argc < 62; i++)
		argv[argc++] = extra[i];
	argv[argc++] = v->mnt;
	argv[argc] = NULL;
	pid = fork();
	if (pid == 0) {
		const char *asan = getenv("SBX_DAEMON_ASAN_OPTIONS");

		if (asan)
			setenv("ASAN_OPTIONS", asan, 1);
		execv(sbxfs, (char *const *)argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	v->mounted = WEXITSTATUS(status) == 0;
	return WEXITSTATUS(status);
}

void tview_sync(const struct tview *v)
{
	char ok[8];

	ck_assert_msg(getxattr(v->mnt, CONTROL_XATTR_SYNC, ok, sizeof(ok)) == 2, "sync of %s: %s",
		      v->mnt, strerror(errno));
}

void tview_umount(struct tview *v)
{
	if (v->mounted)
		sh("fusermount3 -u '%s' 2>/dev/null || umount -l '%s'", v->mnt, v->mnt);
	v->mounted = false;
}

/* How many times the daemon log at PATH says a daemon exited. */
static int exits_logged(const char *path)
{
	char *text = read_file(path);
	int n = 0;

	for (char *p = text; p && (p = strstr(p, "] info: unmounted ")); p++)
		n++;
	free(text);
	return n;
}

int tview_umount_wait(struct tview *v)
{
	char log[PATH_MAX + 256];
	int before;

	snprintf(log, sizeof(log), "%s/log/sbxfs-%s-%s.log", v->home, v->user, v->thread);
	before = exits_logged(log);
	tview_umount(v);
	for (int i = 0; i < 500; i++) {
		if (exits_logged(log) > before)
			return 0;
		usleep(10000);
	}
	return -1;
}

static char *vformat(const char *prefix, const char *fmt, va_list ap)
{
	char rel[PATH_MAX], *out;

	vsnprintf(rel, sizeof(rel), fmt, ap);
	if (asprintf(&out, "%s/%s", prefix, rel) < 0)
		abort();
	return out;
}

char *vpath(const struct tview *v, const char *fmt, ...)
{
	va_list ap;
	char *p;

	va_start(ap, fmt);
	p = vformat(v->mnt, fmt, ap);
	va_end(ap);
	return p;
}

static void host_prefix(const struct tview *v, const char *below, char *buf, size_t size)
{
	snprintf(buf, size, "%s/users/%s/threads/%s%s", v->home, v->user, v->thread, below);
}

char *hpath(const struct tview *v, const char *fmt, ...)
{
	char prefix[PATH_MAX * 2];
	va_list ap;
	char *p;

	host_prefix(v, "", prefix, sizeof(prefix));
	va_start(ap, fmt);
	p = vformat(prefix, fmt, ap);
	va_end(ap);
	return p;
}

char *ws_of(const struct tview *v, const char *fmt, ...)
{
	char prefix[PATH_MAX + 32];
	va_list ap;
	char *p;

	snprintf(prefix, sizeof(prefix), "%s/user-data/workspace", v->mnt);
	va_start(ap, fmt);
	p = vformat(prefix, fmt, ap);
	va_end(ap);
	return p;
}

char *hws_of(const struct tview *v, const char *fmt, ...)
{
	char prefix[PATH_MAX * 2];
	va_list ap;
	char *p;

	host_prefix(v, "/user-data/workspace", prefix, sizeof(prefix));
	va_start(ap, fmt);
	p = vformat(prefix, fmt, ap);
	va_end(ap);
	return p;
}

int sh(const char *fmt, ...)
{
	char *cmd;
	va_list ap;
	int status;

	va_start(ap, fmt);
	if (vasprintf(&cmd, fmt, ap) < 0)
		abort();
	va_end(ap);
	status = system(cmd);
	free(cmd);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* CONTENT into PATH, opened with FLAGS (and O_WRONLY | O_CREAT). */
static int put_file(const char *path, const char *content, int flags)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0644);
	size_t len = strlen(content);

	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, content, len);
	int r = n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r;
}

int write_file(const char *path, const char *content)
{
	return put_file(path, content, O_TRUNC);
}

int append_file(const char *path, const char *content)
{
	return put_file(path, content, O_APPEND);
}

char *read_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *buf;
	ssize_t n;

	if (fd < 0)
		return NULL;
	/* To the end: a /proc file gives a page or so a read. */
	size_t got = 0;
	buf = calloc(1, 1 << 20);
	while (buf && got < (1 << 20) - 1 && (n = read(fd, buf + got, (1 << 20) - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	if (!buf || n < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

bool eventually(bool (*check)(const char *), const char *arg)
{
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (check(arg))
			return true;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (t1.tv_sec - t0.tv_sec > EVENTUALLY_S)
			return check(arg);
		usleep(5000);
	}
}

bool has_exited_pid(const char *arg)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%s/stat", arg);
	char *stat = read_file(path);
	/* "PID (COMM) STATE ...": COMM may hold anything, ')' too */
	char *end = stat ? strrchr(stat, ')') : NULL;
	bool r = !end || end[1] != ' ' || end[2] == 'Z';

	free(stat);
	return r;
}

bool is_listed(const char *arg)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(arg, '/');
	bool found = false;

	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - arg), arg);
	DIR *d = opendir(dir);
	for (struct dirent *de; d && (de = readdir(d));)
		found |= !strcmp(de->d_name, slash + 1);
	if (d)
		closedir(d);
	return found;
}

bool is_unlisted(const char *arg)
{
	return !is_listed(arg);
}

/* ---- PostgreSQL --------------------------------------------------------- */

static char pg_dir[PATH_MAX];
static unsigned pg_users; /* of the server: the last one stops it */

int pg_server_start(void)
{
	const char *base = getenv("SBX_TEST_DIR");

	if (pg_users++)
		return 0;
	/* Not test_dir(): no Check assertion outside a test (main). */
	snprintf(pg_dir, sizeof(pg_dir), "%s/pg.%d", base ? base : "/tmp", (int)getpid());
	if (sh("tests/tools/pgserver start '%s' > /dev/null", pg_dir) == 0)
		return 0;
	pg_users--;
	pg_dir[0] = '\0';
	return -1;
}

void pg_server_up(void)
{
	ck_assert_msg(pg_server_start() == 0, "cannot start a PostgreSQL server");
}

void pg_server_down(void)
{
	if (!pg_users || --pg_users)
		return;
	sh("tests/tools/pgserver stop '%s'", pg_dir);
	pg_dir[0] = '\0';
}

bool pg_mode(void)
{
	const char *mode = getenv("SBX_TEST_STORE");

	return mode && !strcmp(mode, "postgresql");
}

void test_home_store(const char *home)
{
	char conf[PATH_MAX], line[2 * PATH_MAX];

	if (!pg_mode())
		return;
	snprintf(conf, sizeof(conf), "%s/sbx.conf", home);
	snprintf(line, sizeof(line), "store = %s\n", pg_database());
	ck_assert_int_eq(write_file(conf, line), 0);
}

void pg_server_restart(void)
{
	ck_assert_int_eq(sh("tests/tools/pgserver restart '%s'", pg_dir), 0);
}

void pg_server_stop(void)
{
	ck_assert_msg(pg_dir[0], "no PostgreSQL server: pg_server_up() first");
	ck_assert_int_eq(sh("tests/tools/pgserver stop '%s'", pg_dir), 0);
}

void pg_server_signal(const char *sig)
{
	ck_assert_msg(pg_dir[0], "no PostgreSQL server: pg_server_up() first");
	ck_assert_int_eq(
		sh("pm=$(head -1 '%s/data/postmaster.pid') && kill -%s $pm $(pgrep -P $pm)", pg_dir,
		   sig),
		0);
}

const char *pg_database(void)
{
	static unsigned seq;
	static char conninfo[PATH_MAX + 64];
	char name[32];

	ck_assert_msg(pg_dir[0], "no PostgreSQL server: pg_server_up() first");
	snprintf(name, sizeof(name), "t%d_%u", (int)getpid(), seq++);
	ck_assert_int_eq(sh("tests/tools/pgserver db '%s' %s > /dev/null", pg_dir, name), 0);
	snprintf(conninfo, sizeof(conninfo), "host=%s port=5432 user=sbx dbname=%s", pg_dir, name);
	return conninfo;
}
