/* POSIX semantics through the view: every call behaves as on the local
 * disk, both for the caller (return values, errno) and on the host (the
 * bytes and metadata of the backing files). Where the right answer depends
 * on the backing filesystem, the same operation is also done natively in a
 * directory on that filesystem and the outcomes are compared.
 *
 * Three test cases, each with its own view:
 *   posix        a plain view (most tests)
 *   permissions  a view mounted with -o allow_other, used by a child that
 *                drops to uid/gid 65534
 *   enospc       a view with an extra mount on a 1 MiB tmpfs
 */
#include "tests/harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/falloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define WS "user-data/workspace"
#define NOBODY 65534

static struct tview V;		  /* the plain view */
static char native_dir[PATH_MAX]; /* same filesystem as V's backing dirs */

/* ---- helpers ---------------------------------------------------------- */

static const char *ename(int e)
{
	const char *n = e ? strerrorname_np(e) : "no error";

	return n ? n : "unknown errno";
}

/* Asserts that EXPR returns -1 with errno E. */
#define ck_assert_fails(expr, e)                                                                \
	do {                                                                                    \
		errno = 0;                                                                      \
		long r_ = (long)(expr);                                                         \
		int e_ = errno;                                                                 \
		ck_assert_msg(r_ == -1 && e_ == (e), "%s: returned %ld (%s), expected -1 (%s)", \
			      #expr, r_, ename(r_ == -1 ? e_ : 0), ename(e));                   \
	} while (0)

/* Asserts that EXPR returns 0 (prints errno otherwise). */
#define ck_assert_ok(expr)                                                 \
	do {                                                               \
		errno = 0;                                                 \
		long r_ = (long)(expr);                                    \
		ck_assert_msg(r_ == 0, "%s: returned %ld (%s)", #expr, r_, \
			      ename(r_ < 0 ? errno : 0));                  \
	} while (0)

static char *join(const char *prefix, const char *fmt, va_list ap)
{
	char *rel, *out;

	if (vasprintf(&rel, fmt, ap) < 0 || asprintf(&out, "%s/%s", prefix, rel) < 0)
		abort();
	free(rel);
	return out;
}

/* View and host backing paths of REL in the workspace of V (harness.h),
 * and its native path. New heap strings, leaked freely. */
#define ws(...) ws_of(&V, __VA_ARGS__)
#define hws(...) hws_of(&V, __VA_ARGS__)

static __attribute__((format(printf, 1, 2))) char *nat(const char *fmt, ...)
{
	va_list ap;
	char *p;

	va_start(ap, fmt);
	p = join(native_dir, fmt, ap);
	va_end(ap);
	return p;
}

/* Creates or replaces PATH with LEN bytes of DATA. */
static void put(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	ck_assert_msg(fd >= 0, "open %s: %s", path, ename(errno));
	ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
	ck_assert_ok(close(fd));
}

static void put_text(const char *path, const char *text)
{
	put(path, text, strlen(text));
}

/* The whole content of PATH (NUL-terminated too) and its length. */
static char *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);
	ssize_t r;

	ck_assert_msg(fd >= 0, "open %s: %s", path, ename(errno));
	for (;;) {
		if (n == cap)
			buf = realloc(buf, (cap *= 2) + 1);
		r = read(fd, buf + n, cap - n);
		ck_assert_msg(r >= 0, "read %s: %s", path, ename(errno));
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	*len = n;
	return buf;
}

static void assert_bytes(const char *path, const void *want, size_t len)
{
	size_t n;
	char *got = slurp(path, &n);

	ck_assert_msg(n == len, "%s has %zu bytes, expected %zu", path, n, len);
	ck_assert_msg(memcmp(got, want, len) == 0, "%s: content differs", path);
	free(got);
}

#define assert_text(path, text) assert_bytes(path, text, strlen(text))

static struct stat xstat(const char *path)
{
	struct stat st;

	ck_assert_msg(stat(path, &st) == 0, "stat %s: %s", path, ename(errno));
	return st;
}

static struct stat xlstat(const char *path)
{
	struct stat st;

	ck_assert_msg(lstat(path, &st) == 0, "lstat %s: %s", path, ename(errno));
	return st;
}

static bool ts_eq(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

static bool ts_after(struct timespec a, struct timespec b)
{
	return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec);
}

#define ck_assert_ts_eq(a, b)                                                                     \
	ck_assert_msg(ts_eq(a, b), "%s = %lld.%09ld, %s = %lld.%09ld", #a, (long long)(a).tv_sec, \
		      (a).tv_nsec, #b, (long long)(b).tv_sec, (b).tv_nsec)

static void set_times(const char *path, time_t atime, long ansec, time_t mtime, long mnsec)
{
	struct timespec ts[2] = { { atime, ansec }, { mtime, mnsec } };

	ck_assert_ok(utimensat(AT_FDCWD, path, ts, 0));
}

/* Runs FN(ARG) in a child process (killed after 5 s) and returns its exit
 * status, or -1 if it did not exit. */
static int in_child(int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		alarm(5);
		_exit(fn(arg));
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The standard output of "sh -c CMD" (heap string). */
static __attribute__((format(printf, 1, 2))) char *capture(const char *fmt, ...)
{
	char *cmd, *out = calloc(1, 65536);
	size_t n = 0, r;
	va_list ap;
	FILE *f;

	va_start(ap, fmt);
	if (vasprintf(&cmd, fmt, ap) < 0)
		abort();
	va_end(ap);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	while ((r = fread(out + n, 1, 65535 - n, f)) > 0)
		n += r;
	ck_assert_msg(pclose(f) == 0, "'%s' failed", cmd);
	free(cmd);
	return out;
}

static void fill_pattern(char *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (char)((i * 7 + seed) % 251);
}

/* ---- fixture of the plain view ---------------------------------------- */

/* These tests compare the view with native POSIX behaviour, which has no
 * read-before-write rule and writes files in place: the gate and staging
 * are off here (their own suites are view_gate and view_stage; the tools
 * suite runs real programs with both on). */
static const char *const passthrough[] = { "--rbw", "off", "--staging=off", NULL };

static void setup(void)
{
	umask(022);
	snprintf(native_dir, sizeof(native_dir), "%s", test_dir("native"));
	ck_assert_int_eq(tview_mount(&V, NULL, "alice", "posix", passthrough), 0);
}

static void teardown(void)
{
	tview_umount(&V);
}

/* ---- regular files ---------------------------------------------------- */

START_TEST(test_posix_create_makes_an_empty_file_with_the_requested_mode)
{
	struct stat st;
	int fd = open(ws("created"), O_CREAT | O_EXCL | O_WRONLY, 0640);

	ck_assert_int_ge(fd, 0);
	ck_assert_ok(fstat(fd, &st));
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_int_eq(st.st_mode & 07777, 0640);
	ck_assert_int_eq(st.st_size, 0);
	ck_assert_int_eq(st.st_uid, getuid());
	ck_assert_ok(close(fd));
	st = xlstat(hws("created"));
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_int_eq(st.st_mode & 07777, 0640);
	ck_assert_int_eq(st.st_size, 0);
	ck_assert_int_eq(st.st_uid, getuid());
}
END_TEST

START_TEST(test_posix_write_at_offsets_is_read_back_through_view_and_host)
{
	char want[21] = "01234ab789", got[64];
	int fd = open(ws("offsets"), O_CREAT | O_RDWR | O_TRUNC, 0644);

	want[20] = 'Z';
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "0123456789", 10), 10);
	ck_assert_int_eq(lseek(fd, 5, SEEK_SET), 5);
	ck_assert_int_eq(write(fd, "ab", 2), 2);
	ck_assert_int_eq(lseek(fd, 0, SEEK_CUR), 7);
	ck_assert_int_eq(lseek(fd, 20, SEEK_SET), 20);
	ck_assert_int_eq(write(fd, "Z", 1), 1);
	ck_assert_int_eq(lseek(fd, 0, SEEK_END), 21);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	ck_assert_int_eq(read(fd, got, sizeof(got)), 21);
	ck_assert_mem_eq(got, want, 21);
	ck_assert_ok(close(fd));
	assert_bytes(ws("offsets"), want, 21);
	assert_bytes(hws("offsets"), want, 21);
}
END_TEST

START_TEST(test_posix_pread_pwrite_use_their_offset_and_keep_the_file_position)
{
	char want[4101] = { 0 }, got[32];
	int fd = open(ws("pwrite"), O_CREAT | O_RDWR | O_TRUNC, 0644);

	memcpy(want + 4096, "hello", 5);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, "hello", 5, 4096), 5);
	ck_assert_int_eq(lseek(fd, 0, SEEK_CUR), 0);
	ck_assert_int_eq(pread(fd, got, 5, 4096), 5);
	ck_assert_mem_eq(got, "hello", 5);
	ck_assert_int_eq(pread(fd, got, sizeof(got), 4090), 11);
	ck_assert_mem_eq(got, "\0\0\0\0\0\0hello", 11);
	ck_assert_int_eq(pread(fd, got, sizeof(got), 5000), 0);
	ck_assert_int_eq(lseek(fd, 0, SEEK_CUR), 0);
	ck_assert_ok(close(fd));
	ck_assert_int_eq(xstat(ws("pwrite")).st_size, 4101);
	assert_bytes(hws("pwrite"), want, sizeof(want));
}
END_TEST

START_TEST(test_posix_o_append_writes_go_to_the_end_even_with_pwrite)
{
	char *paths[2] = { ws("append"), nat("append") };

	for (int i = 0; i < 2; i++) {
		put_text(paths[i], "abc");
		int fd = open(paths[i], O_WRONLY | O_APPEND);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, "def", 3), 3);
		ck_assert_int_eq(lseek(fd, 0, SEEK_CUR), 6);
		/* Linux appends even with an explicit pwrite offset. */
		ck_assert_int_eq(pwrite(fd, "X", 1, 0), 1);
		ck_assert_ok(close(fd));
		assert_text(paths[i], "abcdefX");
	}
	assert_text(hws("append"), "abcdefX");
}
END_TEST

START_TEST(test_posix_o_trunc_empties_an_existing_file)
{
	struct stat st;
	int fd;

	put_text(ws("otrunc"), "old and longer content");
	fd = open(ws("otrunc"), O_WRONLY | O_TRUNC);
	ck_assert_int_ge(fd, 0);
	ck_assert_ok(fstat(fd, &st));
	ck_assert_int_eq(st.st_size, 0);
	ck_assert_int_eq(xstat(hws("otrunc")).st_size, 0);
	ck_assert_int_eq(write(fd, "new", 3), 3);
	ck_assert_ok(close(fd));
	assert_text(ws("otrunc"), "new");
	assert_text(hws("otrunc"), "new");
}
END_TEST

START_TEST(test_posix_o_excl_on_an_existing_name_fails_with_eexist)
{
	put_text(ws("excl"), "keep");
	ck_assert_fails(open(ws("excl"), O_CREAT | O_EXCL | O_WRONLY, 0644), EEXIST);
	/* O_EXCL does not follow a symlink, not even a dangling one. */
	ck_assert_ok(symlink("excl-target", ws("excl-link")));
	ck_assert_fails(open(ws("excl-link"), O_CREAT | O_EXCL | O_WRONLY, 0644), EEXIST);
	ck_assert(!exists(hws("excl-target")));
	assert_text(ws("excl"), "keep");
	assert_text(hws("excl"), "keep");
}
END_TEST

START_TEST(test_posix_large_write_is_byte_exact_on_host)
{
	size_t len = 3 * 1024 * 1024 + 123;
	char *data = malloc(len);

	fill_pattern(data, len, 3);
	put(ws("large"), data, len);
	assert_bytes(hws("large"), data, len);
	assert_bytes(ws("large"), data, len);
	free(data);
}
END_TEST

/* ---- directories ------------------------------------------------------ */

START_TEST(test_posix_mkdir_and_rmdir_change_the_host_tree)
{
	struct stat st;

	ck_assert_ok(mkdir(ws("made"), 0777));
	st = xlstat(hws("made"));
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(st.st_mode & 07777, 0755); /* umask 022 */
	st = xstat(ws("made"));
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(st.st_mode & 07777, 0755);
	ck_assert_ok(rmdir(ws("made")));
	ck_assert(!exists(hws("made")));
	ck_assert(!exists(ws("made")));
}
END_TEST

START_TEST(test_posix_rmdir_of_a_non_empty_directory_fails_with_enotempty)
{
	ck_assert_ok(mkdir(ws("full-dir"), 0755));
	put_text(ws("full-dir/f"), "x");
	ck_assert_fails(rmdir(ws("full-dir")), ENOTEMPTY);
	ck_assert(exists(ws("full-dir/f")));
	ck_assert(exists(hws("full-dir/f")));
}
END_TEST

START_TEST(test_posix_readdir_lists_every_entry_with_its_type_and_inode)
{
	static const struct {
		const char *name;
		unsigned char type;
	} want[] = {
		{ ".", DT_DIR },   { "..", DT_DIR },   { "file", DT_REG },
		{ "dir", DT_DIR }, { "link", DT_LNK }, { "fifo", DT_FIFO },
	};
	bool seen[6] = { false };
	struct dirent *de;
	DIR *d;
	int n = 0;

	ck_assert_ok(mkdir(ws("ls"), 0755));
	put_text(ws("ls/file"), "f");
	ck_assert_ok(mkdir(ws("ls/dir"), 0755));
	ck_assert_ok(symlink("file", ws("ls/link")));
	ck_assert_ok(mkfifo(ws("ls/fifo"), 0644));
	d = opendir(ws("ls"));
	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d))) {
		size_t i;

		n++;
		for (i = 0; i < 6 && strcmp(want[i].name, de->d_name); i++)
			;
		ck_assert_msg(i < 6, "unexpected entry '%s'", de->d_name);
		ck_assert_msg(!seen[i], "'%s' listed twice", de->d_name);
		seen[i] = true;
		ck_assert_msg(de->d_type == want[i].type, "'%s' has d_type %d, expected %d",
			      de->d_name, de->d_type, want[i].type);
		if (i >= 2)
			ck_assert_msg(de->d_ino == xlstat(hws("ls/%s", de->d_name)).st_ino,
				      "'%s' has d_ino %ju, host st_ino differs", de->d_name,
				      (uintmax_t)de->d_ino);
	}
	closedir(d);
	ck_assert_int_eq(n, 6);
}
END_TEST

START_TEST(test_posix_seekdir_returns_to_the_position_telldir_gave)
{
	enum { N = 300 };
	bool seen[N] = { false };
	struct dirent *de;
	char *next;
	long pos;
	int n = 0, i;
	DIR *d;

	ck_assert_ok(mkdir(ws("many"), 0755));
	for (i = 0; i < N; i++)
		put_text(ws("many/entry-%03d", i), "");
	d = opendir(ws("many"));
	ck_assert_ptr_nonnull(d);
	for (i = 0; i < 150; i++) {
		ck_assert_ptr_nonnull(readdir(d));
		n++;
	}
	pos = telldir(d);
	ck_assert_int_ge(pos, 0);
	de = readdir(d);
	ck_assert_ptr_nonnull(de);
	next = strdup(de->d_name);
	/* Read on to the end: every entry exactly once. */
	rewinddir(d);
	n = 0;
	while ((de = readdir(d))) {
		n++;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		ck_assert_int_eq(sscanf(de->d_name, "entry-%d", &i), 1);
		ck_assert_msg(i >= 0 && i < N && !seen[i], "bad or repeated entry %s", de->d_name);
		seen[i] = true;
	}
	ck_assert_int_eq(n, N + 2);
	seekdir(d, pos);
	de = readdir(d);
	ck_assert_ptr_nonnull(de);
	ck_assert_str_eq(de->d_name, next);
	/* And once more from a fresh stream, seeking before reading. */
	closedir(d);
	d = opendir(ws("many"));
	ck_assert_ptr_nonnull(d);
	seekdir(d, pos);
	de = readdir(d);
	ck_assert_ptr_nonnull(de);
	ck_assert_str_eq(de->d_name, next);
	closedir(d);
}
END_TEST

START_TEST(test_posix_directory_link_count_is_two_plus_subdirectories)
{
	ck_assert_ok(mkdir(ws("nl"), 0755));
	ck_assert_int_eq(xstat(ws("nl")).st_nlink, 2);
	ck_assert_ok(mkdir(ws("nl/a"), 0755));
	ck_assert_ok(mkdir(ws("nl/b"), 0755));
	ck_assert_ok(mkdir(ws("nl/c"), 0755));
	put_text(ws("nl/file"), "files do not count");
	ck_assert_int_eq(xstat(ws("nl")).st_nlink, 5);
	ck_assert_int_eq(xstat(hws("nl")).st_nlink, 5);
	ck_assert_ok(rmdir(ws("nl/c")));
	ck_assert_int_eq(xstat(ws("nl")).st_nlink, 4);
	ck_assert_int_eq(xstat(hws("nl")).st_nlink, 4);
}
END_TEST

/* ---- symlinks --------------------------------------------------------- */

static const char *const link_targets[] = {
	"/etc/hostname", "../../../outside/../x", "does/not/exist",
	"a//b/./c/",	 "with space\tand tab",	  "..",
};

START_TEST(test_posix_readlink_returns_the_target_verbatim)
{
	const char *target = link_targets[_i];
	char buf[PATH_MAX];
	struct stat st;
	ssize_t n;

	ck_assert_ok(symlink(target, ws("link-%d", _i)));
	n = readlink(ws("link-%d", _i), buf, sizeof(buf));
	ck_assert_int_eq(n, (ssize_t)strlen(target));
	ck_assert_mem_eq(buf, target, (size_t)n);
	n = readlink(hws("link-%d", _i), buf, sizeof(buf));
	ck_assert_int_eq(n, (ssize_t)strlen(target));
	ck_assert_mem_eq(buf, target, (size_t)n);
	st = xlstat(ws("link-%d", _i));
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_int_eq(st.st_size, (off_t)strlen(target));
	ck_assert(S_ISLNK(xlstat(hws("link-%d", _i)).st_mode));
}
END_TEST

START_TEST(test_posix_symlink_target_of_4095_bytes_is_kept_verbatim)
{
	char target[PATH_MAX], buf[PATH_MAX + 1];

	for (size_t i = 0; i < PATH_MAX - 1; i++)
		target[i] = i % 2 ? '/' : 'a' + (char)(i % 26);
	target[PATH_MAX - 1] = '\0';
	ck_assert_ok(symlink(target, nat("longlink")));
	ck_assert_ok(symlink(target, ws("longlink")));
	ck_assert_int_eq(readlink(ws("longlink"), buf, sizeof(buf)), PATH_MAX - 1);
	ck_assert_mem_eq(buf, target, PATH_MAX - 1);
	ck_assert_int_eq(readlink(hws("longlink"), buf, sizeof(buf)), PATH_MAX - 1);
	ck_assert_mem_eq(buf, target, PATH_MAX - 1);
}
END_TEST

START_TEST(test_posix_dangling_symlink_is_a_link_whose_target_is_missing)
{
	ck_assert_ok(symlink("nowhere", ws("dangling")));
	ck_assert(S_ISLNK(xlstat(ws("dangling")).st_mode));
	struct stat st;
	ck_assert_fails(stat(ws("dangling"), &st), ENOENT);
	ck_assert_fails(open(ws("dangling"), O_RDONLY), ENOENT);
	ck_assert_fails(open(ws("dangling"), O_RDONLY | O_NOFOLLOW), ELOOP);
	ck_assert(!exists(hws("nowhere")));
}
END_TEST

START_TEST(test_posix_symlink_to_a_host_file_is_followed_by_the_caller)
{
	char buf[64];
	char *native = read_file("/etc/hostname");

	ck_assert_ptr_nonnull(native);
	ck_assert_ok(symlink("/etc/hostname", ws("hostname-link")));
	ck_assert_ok(symlink("/etc", ws("etc-link")));
	/* Opening follows in the caller's namespace: the host's file. */
	ck_assert_str_eq(read_file(ws("hostname-link")), native);
	ck_assert_str_eq(read_file(ws("etc-link/hostname")), native);
	/* But the view itself stores and returns the link, never a copy. */
	ck_assert_int_eq(readlink(ws("hostname-link"), buf, sizeof(buf)), 13);
	ck_assert_mem_eq(buf, "/etc/hostname", 13);
	ck_assert(S_ISLNK(xlstat(ws("etc-link")).st_mode));
	ck_assert(S_ISLNK(xlstat(hws("hostname-link")).st_mode));
	ck_assert(S_ISLNK(xlstat(hws("etc-link")).st_mode));
}
END_TEST

START_TEST(test_posix_relative_symlink_resolves_in_the_view_not_on_the_host)
{
	/* On the host, user-data/secret sits next to workspace; in the view,
	 * user-data is synthetic and has no such entry. Only a daemon that
	 * followed the link on the host would find it. */
	put_text(hpath(&V, "user-data/secret"), "host only");
	ck_assert_ok(symlink("../secret", ws("rel-link")));
	ck_assert_str_eq(read_file(hws("rel-link")), "host only");
	ck_assert_fails(open(ws("rel-link"), O_RDONLY), ENOENT);
	ck_assert(!exists(vpath(&V, "user-data/secret")));
}
END_TEST

/* ---- hard links ------------------------------------------------------- */

START_TEST(test_posix_hard_link_shares_the_inode_and_counts_links)
{
	struct stat a, b, ha, hb;
	int fd;

	put_text(ws("hl-a"), "shared");
	ck_assert_ok(link(ws("hl-a"), ws("hl-b")));
	a = xstat(ws("hl-a"));
	b = xstat(ws("hl-b"));
	ha = xstat(hws("hl-a"));
	hb = xstat(hws("hl-b"));
	ck_assert_int_eq(a.st_ino, b.st_ino);
	ck_assert_int_eq(a.st_ino, ha.st_ino);
	ck_assert_int_eq(ha.st_ino, hb.st_ino);
	ck_assert_int_eq(a.st_nlink, 2);
	ck_assert_int_eq(b.st_nlink, 2);
	ck_assert_int_eq(ha.st_nlink, 2);
	/* A write through one name shows through the other. */
	fd = open(ws("hl-b"), O_WRONLY | O_APPEND);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "+b", 2), 2);
	ck_assert_ok(close(fd));
	assert_text(ws("hl-a"), "shared+b");
	assert_text(hws("hl-a"), "shared+b");
	/* Unlinking one name keeps the other. */
	ck_assert_ok(unlink(ws("hl-a")));
	ck_assert(!exists(ws("hl-a")));
	ck_assert(!exists(hws("hl-a")));
	ck_assert_int_eq(xstat(ws("hl-b")).st_nlink, 1);
	ck_assert_int_eq(xstat(hws("hl-b")).st_nlink, 1);
	ck_assert_int_eq(xstat(ws("hl-b")).st_ino, a.st_ino);
	assert_text(ws("hl-b"), "shared+b");
}
END_TEST

START_TEST(test_posix_hard_link_to_a_symlink_links_the_symlink_itself)
{
	char buf[16];

	put_text(ws("hls-target"), "t");
	ck_assert_ok(symlink("hls-target", ws("hls-link")));
	ck_assert_ok(link(ws("hls-link"), ws("hls-alias")));
	ck_assert(S_ISLNK(xlstat(ws("hls-alias")).st_mode));
	ck_assert(S_ISLNK(xlstat(hws("hls-alias")).st_mode));
	ck_assert_int_eq(xlstat(hws("hls-link")).st_nlink, 2);
	ck_assert_int_eq(xlstat(ws("hls-alias")).st_ino, xlstat(hws("hls-link")).st_ino);
	ck_assert_int_eq(readlink(ws("hls-alias"), buf, sizeof(buf)), 10);
	ck_assert_mem_eq(buf, "hls-target", 10);
	ck_assert_int_eq(xstat(hws("hls-target")).st_nlink, 1);
}
END_TEST

START_TEST(test_posix_hard_link_between_workspace_and_outputs_shares_the_inode)
{
	char *out = vpath(&V, "user-data/outputs/hl-out");

	put_text(ws("hl-ws"), "deliverable");
	ck_assert_ok(link(ws("hl-ws"), out));
	ck_assert_int_eq(xstat(out).st_ino, xstat(ws("hl-ws")).st_ino);
	ck_assert_int_eq(xstat(out).st_nlink, 2);
	ck_assert_int_eq(xstat(hpath(&V, "user-data/outputs/hl-out")).st_ino,
			 xstat(hws("hl-ws")).st_ino);
	assert_text(out, "deliverable");
}
END_TEST

/* ---- rename ----------------------------------------------------------- */

START_TEST(test_posix_rename_moves_a_file_and_keeps_its_inode)
{
	ino_t ino;

	put_text(ws("mv-src"), "moving");
	ino = xstat(ws("mv-src")).st_ino;
	ck_assert_ok(rename(ws("mv-src"), ws("mv-dst")));
	ck_assert(!exists(ws("mv-src")));
	ck_assert(!exists(hws("mv-src")));
	assert_text(ws("mv-dst"), "moving");
	assert_text(hws("mv-dst"), "moving");
	ck_assert_int_eq(xstat(ws("mv-dst")).st_ino, ino);
	ck_assert_int_eq(xstat(hws("mv-dst")).st_ino, ino);
}
END_TEST

START_TEST(test_posix_rename_over_an_existing_file_replaces_it)
{
	ino_t ino;

	put_text(ws("ow-src"), "new");
	put_text(ws("ow-dst"), "old content");
	ino = xstat(ws("ow-src")).st_ino;
	ck_assert_ok(rename(ws("ow-src"), ws("ow-dst")));
	ck_assert(!exists(ws("ow-src")));
	ck_assert(!exists(hws("ow-src")));
	assert_text(ws("ow-dst"), "new");
	assert_text(hws("ow-dst"), "new");
	ck_assert_int_eq(xstat(ws("ow-dst")).st_ino, ino);
	ck_assert_int_eq(xstat(ws("ow-dst")).st_nlink, 1);
}
END_TEST

START_TEST(test_posix_rename_noreplace_refuses_existing_target)
{
	put_text(ws("nr-src"), "source");
	put_text(ws("nr-dst"), "target");
	ck_assert_fails(renameat2(AT_FDCWD, ws("nr-src"), AT_FDCWD, ws("nr-dst"), RENAME_NOREPLACE),
			EEXIST);
	assert_text(ws("nr-src"), "source");
	assert_text(ws("nr-dst"), "target");
	assert_text(hws("nr-src"), "source");
	assert_text(hws("nr-dst"), "target");
	/* To a free name it is a plain rename. */
	ck_assert_ok(renameat2(AT_FDCWD, ws("nr-src"), AT_FDCWD, ws("nr-free"), RENAME_NOREPLACE));
	assert_text(hws("nr-free"), "source");
	ck_assert(!exists(hws("nr-src")));
}
END_TEST

START_TEST(test_posix_rename_exchange_swaps_two_files)
{
	ino_t ia, ib;

	put_text(ws("ex-a"), "content of a");
	ck_assert_ok(mkdir(ws("ex-dir"), 0755));
	put_text(ws("ex-dir/b"), "content of b");
	ia = xstat(ws("ex-a")).st_ino;
	ib = xstat(ws("ex-dir/b")).st_ino;
	ck_assert_ok(renameat2(AT_FDCWD, ws("ex-a"), AT_FDCWD, ws("ex-dir/b"), RENAME_EXCHANGE));
	assert_text(ws("ex-a"), "content of b");
	assert_text(ws("ex-dir/b"), "content of a");
	assert_text(hws("ex-a"), "content of b");
	assert_text(hws("ex-dir/b"), "content of a");
	ck_assert_int_eq(xstat(ws("ex-a")).st_ino, ib);
	ck_assert_int_eq(xstat(ws("ex-dir/b")).st_ino, ia);
	/* Exchanging with a missing name fails and changes nothing. */
	ck_assert_fails(renameat2(AT_FDCWD, ws("ex-a"), AT_FDCWD, ws("ex-none"), RENAME_EXCHANGE),
			ENOENT);
	assert_text(hws("ex-a"), "content of b");
}
END_TEST

START_TEST(test_posix_rename_moves_a_directory_with_its_contents)
{
	ck_assert_ok(mkdir(ws("rd-from"), 0755));
	ck_assert_ok(mkdir(ws("rd-to"), 0755));
	ck_assert_ok(mkdir(ws("rd-from/sub"), 0755));
	put_text(ws("rd-from/sub/file"), "inside");
	ck_assert_int_eq(xstat(ws("rd-from")).st_nlink, 3);
	ck_assert_ok(rename(ws("rd-from/sub"), ws("rd-to/moved")));
	assert_text(ws("rd-to/moved/file"), "inside");
	assert_text(hws("rd-to/moved/file"), "inside");
	ck_assert(!exists(ws("rd-from/sub")));
	ck_assert(!exists(hws("rd-from/sub")));
	/* The parents' link counts follow the subdirectory. */
	ck_assert_int_eq(xstat(ws("rd-from")).st_nlink, 2);
	ck_assert_int_eq(xstat(ws("rd-to")).st_nlink, 3);
	ck_assert_int_eq(xstat(hws("rd-to")).st_nlink, 3);
	/* New files in the moved directory land at its new host place. */
	put_text(ws("rd-to/moved/new"), "after");
	assert_text(hws("rd-to/moved/new"), "after");
}
END_TEST

START_TEST(test_posix_rename_between_workspace_outputs_and_uploads_keeps_the_inode)
{
	char *out = vpath(&V, "user-data/outputs/travel");
	char *up = vpath(&V, "user-data/uploads/travel");
	ino_t ino;

	put_text(ws("travel"), "round trip");
	ino = xstat(ws("travel")).st_ino;
	ck_assert_ok(rename(ws("travel"), out));
	ck_assert(!exists(hws("travel")));
	assert_text(hpath(&V, "user-data/outputs/travel"), "round trip");
	ck_assert_int_eq(xstat(out).st_ino, ino);
	ck_assert_ok(rename(out, up));
	ck_assert(!exists(hpath(&V, "user-data/outputs/travel")));
	assert_text(hpath(&V, "user-data/uploads/travel"), "round trip");
	ck_assert_int_eq(xstat(up).st_ino, ino);
	ck_assert_ok(rename(up, ws("travel-back")));
	assert_text(hws("travel-back"), "round trip");
	ck_assert_int_eq(xstat(hws("travel-back")).st_ino, ino);
	/* Directories travel too. */
	ck_assert_ok(mkdir(ws("dir-travel"), 0755));
	put_text(ws("dir-travel/f"), "in dir");
	ck_assert_ok(rename(ws("dir-travel"), vpath(&V, "user-data/outputs/dir-travel")));
	assert_text(hpath(&V, "user-data/outputs/dir-travel/f"), "in dir");
}
END_TEST

/* ---- open files ------------------------------------------------------- */

START_TEST(test_posix_unlinked_open_file_stays_readable_and_writable)
{
	struct stat st;
	char buf[64];
	int fd = open(ws("unlinked"), O_CREAT | O_RDWR | O_TRUNC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "before", 6), 6);
	ck_assert_ok(unlink(ws("unlinked")));
	ck_assert(!exists(ws("unlinked")));
	ck_assert(!exists(hws("unlinked")));
	ck_assert_int_eq(pwrite(fd, " after", 6, 6), 6);
	ck_assert_int_eq(pread(fd, buf, sizeof(buf), 0), 12);
	ck_assert_mem_eq(buf, "before after", 12);
	ck_assert_ok(fstat(fd, &st));
	ck_assert_int_eq(st.st_nlink, 0);
	ck_assert_int_eq(st.st_size, 12);
	ck_assert_ok(ftruncate(fd, 3));
	ck_assert_ok(fstat(fd, &st));
	ck_assert_int_eq(st.st_size, 3);
	ck_assert_ok(close(fd));
}
END_TEST

/* ---- metadata --------------------------------------------------------- */

START_TEST(test_posix_chmod_sets_the_mode_on_view_and_host)
{
	put_text(ws("mode"), "m");
	ck_assert_ok(chmod(ws("mode"), 0600));
	ck_assert_int_eq(xstat(ws("mode")).st_mode & 07777, 0600);
	ck_assert_int_eq(xstat(hws("mode")).st_mode & 07777, 0600);
	ck_assert_ok(chmod(ws("mode"), 0751));
	ck_assert_int_eq(xstat(ws("mode")).st_mode & 07777, 0751);
	ck_assert_int_eq(xstat(hws("mode")).st_mode & 07777, 0751);
	ck_assert_ok(mkdir(ws("mode-dir"), 0755));
	ck_assert_ok(chmod(ws("mode-dir"), 01777));
	ck_assert_int_eq(xstat(hws("mode-dir")).st_mode & 07777, 01777);
}
END_TEST

/* A file capability (VFS_CAP_REVISION_2, effective, CAP_NET_BIND_SERVICE). */
static const uint32_t file_cap[5] = { 0x02000001, 1u << 10, 0, 0, 0 };

static bool has_file_cap(const char *path)
{
	return getxattr(path, "security.capability", NULL, 0) > 0;
}

START_TEST(test_posix_write_and_truncate_remove_a_file_capability_as_natively)
{
	char *paths[2] = { ws("capped"), nat("capped") };

	for (int i = 0; i < 2; i++) {
		put_text(paths[i], "bin");
		ck_assert_ok(
			setxattr(paths[i], "security.capability", file_cap, sizeof(file_cap), 0));
		ck_assert(has_file_cap(paths[i]));
		int fd = open(paths[i], O_WRONLY | O_APPEND);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, "!", 1), 1);
		ck_assert_ok(close(fd));
		ck_assert(!has_file_cap(paths[i]));
		ck_assert_ok(
			setxattr(paths[i], "security.capability", file_cap, sizeof(file_cap), 0));
		ck_assert_ok(truncate(paths[i], 1));
		ck_assert(!has_file_cap(paths[i]));
	}
	ck_assert(!has_file_cap(hws("capped")));
	assert_text(hws("capped"), "b");
}
END_TEST

START_TEST(test_posix_chmod_keeps_the_setuid_bit_for_root)
{
	int fd;

	put_text(ws("suid"), "#!/bin/sh\n");
	ck_assert_ok(chmod(ws("suid"), 04755));
	ck_assert_int_eq(xstat(ws("suid")).st_mode & 07777, 04755);
	ck_assert_int_eq(xstat(hws("suid")).st_mode & 07777, 04755);
	/* A write by root (CAP_FSETID) keeps it, as natively. */
	put_text(nat("suid"), "#!/bin/sh\n");
	ck_assert_ok(chmod(nat("suid"), 04755));
	char *paths[2] = { ws("suid"), nat("suid") };
	for (int i = 0; i < 2; i++) {
		fd = open(paths[i], O_WRONLY | O_APPEND);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, "true\n", 5), 5);
		ck_assert_ok(close(fd));
	}
	ck_assert_int_eq(xstat(nat("suid")).st_mode & 07777, 04755);
	ck_assert_int_eq(xstat(ws("suid")).st_mode & 07777, 04755);
	ck_assert_int_eq(xstat(hws("suid")).st_mode & 07777, 04755);
}
END_TEST

START_TEST(test_posix_chown_by_root_changes_the_owner_on_host)
{
	struct stat st;

	put_text(ws("owned"), "o");
	ck_assert_ok(chown(ws("owned"), 1234, 5678));
	st = xstat(ws("owned"));
	ck_assert_int_eq(st.st_uid, 1234);
	ck_assert_int_eq(st.st_gid, 5678);
	st = xstat(hws("owned"));
	ck_assert_int_eq(st.st_uid, 1234);
	ck_assert_int_eq(st.st_gid, 5678);
	/* Only the group. */
	ck_assert_ok(chown(ws("owned"), (uid_t)-1, 42));
	st = xstat(hws("owned"));
	ck_assert_int_eq(st.st_uid, 1234);
	ck_assert_int_eq(st.st_gid, 42);
	/* lchown changes the link, not its target. */
	ck_assert_ok(symlink("owned", ws("owned-link")));
	ck_assert_ok(lchown(ws("owned-link"), 777, 888));
	st = xlstat(hws("owned-link"));
	ck_assert_int_eq(st.st_uid, 777);
	ck_assert_int_eq(st.st_gid, 888);
	ck_assert_int_eq(xlstat(ws("owned-link")).st_uid, 777);
	ck_assert_int_eq(xstat(hws("owned")).st_uid, 1234);
}
END_TEST

START_TEST(test_posix_chown_clears_the_setuid_bit_as_natively)
{
	put_text(ws("suid-chown"), "x");
	put_text(nat("suid-chown"), "x");
	ck_assert_ok(chmod(ws("suid-chown"), 06755));
	ck_assert_ok(chmod(nat("suid-chown"), 06755));
	ck_assert_ok(chown(ws("suid-chown"), 1234, 5678));
	ck_assert_ok(chown(nat("suid-chown"), 1234, 5678));
	mode_t native = xstat(nat("suid-chown")).st_mode & 07777;
	ck_assert_int_eq(native, 0755);
	ck_assert_int_eq(xstat(ws("suid-chown")).st_mode & 07777, native);
	ck_assert_int_eq(xstat(hws("suid-chown")).st_mode & 07777, native);
}
END_TEST

START_TEST(test_posix_utimensat_keeps_nanosecond_times)
{
	struct timespec at = { 1000000000, 123456789 }, mt = { 1200000000, 987654321 };
	struct stat st;

	put_text(ws("times"), "t");
	set_times(ws("times"), at.tv_sec, at.tv_nsec, mt.tv_sec, mt.tv_nsec);
	st = xstat(ws("times"));
	ck_assert_ts_eq(st.st_atim, at);
	ck_assert_ts_eq(st.st_mtim, mt);
	st = xstat(hws("times"));
	ck_assert_ts_eq(st.st_atim, at);
	ck_assert_ts_eq(st.st_mtim, mt);
	/* UTIME_OMIT leaves one of them alone. */
	struct timespec ts[2] = { { 0, UTIME_OMIT }, { 1300000000, 1 } };
	ck_assert_ok(utimensat(AT_FDCWD, ws("times"), ts, 0));
	st = xstat(hws("times"));
	ck_assert_ts_eq(st.st_atim, at);
	ck_assert_ts_eq(st.st_mtim, ts[1]);
	ck_assert_ts_eq(xstat(ws("times")).st_mtim, ts[1]);
}
END_TEST

START_TEST(test_posix_utimensat_nofollow_sets_the_times_of_the_link_itself)
{
	struct timespec ts[2] = { { 1000000000, 5 }, { 1100000000, 6 } };
	struct timespec target_mtime;

	put_text(ws("lt-target"), "t");
	ck_assert_ok(symlink("lt-target", ws("lt-link")));
	target_mtime = xstat(hws("lt-target")).st_mtim;
	ck_assert_ok(utimensat(AT_FDCWD, ws("lt-link"), ts, AT_SYMLINK_NOFOLLOW));
	ck_assert_ts_eq(xlstat(hws("lt-link")).st_mtim, ts[1]);
	ck_assert_ts_eq(xlstat(ws("lt-link")).st_mtim, ts[1]);
	ck_assert_ts_eq(xstat(hws("lt-target")).st_mtim, target_mtime);
}
END_TEST

START_TEST(test_posix_futimens_on_an_open_file_sets_its_times)
{
	struct timespec ts[2] = { { 1500000000, 111111111 }, { 1600000000, 222222222 } };
	struct stat st;
	int fd;

	put_text(ws("ftimes"), "f");
	fd = open(ws("ftimes"), O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_ok(futimens(fd, ts));
	ck_assert_ok(fstat(fd, &st));
	ck_assert_ts_eq(st.st_atim, ts[0]);
	ck_assert_ts_eq(st.st_mtim, ts[1]);
	ck_assert_ok(close(fd));
	st = xstat(hws("ftimes"));
	ck_assert_ts_eq(st.st_atim, ts[0]);
	ck_assert_ts_eq(st.st_mtim, ts[1]);
}
END_TEST

START_TEST(test_posix_write_updates_mtime_and_ctime)
{
	struct stat s0, s1, h1;
	int fd;

	put_text(ws("wtimes"), "a");
	set_times(ws("wtimes"), 1000000000, 0, 1000000000, 0);
	s0 = xstat(ws("wtimes"));
	usleep(20000);
	fd = open(ws("wtimes"), O_WRONLY | O_APPEND);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "b", 1), 1);
	ck_assert_ok(close(fd));
	s1 = xstat(ws("wtimes"));
	h1 = xstat(hws("wtimes"));
	ck_assert_int_gt(s1.st_mtim.tv_sec, 1000000000);
	ck_assert(ts_after(s1.st_ctim, s0.st_ctim));
	ck_assert_ts_eq(s1.st_atim, s0.st_atim);
	ck_assert_ts_eq(s1.st_mtim, h1.st_mtim);
	ck_assert_ts_eq(s1.st_ctim, h1.st_ctim);
}
END_TEST

START_TEST(test_posix_chmod_updates_ctime_but_not_mtime)
{
	struct stat s0, s1, h1;

	put_text(ws("ctimes"), "c");
	set_times(ws("ctimes"), 1000000000, 0, 1000000000, 0);
	s0 = xstat(ws("ctimes"));
	usleep(20000);
	ck_assert_ok(chmod(ws("ctimes"), 0600));
	s1 = xstat(ws("ctimes"));
	h1 = xstat(hws("ctimes"));
	ck_assert(ts_after(s1.st_ctim, s0.st_ctim));
	ck_assert_ts_eq(s1.st_mtim, s0.st_mtim);
	ck_assert_ts_eq(s1.st_ctim, h1.st_ctim);
	ck_assert_ts_eq(h1.st_mtim, s0.st_mtim);
}
END_TEST

START_TEST(test_posix_read_updates_atime_as_natively)
{
	char *paths[2] = { nat("atime"), ws("atime") };
	struct stat st[2];

	/* Made on the host, so the first read through the view is the
	 * daemon's, not the page cache's. */
	put_text(hws("atime"), "read me");
	put_text(nat("atime"), "read me");
	set_times(hws("atime"), 1000000000, 0, 1000000000, 0);
	set_times(nat("atime"), 1000000000, 0, 1000000000, 0);
	for (int i = 0; i < 2; i++) {
		ck_assert_str_eq(read_file(paths[i]), "read me");
		st[i] = xstat(paths[i]);
	}
	/* relatime: atime <= mtime, so a read moves it to now. */
	ck_assert_int_gt(st[0].st_atim.tv_sec, 1000000000);
	ck_assert_int_gt(st[1].st_atim.tv_sec, 1000000000);
	ck_assert_ts_eq(st[1].st_atim, xstat(hws("atime")).st_atim);
	ck_assert_int_eq(st[1].st_mtim.tv_sec, 1000000000);
}
END_TEST

START_TEST(test_posix_creating_an_entry_updates_the_directory_times)
{
	struct stat st, hst;

	ck_assert_ok(mkdir(ws("dtimes"), 0755));
	set_times(ws("dtimes"), 1000000000, 0, 1000000000, 0);
	ck_assert_int_eq(xstat(ws("dtimes")).st_mtim.tv_sec, 1000000000);
	put_text(ws("dtimes/new"), "n");
	st = xstat(ws("dtimes"));
	hst = xstat(hws("dtimes"));
	ck_assert_int_gt(st.st_mtim.tv_sec, 1000000000);
	ck_assert_ts_eq(st.st_mtim, hst.st_mtim);
	ck_assert_ts_eq(st.st_ctim, hst.st_ctim);
	set_times(ws("dtimes"), 1000000000, 0, 1000000000, 0);
	ck_assert_ok(unlink(ws("dtimes/new")));
	st = xstat(ws("dtimes"));
	ck_assert_int_gt(st.st_mtim.tv_sec, 1000000000);
	ck_assert_ts_eq(st.st_mtim, xstat(hws("dtimes")).st_mtim);
}
END_TEST

START_TEST(test_posix_rename_updates_the_ctime_of_the_moved_file)
{
	char *paths[2][2] = { { nat("rn-ctime"), nat("rn-ctime2") },
			      { ws("rn-ctime"), ws("rn-ctime2") } };
	struct timespec before[2], after[2];

	for (int i = 0; i < 2; i++) {
		put_text(paths[i][0], "r");
		before[i] = xstat(paths[i][0]).st_ctim;
	}
	usleep(20000);
	for (int i = 0; i < 2; i++) {
		ck_assert_ok(rename(paths[i][0], paths[i][1]));
		after[i] = xstat(paths[i][1]).st_ctim;
	}
	/* Whatever the backing filesystem does, the view shows the same. */
	ck_assert_int_eq(ts_after(after[1], before[1]), ts_after(after[0], before[0]));
	ck_assert_ts_eq(after[1], xstat(hws("rn-ctime2")).st_ctim);
}
END_TEST

START_TEST(test_posix_inode_number_is_stable_and_equals_the_host_one)
{
	ino_t ino;
	int fd;

	put_text(ws("stable"), "v1");
	ino = xstat(ws("stable")).st_ino;
	ck_assert_int_eq(ino, xstat(hws("stable")).st_ino);
	fd = open(ws("stable"), O_WRONLY | O_APPEND);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "+v2", 3), 3);
	ck_assert_ok(close(fd));
	ck_assert_int_eq(xstat(ws("stable")).st_ino, ino);
	put_text(ws("stable"), "rewritten");
	ck_assert_int_eq(xstat(ws("stable")).st_ino, ino);
	ck_assert_ok(rename(ws("stable"), ws("stable-renamed")));
	ck_assert_int_eq(xstat(ws("stable-renamed")).st_ino, ino);
	ck_assert_ok(chmod(ws("stable-renamed"), 0600));
	ck_assert_int_eq(xstat(ws("stable-renamed")).st_ino, ino);
	ck_assert_int_eq(xstat(hws("stable-renamed")).st_ino, ino);
	/* Directories too. */
	ck_assert_ok(mkdir(ws("stable-dir"), 0755));
	ck_assert_int_eq(xstat(ws("stable-dir")).st_ino, xstat(hws("stable-dir")).st_ino);
}
END_TEST

/* ---- size and allocation ---------------------------------------------- */

START_TEST(test_posix_truncate_grows_with_zeros_and_shrinks)
{
	put_text(ws("trunc"), "hello");
	ck_assert_ok(truncate(ws("trunc"), 10));
	ck_assert_int_eq(xstat(ws("trunc")).st_size, 10);
	assert_bytes(ws("trunc"), "hello\0\0\0\0\0", 10);
	assert_bytes(hws("trunc"), "hello\0\0\0\0\0", 10);
	ck_assert_ok(truncate(ws("trunc"), 2));
	ck_assert_int_eq(xstat(ws("trunc")).st_size, 2);
	assert_text(ws("trunc"), "he");
	assert_text(hws("trunc"), "he");
	ck_assert_ok(truncate(ws("trunc"), 0));
	ck_assert_int_eq(xstat(hws("trunc")).st_size, 0);
}
END_TEST

START_TEST(test_posix_ftruncate_grows_with_zeros_and_shrinks)
{
	char buf[32];
	struct stat st;
	int fd = open(ws("ftrunc"), O_CREAT | O_RDWR | O_TRUNC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "hello world", 11), 11);
	ck_assert_ok(ftruncate(fd, 20));
	ck_assert_ok(fstat(fd, &st));
	ck_assert_int_eq(st.st_size, 20);
	ck_assert_int_eq(pread(fd, buf, sizeof(buf), 0), 20);
	ck_assert_mem_eq(buf, "hello world\0\0\0\0\0\0\0\0\0", 20);
	assert_bytes(hws("ftrunc"), "hello world\0\0\0\0\0\0\0\0\0", 20);
	ck_assert_ok(ftruncate(fd, 5));
	ck_assert_int_eq(pread(fd, buf, sizeof(buf), 0), 5);
	ck_assert_mem_eq(buf, "hello", 5);
	ck_assert_ok(close(fd));
	assert_text(hws("ftrunc"), "hello");
}
END_TEST

START_TEST(test_posix_fallocate_allocates_blocks_and_extends_the_size)
{
	struct stat st, hst;
	int fd = open(ws("falloc"), O_CREAT | O_RDWR | O_TRUNC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_ok(fallocate(fd, 0, 0, 1 << 20));
	ck_assert_ok(fstat(fd, &st));
	ck_assert_int_eq(st.st_size, 1 << 20);
	ck_assert_int_ge(st.st_blocks, (1 << 20) / 512);
	hst = xstat(hws("falloc"));
	ck_assert_int_eq(hst.st_size, 1 << 20);
	ck_assert_int_eq(hst.st_blocks, st.st_blocks);
	/* KEEP_SIZE allocates past the end without changing the size. */
	ck_assert_ok(fallocate(fd, FALLOC_FL_KEEP_SIZE, 1 << 20, 1 << 20));
	ck_assert_ok(fstat(fd, &st));
	ck_assert_int_eq(st.st_size, 1 << 20);
	ck_assert_int_ge(st.st_blocks, (2 << 20) / 512);
	ck_assert_int_eq(xstat(hws("falloc")).st_blocks, st.st_blocks);
	ck_assert_int_eq(xstat(ws("falloc")).st_blocks, st.st_blocks);
	ck_assert_ok(close(fd));
}
END_TEST

/* Writes 192 KiB of data to PATH, punches a hole over the middle 64 KiB
 * and reports the fallocate result, SEEK_HOLE from 0 and SEEK_DATA from
 * the hole. */
struct hole_result {
	int falloc_errno;
	off_t hole, data, size;
	char middle[16];
};

static struct hole_result punch(const char *path)
{
	struct hole_result r = { 0 };
	size_t len = 3 * 65536;
	char *data = malloc(len);
	struct stat st;
	int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);

	ck_assert_int_ge(fd, 0);
	memset(data, 'D', len);
	ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
	ck_assert_ok(fsync(fd));
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 65536, 65536) < 0)
		r.falloc_errno = errno;
	r.hole = lseek(fd, 0, SEEK_HOLE);
	r.data = lseek(fd, 65536, SEEK_DATA);
	ck_assert_int_eq(pread(fd, r.middle, sizeof(r.middle), 65536 + 100),
			 (ssize_t)sizeof(r.middle));
	ck_assert_ok(fstat(fd, &st));
	r.size = st.st_size;
	ck_assert_ok(close(fd));
	free(data);
	return r;
}

START_TEST(test_posix_punch_hole_makes_a_hole_seen_by_seek_hole_and_seek_data)
{
	struct hole_result native = punch(nat("holes")), view = punch(ws("holes"));
	static const char zeros[16];

	ck_assert_msg(view.falloc_errno == native.falloc_errno, "punch hole: view %s, native %s",
		      ename(view.falloc_errno), ename(native.falloc_errno));
	ck_assert_int_eq(view.size, 3 * 65536);
	ck_assert_int_eq(view.hole, native.hole);
	ck_assert_int_eq(view.data, native.data);
	if (native.falloc_errno == 0) {
		ck_assert_int_eq(view.hole, 65536);
		ck_assert_int_eq(view.data, 2 * 65536);
		ck_assert_mem_eq(view.middle, zeros, sizeof(zeros));
		ck_assert_int_lt(xstat(hws("holes")).st_blocks, 3 * 65536 / 512);
		char *want = malloc(3 * 65536);
		memset(want, 'D', 3 * 65536);
		memset(want + 65536, 0, 65536);
		assert_bytes(hws("holes"), want, 3 * 65536);
		assert_bytes(ws("holes"), want, 3 * 65536);
		free(want);
	}
}
END_TEST

START_TEST(test_posix_copy_file_range_copies_bytes_between_view_files)
{
	size_t len = 200000, done = 0;
	char *data = malloc(len);
	loff_t in = 1000, out = 0;
	int src, dst;

	fill_pattern(data, len, 11);
	put(ws("cfr-src"), data, len);
	src = open(ws("cfr-src"), O_RDONLY);
	dst = open(ws("cfr-dst"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
	ck_assert_int_ge(src, 0);
	ck_assert_int_ge(dst, 0);
	while (done < 100000) {
		ssize_t n = copy_file_range(src, &in, dst, &out, 100000 - done, 0);
		ck_assert_msg(n > 0, "copy_file_range: %zd (%s)", n, ename(errno));
		done += (size_t)n;
	}
	ck_assert_int_eq(in, 101000);
	ck_assert_int_eq(out, 100000);
	ck_assert_ok(close(src));
	ck_assert_ok(close(dst));
	assert_bytes(ws("cfr-dst"), data + 1000, 100000);
	assert_bytes(hws("cfr-dst"), data + 1000, 100000);
	free(data);
}
END_TEST

/* ---- extended attributes ---------------------------------------------- */

START_TEST(test_posix_user_xattrs_are_set_listed_and_removed_on_the_host)
{
	char buf[256];
	ssize_t n;

	put_text(ws("xa"), "x");
	ck_assert_ok(setxattr(ws("xa"), "user.color", "blue", 4, 0));
	ck_assert_ok(setxattr(ws("xa"), "user.empty", "", 0, 0));
	ck_assert_int_eq(getxattr(ws("xa"), "user.color", buf, sizeof(buf)), 4);
	ck_assert_mem_eq(buf, "blue", 4);
	ck_assert_int_eq(getxattr(ws("xa"), "user.color", NULL, 0), 4);
	ck_assert_int_eq(getxattr(hws("xa"), "user.color", buf, sizeof(buf)), 4);
	ck_assert_mem_eq(buf, "blue", 4);
	ck_assert_int_eq(getxattr(hws("xa"), "user.empty", buf, sizeof(buf)), 0);
	n = listxattr(ws("xa"), buf, sizeof(buf));
	ck_assert_int_eq(n, listxattr(hws("xa"), NULL, 0));
	ck_assert_int_eq(listxattr(ws("xa"), NULL, 0), n);
	bool color = false, empty = false;
	for (char *p = buf; p < buf + n; p += strlen(p) + 1) {
		color |= !strcmp(p, "user.color");
		empty |= !strcmp(p, "user.empty");
	}
	ck_assert(color && empty);
	/* Too small a buffer. */
	ck_assert_fails(getxattr(ws("xa"), "user.color", buf, 2), ERANGE);
	/* Replace, then remove. */
	ck_assert_ok(setxattr(ws("xa"), "user.color", "green", 5, XATTR_REPLACE));
	ck_assert_int_eq(getxattr(hws("xa"), "user.color", buf, sizeof(buf)), 5);
	ck_assert_mem_eq(buf, "green", 5);
	ck_assert_ok(removexattr(ws("xa"), "user.color"));
	ck_assert_fails(getxattr(hws("xa"), "user.color", buf, sizeof(buf)), ENODATA);
	ck_assert_fails(getxattr(ws("xa"), "user.color", buf, sizeof(buf)), ENODATA);
	/* Directories carry them too. */
	ck_assert_ok(mkdir(ws("xa-dir"), 0755));
	ck_assert_ok(setxattr(ws("xa-dir"), "user.d", "1", 1, 0));
	ck_assert_int_eq(getxattr(hws("xa-dir"), "user.d", buf, sizeof(buf)), 1);
}
END_TEST

/* Calls on symlink LINK; returns the results as "r/errno" words. */
static char *symlink_xattr_calls(const char *link)
{
	char buf[256], *out;
	ssize_t r[4];
	int e[4];

	errno = 0;
	r[0] = llistxattr(link, buf, sizeof(buf));
	e[0] = r[0] < 0 ? errno : 0;
	r[1] = lgetxattr(link, "trusted.sbx", buf, sizeof(buf));
	e[1] = r[1] < 0 ? errno : 0;
	r[2] = lsetxattr(link, "trusted.sbx", "v", 1, 0);
	e[2] = r[2] < 0 ? errno : 0;
	r[3] = lgetxattr(link, "user.sbx", buf, sizeof(buf));
	e[3] = r[3] < 0 ? errno : 0;
	if (asprintf(&out,
		     "llistxattr %zd %s, lgetxattr(trusted) %zd %s, "
		     "lsetxattr(trusted) %zd %s, lgetxattr(user) %zd %s",
		     r[0], ename(e[0]), r[1], ename(e[1]), r[2], ename(e[2]), r[3],
		     ename(e[3])) < 0)
		abort();
	return out;
}

START_TEST(test_posix_xattr_calls_on_a_symlink_answer_as_natively)
{
	char *native, *view;

	ck_assert_ok(symlink("target", nat("xa-link")));
	ck_assert_ok(symlink("target", ws("xa-link")));
	native = symlink_xattr_calls(nat("xa-link"));
	view = symlink_xattr_calls(ws("xa-link"));
	ck_assert_msg(!strcmp(view, native), "on a symlink, the view gives\n  %s\nnatively\n  %s",
		      view, native);
}
END_TEST

START_TEST(test_posix_missing_xattr_fails_with_enodata)
{
	char buf[16];

	put_text(ws("xa-missing"), "x");
	ck_assert_fails(getxattr(ws("xa-missing"), "user.none", buf, sizeof(buf)), ENODATA);
	ck_assert_fails(removexattr(ws("xa-missing"), "user.none"), ENODATA);
	ck_assert_fails(setxattr(ws("xa-missing"), "user.none", "v", 1, XATTR_REPLACE), ENODATA);
	ck_assert_ok(setxattr(ws("xa-missing"), "user.once", "v", 1, XATTR_CREATE));
	ck_assert_fails(setxattr(ws("xa-missing"), "user.once", "w", 1, XATTR_CREATE), EEXIST);
	ck_assert_int_eq(getxattr(hws("xa-missing"), "user.once", buf, sizeof(buf)), 1);
	ck_assert_fails(getxattr(hws("xa-missing"), "user.none", buf, sizeof(buf)), ENODATA);
}
END_TEST

START_TEST(test_posix_acl_set_with_setfacl_is_stored_on_the_host)
{
	char *view_acl, *host_acl, raw_view[256], raw_host[256];
	ssize_t nv, nh;

	put_text(ws("acl"), "a");
	ck_assert_int_eq(sh("setfacl -m u:1234:r '%s'", ws("acl")), 0);
	host_acl = capture("getfacl -cnp '%s'", hws("acl"));
	view_acl = capture("getfacl -cnp '%s'", ws("acl"));
	ck_assert_ptr_nonnull(strstr(host_acl, "user:1234:r--"));
	ck_assert_str_eq(view_acl, host_acl);
	nv = getxattr(ws("acl"), "system.posix_acl_access", raw_view, sizeof(raw_view));
	nh = getxattr(hws("acl"), "system.posix_acl_access", raw_host, sizeof(raw_host));
	ck_assert_int_gt(nh, 0);
	ck_assert_int_eq(nv, nh);
	ck_assert_mem_eq(raw_view, raw_host, (size_t)nh);
}
END_TEST

START_TEST(test_posix_acl_set_with_setxattr_is_stored_on_the_host)
{
	/* version 2; USER_OBJ rw, USER 4321 rw, GROUP_OBJ r, MASK rw, OTHER r */
	static const struct {
		uint16_t tag, perm;
		uint32_t id;
	} __attribute__((packed)) e[] = {
		{ 0x01, 6, UINT32_MAX }, { 0x02, 6, 4321 },	  { 0x04, 4, UINT32_MAX },
		{ 0x10, 6, UINT32_MAX }, { 0x20, 4, UINT32_MAX },
	};
	char value[4 + sizeof(e)], got[256];
	uint32_t version = 2;

	memcpy(value, &version, 4);
	memcpy(value + 4, e, sizeof(e));
	put_text(ws("acl-raw"), "a");
	ck_assert_ok(setxattr(ws("acl-raw"), "system.posix_acl_access", value, sizeof(value), 0));
	ck_assert_int_eq(getxattr(hws("acl-raw"), "system.posix_acl_access", got, sizeof(got)),
			 (ssize_t)sizeof(value));
	ck_assert_mem_eq(got, value, sizeof(value));
	ck_assert_ptr_nonnull(
		strstr(capture("getfacl -cnp '%s'", hws("acl-raw")), "user:4321:rw-"));
	/* The mask is the group class of the mode. */
	ck_assert_int_eq(xstat(hws("acl-raw")).st_mode & 0777, 0664);
	ck_assert_ok(removexattr(ws("acl-raw"), "system.posix_acl_access"));
	ck_assert_fails(getxattr(hws("acl-raw"), "system.posix_acl_access", got, sizeof(got)),
			ENODATA);
}
END_TEST

START_TEST(test_posix_default_acl_is_inherited_as_natively)
{
	const char *names[] = { "file", "dir" };
	char *dirs[2] = { nat("dacl"), ws("dacl") };

	for (int i = 0; i < 2; i++) {
		ck_assert_ok(mkdir(dirs[i], 0755));
		ck_assert_int_eq(sh("setfacl -d -m u:1234:rwx '%s'", dirs[i]), 0);
		char *f, *d;
		ck_assert_int_ge(asprintf(&f, "%s/file", dirs[i]), 0);
		ck_assert_int_ge(asprintf(&d, "%s/dir", dirs[i]), 0);
		int fd = open(f, O_CREAT | O_WRONLY, 0666); /* umask 022 */
		ck_assert_int_ge(fd, 0);
		ck_assert_ok(close(fd));
		ck_assert_ok(mkdir(d, 0777));
	}
	for (int j = 0; j < 2; j++) {
		char *native = capture("getfacl -cnp '%s/%s'", dirs[0], names[j]);
		char *host = capture("getfacl -cnp '%s'", hws("dacl/%s", names[j]));

		ck_assert_ptr_nonnull(strstr(native, "user:1234:rwx"));
		ck_assert_msg(!strcmp(host, native),
			      "%s created through the view has ACL\n%s\nnatively\n%s", names[j],
			      host, native);
		ck_assert_int_eq(xstat(hws("dacl/%s", names[j])).st_mode & 07777,
				 xstat(nat("dacl/%s", names[j])).st_mode & 07777);
	}
}
END_TEST

/* ---- locks ------------------------------------------------------------ */

static int child_setlk(void *arg)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int fd = open(arg, O_RDWR);

	if (fd < 0)
		return 100;
	return fcntl(fd, F_SETLK, &fl) == 0 ? 0 : errno;
}

static int child_getlk(void *arg)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int fd = open(arg, O_RDWR);

	if (fd < 0 || fcntl(fd, F_GETLK, &fl) < 0)
		return 100;
	return fl.l_type == F_WRLCK && fl.l_pid == getppid() ? 0 : 101;
}

START_TEST(test_posix_fcntl_lock_held_by_one_process_blocks_another)
{
	char *paths[2] = { nat("plock"), ws("plock") };
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int native_errno = -1;

	for (int i = 0; i < 2; i++) {
		put_text(paths[i], "locked");
		int fd = open(paths[i], O_RDWR);
		ck_assert_int_ge(fd, 0);
		fl.l_type = F_WRLCK;
		ck_assert_ok(fcntl(fd, F_SETLK, &fl));
		int e = in_child(child_setlk, paths[i]);
		if (i == 0)
			native_errno = e;
		ck_assert_msg(e == native_errno && e == EAGAIN, "child's F_SETLK: %s (native %s)",
			      ename(e), ename(native_errno));
		ck_assert_int_eq(in_child(child_getlk, paths[i]), 0);
		fl.l_type = F_UNLCK;
		ck_assert_ok(fcntl(fd, F_SETLK, &fl));
		ck_assert_int_eq(in_child(child_setlk, paths[i]), 0);
		ck_assert_ok(close(fd));
	}
}
END_TEST

START_TEST(test_posix_flock_excludes_another_open_file_description)
{
	int a, b;

	put_text(ws("flock"), "f");
	a = open(ws("flock"), O_RDWR);
	b = open(ws("flock"), O_RDWR);
	ck_assert_int_ge(a, 0);
	ck_assert_int_ge(b, 0);
	ck_assert_ok(flock(a, LOCK_EX | LOCK_NB));
	ck_assert_fails(flock(b, LOCK_EX | LOCK_NB), EWOULDBLOCK);
	ck_assert_fails(flock(b, LOCK_SH | LOCK_NB), EWOULDBLOCK);
	ck_assert_ok(flock(a, LOCK_UN));
	ck_assert_ok(flock(b, LOCK_SH | LOCK_NB));
	ck_assert_ok(flock(a, LOCK_SH | LOCK_NB));
	ck_assert_fails(flock(a, LOCK_EX | LOCK_NB), EWOULDBLOCK);
	ck_assert_ok(close(a));
	ck_assert_ok(close(b));
}
END_TEST

/* ---- filesystem-wide calls -------------------------------------------- */

START_TEST(test_posix_statvfs_reports_the_backing_filesystem)
{
	struct statvfs sv, top, host;

	ck_assert_ok(statvfs(vpath(&V, WS), &sv));
	ck_assert_ok(statvfs(V.mnt, &top));
	ck_assert_ok(statvfs(hpath(&V, WS), &host));
	ck_assert_int_gt(sv.f_bsize, 0);
	ck_assert_int_gt(sv.f_frsize, 0);
	ck_assert_int_gt(sv.f_blocks, 0);
	ck_assert_int_le(sv.f_bfree, sv.f_blocks);
	ck_assert_int_le(sv.f_bavail, sv.f_bfree);
	ck_assert_int_eq((unsigned long long)sv.f_blocks * sv.f_frsize,
			 (unsigned long long)host.f_blocks * host.f_frsize);
	ck_assert_int_eq(sv.f_files, host.f_files);
	ck_assert_int_eq(sv.f_namemax, host.f_namemax);
	ck_assert_int_eq((unsigned long long)top.f_blocks * top.f_frsize,
			 (unsigned long long)host.f_blocks * host.f_frsize);
}
END_TEST

START_TEST(test_posix_fsync_and_fdatasync_succeed_on_files_and_directories)
{
	int fd = open(ws("synced"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
	int dfd = open(vpath(&V, WS), O_RDONLY | O_DIRECTORY);
	int top = open(V.mnt, O_RDONLY | O_DIRECTORY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_ge(dfd, 0);
	ck_assert_int_ge(top, 0);
	ck_assert_int_eq(write(fd, "durable", 7), 7);
	ck_assert_ok(fsync(fd));
	ck_assert_ok(fdatasync(fd));
	ck_assert_ok(fsync(dfd));
	ck_assert_ok(fdatasync(dfd));
	ck_assert_ok(fsync(top));
	ck_assert_ok(syncfs(fd));
	ck_assert_ok(close(fd));
	ck_assert_ok(close(dfd));
	ck_assert_ok(close(top));
	assert_text(hws("synced"), "durable");
}
END_TEST

/* ---- special files ---------------------------------------------------- */

static int fifo_writer(void *arg)
{
	int fd = open(arg, O_WRONLY);

	if (fd < 0)
		return 100;
	if (write(fd, "through the fifo", 16) != 16)
		return 101;
	return close(fd) == 0 ? 0 : 102;
}

START_TEST(test_posix_fifo_carries_bytes_from_a_writer_to_a_reader)
{
	char buf[64];
	size_t n = 0;
	ssize_t r;
	int status, fd;
	pid_t pid;

	ck_assert_ok(mkfifo(ws("fifo"), 0640));
	ck_assert(S_ISFIFO(xlstat(hws("fifo")).st_mode));
	ck_assert_int_eq(xlstat(hws("fifo")).st_mode & 07777, 0640);
	ck_assert(S_ISFIFO(xlstat(ws("fifo")).st_mode));
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		alarm(5);
		_exit(fifo_writer(ws("fifo")));
	}
	fd = open(ws("fifo"), O_RDONLY);
	ck_assert_int_ge(fd, 0);
	while ((r = read(fd, buf + n, sizeof(buf) - n)) > 0)
		n += (size_t)r;
	ck_assert_int_eq(r, 0);
	close(fd);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_eq(n, 16);
	ck_assert_mem_eq(buf, "through the fifo", 16);
}
END_TEST

START_TEST(test_posix_unix_socket_bound_in_the_view_accepts_connections)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char *path = ws("sock"), buf[16];
	int srv, cli, acc;

	ck_assert_msg(strlen(path) < sizeof(sa.sun_path), "socket path too long: %s", path);
	strcpy(sa.sun_path, path);
	srv = socket(AF_UNIX, SOCK_STREAM, 0);
	cli = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_ge(srv, 0);
	ck_assert_int_ge(cli, 0);
	ck_assert_ok(bind(srv, (struct sockaddr *)&sa, sizeof(sa)));
	ck_assert_ok(listen(srv, 1));
	ck_assert(S_ISSOCK(xlstat(hws("sock")).st_mode));
	ck_assert(S_ISSOCK(xlstat(ws("sock")).st_mode));
	ck_assert_ok(connect(cli, (struct sockaddr *)&sa, sizeof(sa)));
	acc = accept(srv, NULL, NULL);
	ck_assert_int_ge(acc, 0);
	ck_assert_int_eq(write(cli, "ping", 4), 4);
	ck_assert_int_eq(read(acc, buf, sizeof(buf)), 4);
	ck_assert_mem_eq(buf, "ping", 4);
	ck_assert_int_eq(write(acc, "pong", 4), 4);
	ck_assert_int_eq(read(cli, buf, sizeof(buf)), 4);
	ck_assert_mem_eq(buf, "pong", 4);
	close(acc);
	close(cli);
	close(srv);
	ck_assert_ok(unlink(path));
	ck_assert(!exists(hws("sock")));
}
END_TEST

/* ---- I/O modes -------------------------------------------------------- */

START_TEST(test_posix_o_direct_aligned_write_lands_on_the_host)
{
	void *wbuf, *rbuf;
	int fd;

	ck_assert_int_eq(posix_memalign(&wbuf, 4096, 8192), 0);
	ck_assert_int_eq(posix_memalign(&rbuf, 4096, 8192), 0);
	fill_pattern(wbuf, 8192, 5);
	memset(rbuf, 0, 8192);
	fd = open(ws("direct-w"), O_CREAT | O_RDWR | O_TRUNC | O_DIRECT, 0644);
	ck_assert_msg(fd >= 0, "open O_DIRECT: %s", ename(errno));
	errno = 0;
	ck_assert_msg(pwrite(fd, wbuf, 4096, 0) == 4096, "pwrite: %s", ename(errno));
	ck_assert_msg(pwrite(fd, (char *)wbuf + 4096, 4096, 4096) == 4096, "pwrite at 4096: %s",
		      ename(errno));
	ck_assert_msg(pread(fd, rbuf, 8192, 0) == 8192, "pread: %s", ename(errno));
	ck_assert_mem_eq(rbuf, wbuf, 8192);
	ck_assert_ok(close(fd));
	assert_bytes(hws("direct-w"), wbuf, 8192);
	assert_bytes(ws("direct-w"), wbuf, 8192);
	free(wbuf);
	free(rbuf);
}
END_TEST

START_TEST(test_posix_o_direct_aligned_read_returns_the_file_content)
{
	char data[8192];
	void *rbuf;
	int fd;

	ck_assert_int_eq(posix_memalign(&rbuf, 4096, 8192), 0);
	memset(rbuf, 0, 8192);
	fill_pattern(data, sizeof(data), 6);
	put(ws("direct-r"), data, sizeof(data));
	fd = open(ws("direct-r"), O_RDONLY | O_DIRECT);
	ck_assert_msg(fd >= 0, "open O_DIRECT: %s", ename(errno));
	errno = 0;
	ck_assert_msg(pread(fd, rbuf, 8192, 0) == 8192, "pread: %s", ename(errno));
	ck_assert_mem_eq(rbuf, data, 8192);
	ck_assert_msg(pread(fd, rbuf, 4096, 4096) == 4096, "pread at 4096: %s", ename(errno));
	ck_assert_mem_eq(rbuf, data + 4096, 4096);
	ck_assert_ok(close(fd));
	free(rbuf);
}
END_TEST

START_TEST(test_posix_mmap_shared_write_reaches_the_host_after_msync)
{
	char data[8192];
	char *p;
	int fd;

	memset(data, 'a', sizeof(data));
	put(ws("mmap-w"), data, sizeof(data));
	fd = open(ws("mmap-w"), O_RDWR);
	ck_assert_int_ge(fd, 0);
	p = mmap(NULL, sizeof(data), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(p, MAP_FAILED);
	memcpy(p + 100, "hello", 5);
	memcpy(p + 5000, "world", 5);
	ck_assert_ok(msync(p, sizeof(data), MS_SYNC));
	memcpy(data + 100, "hello", 5);
	memcpy(data + 5000, "world", 5);
	assert_bytes(hws("mmap-w"), data, sizeof(data));
	ck_assert_ok(munmap(p, sizeof(data)));
	ck_assert_ok(close(fd));
	assert_bytes(ws("mmap-w"), data, sizeof(data));
}
END_TEST

START_TEST(test_posix_mmap_reads_the_file_content)
{
	char data[10000];
	char *p;
	int fd;

	fill_pattern(data, sizeof(data), 9);
	put(ws("mmap-r"), data, sizeof(data));
	fd = open(ws("mmap-r"), O_RDONLY);
	ck_assert_int_ge(fd, 0);
	p = mmap(NULL, sizeof(data), PROT_READ, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(p, MAP_FAILED);
	ck_assert_mem_eq(p, data, sizeof(data));
	ck_assert_ok(munmap(p, sizeof(data)));
	/* A private mapping's writes stay private. */
	p = mmap(NULL, sizeof(data), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	ck_assert_ptr_ne(p, MAP_FAILED);
	memcpy(p, "private", 7);
	ck_assert_ok(munmap(p, sizeof(data)));
	ck_assert_ok(close(fd));
	assert_bytes(hws("mmap-r"), data, sizeof(data));
}
END_TEST

/* ---- deep trees ------------------------------------------------------- */

START_TEST(test_posix_mknod_makes_a_device_node_for_root)
{
	struct stat st;

	ck_assert_ok(mknod(ws("null"), S_IFCHR | 0666, makedev(1, 3)));
	st = xlstat(hws("null"));
	ck_assert(S_ISCHR(st.st_mode));
	ck_assert_int_eq(st.st_rdev, makedev(1, 3));
	ck_assert_int_eq(st.st_mode & 07777, 0644); /* umask 022 */
	st = xlstat(ws("null"));
	ck_assert(S_ISCHR(st.st_mode));
	ck_assert_int_eq(st.st_rdev, makedev(1, 3));
	/* The view is mounted nodev, as FUSE mounts are. */
	ck_assert_fails(open(ws("null"), O_RDONLY), EACCES);
	ck_assert_ok(mknod(ws("plainfile"), S_IFREG | 0600, 0));
	ck_assert(S_ISREG(xlstat(hws("plainfile")).st_mode));
}
END_TEST

START_TEST(test_posix_paths_longer_than_path_max_work_with_directory_fds)
{
	enum { LEVELS = 24, NAME_LEN = 200 };
	char name[NAME_LEN + 1], buf[16];
	int dfd, fd;
	struct stat vst, hst;

	memset(name, 'd', NAME_LEN);
	name[NAME_LEN] = '\0';
	ck_assert_ok(mkdir(ws("deep"), 0755));
	ck_assert_int_gt(strlen(ws("deep")) + LEVELS * (NAME_LEN + 1) + 5, PATH_MAX);
	dfd = open(ws("deep"), O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(dfd, 0);
	for (int i = 0; i < LEVELS; i++) {
		ck_assert_msg(mkdirat(dfd, name, 0755) == 0, "mkdir level %d: %s", i, ename(errno));
		int next = openat(dfd, name, O_RDONLY | O_DIRECTORY);
		ck_assert_msg(next >= 0, "open level %d: %s", i, ename(errno));
		close(dfd);
		dfd = next;
	}
	fd = openat(dfd, "leaf", O_CREAT | O_WRONLY | O_EXCL, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "bottom", 6), 6);
	ck_assert_ok(close(fd));
	ck_assert_ok(fstatat(dfd, "leaf", &vst, 0));
	ck_assert_int_eq(vst.st_size, 6);
	close(dfd);
	/* Walk down on the host, with fds too. */
	dfd = open(hws("deep"), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
	ck_assert_int_ge(dfd, 0);
	for (int i = 0; i < LEVELS; i++) {
		int next = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
		ck_assert_msg(next >= 0, "host level %d: %s", i, ename(errno));
		close(dfd);
		dfd = next;
	}
	fd = openat(dfd, "leaf", O_RDONLY | O_NOFOLLOW);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read(fd, buf, sizeof(buf)), 6);
	ck_assert_mem_eq(buf, "bottom", 6);
	ck_assert_ok(fstat(fd, &hst));
	ck_assert_int_eq(hst.st_ino, vst.st_ino);
	close(fd);
	close(dfd);
}
END_TEST

/* ---- errors ----------------------------------------------------------- */

/* BASE/{file, dir/sub/f, empty/, loop -> loop} */
static void make_tree(const char *base)
{
	char p[PATH_MAX];

	ck_assert_ok(mkdir(base, 0755));
	snprintf(p, sizeof(p), "%s/file", base);
	put_text(p, "content");
	snprintf(p, sizeof(p), "%s/dir", base);
	ck_assert_ok(mkdir(p, 0755));
	snprintf(p, sizeof(p), "%s/dir/sub", base);
	ck_assert_ok(mkdir(p, 0755));
	snprintf(p, sizeof(p), "%s/dir/sub/f", base);
	put_text(p, "f");
	snprintf(p, sizeof(p), "%s/empty", base);
	ck_assert_ok(mkdir(p, 0755));
	snprintf(p, sizeof(p), "%s/loop", base);
	ck_assert_ok(symlink("loop", p));
}

static char *at(const char *base, const char *rel)
{
	char *p;

	if (asprintf(&p, "%s/%s", base, rel) < 0)
		abort();
	return p;
}

/* Returns 0 or the errno of the failed call. */
static int rc(long r)
{
	return r < 0 ? errno : 0;
}

static int fd_rc(int fd)
{
	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static int err_open_missing(const char *b)
{
	return fd_rc(open(at(b, "missing"), O_RDONLY));
}

static int err_mkdir_existing(const char *b)
{
	return rc(mkdir(at(b, "dir"), 0755));
}

static int err_rmdir_file(const char *b)
{
	return rc(rmdir(at(b, "file")));
}

static int err_unlink_dir(const char *b)
{
	return rc(unlink(at(b, "dir")));
}

static int err_open_missing_parent(const char *b)
{
	return fd_rc(open(at(b, "missing/f"), O_CREAT | O_WRONLY, 0644));
}

static int err_open_through_file(const char *b)
{
	return fd_rc(open(at(b, "file/x"), O_RDONLY));
}

static int err_open_dir_for_write(const char *b)
{
	return fd_rc(open(at(b, "dir"), O_WRONLY));
}

static int err_open_file_as_dir(const char *b)
{
	return fd_rc(open(at(b, "file"), O_RDONLY | O_DIRECTORY));
}

static int err_mkdir_over_file(const char *b)
{
	return rc(mkdir(at(b, "file"), 0755));
}

static int err_rmdir_non_empty(const char *b)
{
	return rc(rmdir(at(b, "dir")));
}

static int err_unlink_missing(const char *b)
{
	return rc(unlink(at(b, "missing")));
}

static int err_link_dir(const char *b)
{
	return rc(link(at(b, "dir"), at(b, "dir-link")));
}

static int err_link_onto_existing(const char *b)
{
	return rc(link(at(b, "file"), at(b, "empty")));
}

static int err_rename_dir_into_itself(const char *b)
{
	return rc(rename(at(b, "dir"), at(b, "dir/sub/inside")));
}

static int err_rename_dir_over_non_empty(const char *b)
{
	return rc(rename(at(b, "empty"), at(b, "dir")));
}

static int err_rename_file_over_dir(const char *b)
{
	return rc(rename(at(b, "file"), at(b, "empty")));
}

static int err_rename_dir_over_file(const char *b)
{
	return rc(rename(at(b, "empty"), at(b, "file")));
}

static int err_rename_missing(const char *b)
{
	return rc(rename(at(b, "missing"), at(b, "other")));
}

static int err_name_too_long(const char *b)
{
	char name[NAME_MAX + 2];

	memset(name, 'n', NAME_MAX + 1);
	name[NAME_MAX + 1] = '\0';
	return fd_rc(open(at(b, name), O_CREAT | O_WRONLY, 0644));
}

static int err_symlink_loop(const char *b)
{
	return fd_rc(open(at(b, "loop"), O_RDONLY));
}

static int err_nofollow_on_symlink(const char *b)
{
	return fd_rc(open(at(b, "loop"), O_RDONLY | O_NOFOLLOW));
}

static int err_readlink_of_file(const char *b)
{
	char buf[16];

	return rc(readlink(at(b, "file"), buf, sizeof(buf)));
}

static int err_truncate_dir(const char *b)
{
	return rc(truncate(at(b, "dir"), 0));
}

static int err_symlink_existing(const char *b)
{
	return rc(symlink("x", at(b, "file")));
}

static int err_mkfifo_existing(const char *b)
{
	return rc(mkfifo(at(b, "file"), 0644));
}

static int err_read_a_directory(const char *b)
{
	char buf[16];
	int fd = open(at(b, "dir"), O_RDONLY), e;

	if (fd < 0)
		return 200;
	e = rc(read(fd, buf, sizeof(buf)));
	close(fd);
	return e;
}

static int err_write_read_only_fd(const char *b)
{
	int fd = open(at(b, "file"), O_RDONLY), e;

	if (fd < 0)
		return 200;
	e = rc(write(fd, "x", 1));
	close(fd);
	return e;
}

static int err_ftruncate_read_only_fd(const char *b)
{
	int fd = open(at(b, "file"), O_RDONLY), e;

	if (fd < 0)
		return 200;
	e = rc(ftruncate(fd, 0));
	close(fd);
	return e;
}

static int err_seek_data_past_end(const char *b)
{
	int fd = open(at(b, "file"), O_RDONLY), e;

	if (fd < 0)
		return 200;
	e = rc(lseek(fd, 100, SEEK_DATA));
	close(fd);
	return e;
}

static int err_fallocate_read_only_fd(const char *b)
{
	int fd = open(at(b, "file"), O_RDONLY), e;

	if (fd < 0)
		return 200;
	e = rc(fallocate(fd, 0, 0, 4096));
	close(fd);
	return e;
}

static int err_rmdir_dot(const char *b)
{
	return rc(rmdir(at(b, "empty/.")));
}

static const struct err_case {
	const char *what;
	int (*run)(const char *base);
	int expected;
} err_cases[] = {
	{ "open of a missing file", err_open_missing, ENOENT },
	{ "mkdir of an existing directory", err_mkdir_existing, EEXIST },
	{ "rmdir of a file", err_rmdir_file, ENOTDIR },
	{ "unlink of a directory", err_unlink_dir, EISDIR },
	{ "create under a missing directory", err_open_missing_parent, ENOENT },
	{ "open through a file", err_open_through_file, ENOTDIR },
	{ "open of a directory for writing", err_open_dir_for_write, EISDIR },
	{ "O_DIRECTORY on a file", err_open_file_as_dir, ENOTDIR },
	{ "mkdir over a file", err_mkdir_over_file, EEXIST },
	{ "rmdir of a non-empty directory", err_rmdir_non_empty, ENOTEMPTY },
	{ "unlink of a missing file", err_unlink_missing, ENOENT },
	{ "link to a directory", err_link_dir, EPERM },
	{ "link onto an existing name", err_link_onto_existing, EEXIST },
	{ "rename of a directory into itself", err_rename_dir_into_itself, EINVAL },
	{ "rename of a directory over a non-empty one", err_rename_dir_over_non_empty, ENOTEMPTY },
	{ "rename of a file over a directory", err_rename_file_over_dir, EISDIR },
	{ "rename of a directory over a file", err_rename_dir_over_file, ENOTDIR },
	{ "rename of a missing name", err_rename_missing, ENOENT },
	{ "a 256-byte name", err_name_too_long, ENAMETOOLONG },
	{ "open of a symlink loop", err_symlink_loop, ELOOP },
	{ "O_NOFOLLOW on a symlink", err_nofollow_on_symlink, ELOOP },
	{ "readlink of a file", err_readlink_of_file, EINVAL },
	{ "truncate of a directory", err_truncate_dir, EISDIR },
	{ "symlink over an existing name", err_symlink_existing, EEXIST },
	{ "mkfifo over an existing name", err_mkfifo_existing, EEXIST },
	{ "read of a directory", err_read_a_directory, EISDIR },
	{ "write to a read-only fd", err_write_read_only_fd, EBADF },
	{ "ftruncate of a read-only fd", err_ftruncate_read_only_fd, EINVAL },
	{ "SEEK_DATA past the end", err_seek_data_past_end, ENXIO },
	{ "fallocate on a read-only fd", err_fallocate_read_only_fd, EBADF },
	{ "rmdir of dir/.", err_rmdir_dot, EINVAL },
};

/* Runs error case I on fresh trees in the view and in the native
 * directory and asserts both fail with its errno and change nothing. */
static void check_error_case(int i)
{
	const struct err_case *c = &err_cases[i];
	char *vbase = ws("errors-%d", i), *nbase = nat("errors-%d", i);
	int native, view;

	make_tree(nbase);
	make_tree(vbase);
	native = c->run(nbase);
	view = c->run(vbase);
	ck_assert_msg(native == c->expected, "%s: native gives %s, the test expects %s", c->what,
		      ename(native), ename(c->expected));
	ck_assert_msg(view == native, "%s: the view gives %s, native %s", c->what, ename(view),
		      ename(native));
	/* Nothing changed on the host. */
	assert_text(hws("errors-%d/file", i), "content");
	ck_assert(S_ISDIR(xlstat(hws("errors-%d/dir/sub", i)).st_mode));
	ck_assert(S_ISDIR(xlstat(hws("errors-%d/empty", i)).st_mode));
}

START_TEST(test_posix_open_of_a_missing_file_fails_with_enoent)
{
	check_error_case(0);
}
END_TEST

START_TEST(test_posix_mkdir_of_an_existing_directory_fails_with_eexist)
{
	check_error_case(1);
}
END_TEST

START_TEST(test_posix_rmdir_of_a_file_fails_with_enotdir)
{
	check_error_case(2);
}
END_TEST

START_TEST(test_posix_unlink_of_a_directory_fails_with_eisdir)
{
	check_error_case(3);
}
END_TEST

START_TEST(test_posix_other_errors_reach_the_caller_as_natively)
{
	check_error_case(_i);
}
END_TEST

/* ---- a view other users may enter (-o allow_other) -------------------- */

static struct tview P;

static void setup_allow_other(void)
{
	const char *extra[] = { "-o", "allow_other", "--rbw", "off", "--staging=off", NULL };

	umask(022);
	snprintf(native_dir, sizeof(native_dir), "%s", test_dir("native"));
	ck_assert_int_eq(tview_mount(&P, NULL, "alice", "shared", extra), 0);
	/* The thread directories are 0700; let others traverse the
	 * workspace, natively and through the view alike. */
	ck_assert_ok(chmod(vpath(&P, WS), 0755));
	ck_assert_ok(chmod(native_dir, 0755));
}

static void teardown_allow_other(void)
{
	tview_umount(&P);
}

enum nobody_op { TRY_READ, TRY_WRITE, TRY_TRUNC, TRY_CREATE, TRY_MKDIR, TRY_UNLINK, TRY_APPEND };

struct nobody_try {
	int dirfd; /* opened before dropping privileges */
	const char *name;
	enum nobody_op op;
};

static int nobody_try_fn(void *arg)
{
	const struct nobody_try *t = arg;
	int fd = -1, r = 0;

	if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
		return 120;
	switch (t->op) {
	case TRY_READ:
		fd = openat(t->dirfd, t->name, O_RDONLY);
		break;
	case TRY_WRITE:
		fd = openat(t->dirfd, t->name, O_WRONLY);
		break;
	case TRY_TRUNC:
		fd = openat(t->dirfd, t->name, O_WRONLY | O_TRUNC);
		break;
	case TRY_CREATE:
		fd = openat(t->dirfd, t->name, O_CREAT | O_EXCL | O_WRONLY, 0644);
		break;
	case TRY_MKDIR:
		r = mkdirat(t->dirfd, t->name, 0755);
		break;
	case TRY_UNLINK:
		r = unlinkat(t->dirfd, t->name, 0);
		break;
	case TRY_APPEND:
		fd = openat(t->dirfd, t->name, O_WRONLY | O_APPEND);
		if (fd >= 0 && write(fd, "+", 1) != 1)
			r = -1;
		break;
	}
	if (fd >= 0)
		close(fd);
	if (fd < 0 && (t->op <= TRY_CREATE || t->op == TRY_APPEND))
		return errno;
	return r < 0 ? errno : 0;
}

/* Runs FN(ARG) in a child (in_child()) with *DIRFD, a member of ARG, an
 * fd of directory DIR opened before the child drops privileges. */
static int in_child_at(const char *dir, int *dirfd, int (*fn)(void *), void *arg)
{
	int r;

	*dirfd = open(dir, O_RDONLY | O_DIRECTORY);
	ck_assert_msg(*dirfd >= 0, "open %s: %s", dir, ename(errno));
	r = in_child(fn, arg);
	close(*dirfd);
	return r;
}

/* Does OP on NAME under directory DIR as uid/gid 65534; 0 or its errno. */
static int as_nobody(const char *dir, const char *name, enum nobody_op op)
{
	struct nobody_try t = { -1, name, op };

	return in_child_at(dir, &t.dirfd, nobody_try_fn, &t);
}

#define pws(...) ws_of(&P, __VA_ARGS__)
#define phws(...) hws_of(&P, __VA_ARGS__)

START_TEST(test_posix_write_without_permission_fails_with_eacces)
{
	char *dirs[2] = { nat("acc"), pws("acc") };
	static const struct {
		const char *name;
		enum nobody_op op;
		int expected;
	} tries[] = {
		{ "root-file", TRY_READ, 0 }, /* it can reach the file */
		{ "root-file", TRY_WRITE, EACCES }, { "root-file", TRY_TRUNC, EACCES },
		{ "root-ro", TRY_READ, EACCES },    { "new-file", TRY_CREATE, EACCES },
		{ "new-dir", TRY_MKDIR, EACCES },   { "root-file", TRY_UNLINK, EACCES },
	};

	for (int i = 0; i < 2; i++) {
		char *f, *ro;

		ck_assert_ok(mkdir(dirs[i], 0755));
		ck_assert_int_ge(asprintf(&f, "%s/root-file", dirs[i]), 0);
		ck_assert_int_ge(asprintf(&ro, "%s/root-ro", dirs[i]), 0);
		put_text(f, "root's");
		put_text(ro, "secret");
		ck_assert_ok(chmod(ro, 0400));
	}
	for (size_t j = 0; j < sizeof(tries) / sizeof(tries[0]); j++) {
		int native = as_nobody(dirs[0], tries[j].name, tries[j].op);
		int view = as_nobody(dirs[1], tries[j].name, tries[j].op);

		ck_assert_msg(native == tries[j].expected, "try %zu natively: %s, expected %s", j,
			      ename(native), ename(tries[j].expected));
		ck_assert_msg(view == native, "try %zu on %s: the view gives %s, native %s", j,
			      tries[j].name, ename(view), ename(native));
	}
	assert_text(phws("acc/root-file"), "root's");
	assert_text(phws("acc/root-ro"), "secret");
	ck_assert(!exists(phws("acc/new-file")));
	ck_assert(!exists(phws("acc/new-dir")));
}
END_TEST

START_TEST(test_posix_files_created_by_a_user_belong_to_that_user)
{
	struct stat st;

	ck_assert_ok(mkdir(pws("open"), 0777));
	ck_assert_ok(chmod(pws("open"), 0777));
	ck_assert_int_eq(as_nobody(pws("open"), "mine", TRY_CREATE), 0);
	ck_assert_int_eq(as_nobody(pws("open"), "mydir", TRY_MKDIR), 0);
	st = xlstat(phws("open/mine"));
	ck_assert_int_eq(st.st_uid, NOBODY);
	ck_assert_int_eq(st.st_gid, NOBODY);
	st = xlstat(phws("open/mydir"));
	ck_assert_int_eq(st.st_uid, NOBODY);
	ck_assert_int_eq(st.st_gid, NOBODY);
	st = xstat(pws("open/mine"));
	ck_assert_int_eq(st.st_uid, NOBODY);
	/* Its owner may write it; root's files in the same dir it may not. */
	ck_assert_int_eq(as_nobody(pws("open"), "mine", TRY_WRITE), 0);
	put_text(pws("open/roots"), "r");
	ck_assert_int_eq(as_nobody(pws("open"), "roots", TRY_WRITE), EACCES);
}
END_TEST

START_TEST(test_posix_setgid_directory_gives_new_entries_its_group)
{
	ck_assert_ok(mkdir(pws("sgid"), 0777));
	ck_assert_ok(chown(pws("sgid"), 0, 5678));
	ck_assert_ok(chmod(pws("sgid"), 02777));
	ck_assert_int_eq(xstat(phws("sgid")).st_mode & 07777, 02777);
	ck_assert_int_eq(as_nobody(pws("sgid"), "f", TRY_CREATE), 0);
	ck_assert_int_eq(as_nobody(pws("sgid"), "d", TRY_MKDIR), 0);
	ck_assert_int_eq(xlstat(phws("sgid/f")).st_uid, NOBODY);
	ck_assert_int_eq(xlstat(phws("sgid/f")).st_gid, 5678);
	ck_assert_int_eq(xlstat(phws("sgid/d")).st_gid, 5678);
	ck_assert(xlstat(phws("sgid/d")).st_mode & S_ISGID);
}
END_TEST

START_TEST(test_posix_write_by_a_non_root_owner_clears_setuid)
{
	char *dirs[2] = { nat("suid-user"), pws("suid-user") };
	mode_t mode[2];

	for (int i = 0; i < 2; i++) {
		char *f;

		ck_assert_ok(mkdir(dirs[i], 0755));
		ck_assert_int_ge(asprintf(&f, "%s/prog", dirs[i]), 0);
		put_text(f, "#!/bin/sh\n");
		ck_assert_ok(chown(f, NOBODY, NOBODY));
		ck_assert_ok(chmod(f, 06755));
		ck_assert_int_eq(as_nobody(dirs[i], "prog", TRY_APPEND), 0);
		mode[i] = xstat(f).st_mode & 07777;
	}
	ck_assert_int_eq(mode[0], 0755);
	ck_assert_int_eq(mode[1], mode[0]);
	ck_assert_int_eq(xstat(phws("suid-user/prog")).st_mode & 07777, mode[0]);
	assert_text(phws("suid-user/prog"), "#!/bin/sh\n+");
}
END_TEST

/* Privileged changes follow the caller's own capabilities, on the view
 * as on a local disk: for a user (nobody) and for root without
 * capabilities (a process that dropped them, as the exec sandbox's do). */
enum priv_op {
	P_CHOWN_ROOT,
	P_CHOWN_OTHER,
	P_CHGRP_OTHER,
	P_CHMOD,
	P_SETUID,
	P_SETGID,
	P_UTIMES,
	P_TOUCH,
	P_MKNOD,
	P_APPEND,
	NPRIV
};

struct priv_try {
	int dirfd;
	const char *name;
	enum priv_op op;
	bool root; /* uid 0 without capabilities; else nobody */
};

static int priv_try_fn(void *arg)
{
	const struct priv_try *t = arg;
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct none[2] = { { 0 } };
	struct timespec times[2] = { { 1000, 0 }, { 1000, 0 } };
	int r = 0, fd;

	if (t->root ? syscall(SYS_capset, &hdr, none) < 0
		    : setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
		return 120;
	switch (t->op) {
	case P_CHOWN_ROOT:
		r = fchownat(t->dirfd, t->name, 0, 0, 0);
		break;
	case P_CHOWN_OTHER:
		r = fchownat(t->dirfd, t->name, 4321, -1, 0);
		break;
	case P_CHGRP_OTHER:
		r = fchownat(t->dirfd, t->name, -1, 4321, 0);
		break;
	case P_CHMOD:
		r = fchmodat(t->dirfd, t->name, 0600, 0);
		break;
	case P_SETUID:
		r = fchmodat(t->dirfd, t->name, 04755, 0);
		break;
	case P_SETGID:
		r = fchmodat(t->dirfd, t->name, 02755, 0);
		break;
	case P_UTIMES:
		r = utimensat(t->dirfd, t->name, times, 0);
		break;
	case P_TOUCH:
		r = utimensat(t->dirfd, t->name, NULL, 0);
		break;
	case P_MKNOD:
		r = mknodat(t->dirfd, t->name, S_IFCHR | 0666, makedev(1, 3));
		break;
	case P_APPEND:
		fd = openat(t->dirfd, t->name, O_WRONLY | O_APPEND);
		if (fd < 0 || write(fd, "+", 1) != 1)
			r = -1;
		if (fd >= 0)
			close(fd);
		break;
	default:
		break;
	}
	return r < 0 ? errno : 0;
}

static int priv_try(const char *dir, const char *name, enum priv_op op, bool root)
{
	struct priv_try t = { -1, name, op, root };

	return in_child_at(dir, &t.dirfd, priv_try_fn, &t);
}

START_TEST(test_posix_privileged_changes_follow_the_callers_capabilities)
{
	static const char *const op_names[NPRIV] = {
		"chown to root", "chown to another", "chgrp to another", "chmod",
		"chmod u+s",	 "chmod g+s",	     "utimes",		 "touch",
		"mknod c 1 3",	 "append",
	};
	char *dirs[2] = { nat("priv"), pws("priv") };

	for (int root = 0; root < 2; root++) {
		for (int op = 0; op < NPRIV; op++) {
			int got[2];
			mode_t mode[2] = { 0, 0 };
			uid_t uid[2] = { 0, 0 };
			for (int i = 0; i < 2; i++) {
				char name[32], *f;
				snprintf(name, sizeof(name), "%d-%d", root, op);
				ck_assert_int_ge(asprintf(&f, "%s/%s", dirs[i], name), 0);
				if (op == 0)
					ck_assert(mkdir(dirs[i], 0777) == 0 || errno == EEXIST);
				ck_assert_ok(chmod(dirs[i], 0777));
				if (op != P_MKNOD) {
					put_text(f, "x");
					/* Half the files are the caller's own, half another's. */
					ck_assert_ok(
						chown(f, root ? 0 : NOBODY, root ? 0 : NOBODY));
					ck_assert_ok(chmod(f, op == P_APPEND ? 06755 : 0644));
					if (op == P_CHMOD || op == P_UTIMES)
						ck_assert_ok(chown(f, 4000, 4000));
				}
				got[i] = priv_try(dirs[i], name, (enum priv_op)op, root);
				struct stat st;
				if (lstat(f, &st) == 0) {
					mode[i] = st.st_mode & 07777;
					uid[i] = st.st_uid;
				}
			}
			ck_assert_msg(got[1] == got[0], "%s as %s: the view gives %s, native %s",
				      op_names[op], root ? "root without capabilities" : "nobody",
				      ename(got[1]), ename(got[0]));
			ck_assert_msg(mode[1] == mode[0] && uid[1] == uid[0],
				      "%s as %s: the view leaves %o/%u, native %o/%u", op_names[op],
				      root ? "root without capabilities" : "nobody", mode[1],
				      (unsigned)uid[1], mode[0], (unsigned)uid[0]);
		}
	}
	/* The ones that matter, spelt out. */
	ck_assert_int_eq(priv_try(pws("priv"), "0-0", P_CHOWN_ROOT, false), EPERM);
	ck_assert_int_eq(priv_try(pws("priv"), "1-1", P_CHOWN_OTHER, true), EPERM);
	ck_assert_int_eq(priv_try(pws("priv"), "1-3", P_CHMOD, true), EPERM);
	ck_assert_int_eq(priv_try(pws("priv"), "1-6", P_UTIMES, true), EPERM);
	ck_assert_int_eq(priv_try(pws("priv"), "1-8x", P_MKNOD, true), EPERM);
	ck_assert_int_eq(xstat(phws("priv/1-9")).st_mode & 07777, 0755); /* write cleared */
}
END_TEST

/* The same for a private view (no allow_other) used by its mounting
 * user, root, without capabilities: the daemon is root, the caller is
 * not privileged. */
START_TEST(test_posix_root_without_capabilities_on_a_private_view)
{
	char *dirs[2] = { nat("priv-private"), ws("priv-private") };
	static const enum priv_op ops[] = { P_CHOWN_OTHER, P_CHMOD, P_UTIMES, P_MKNOD, P_APPEND };

	for (size_t k = 0; k < sizeof(ops) / sizeof(*ops); k++) {
		int got[2];
		mode_t mode[2] = { 0, 0 };
		for (int i = 0; i < 2; i++) {
			char name[16], *f;
			snprintf(name, sizeof(name), "f%zu", k);
			ck_assert_int_ge(asprintf(&f, "%s/%s", dirs[i], name), 0);
			if (k == 0)
				ck_assert_ok(mkdir(dirs[i], 0755));
			if (ops[k] != P_MKNOD) {
				put_text(f, "x");
				ck_assert_ok(chmod(f, ops[k] == P_APPEND ? 06755 : 0644));
				if (ops[k] == P_CHMOD || ops[k] == P_UTIMES)
					ck_assert_ok(chown(f, 4000, 4000));
			}
			got[i] = priv_try(dirs[i], name, ops[k], true);
			struct stat st;
			mode[i] = lstat(f, &st) == 0 ? st.st_mode & 07777 : 0;
		}
		ck_assert_msg(got[1] == got[0] && mode[1] == mode[0],
			      "op %d: the view gives %s and %o, native %s and %o", (int)ops[k],
			      ename(got[1]), mode[1], ename(got[0]), mode[0]);
	}
	ck_assert_int_eq(priv_try(ws("priv-private"), "f0", P_CHOWN_OTHER, true), EPERM);
	ck_assert_int_eq(xstat(hws("priv-private/f4")).st_mode & 07777, 0755);
}
END_TEST

START_TEST(test_posix_sticky_directory_keeps_others_from_deleting)
{
	ck_assert_ok(mkdir(pws("sticky"), 0777));
	ck_assert_ok(chmod(pws("sticky"), 01777));
	put_text(pws("sticky/roots"), "r");
	ck_assert_int_eq(as_nobody(pws("sticky"), "roots", TRY_UNLINK), EPERM);
	ck_assert(exists(phws("sticky/roots")));
	ck_assert_int_eq(as_nobody(pws("sticky"), "own", TRY_CREATE), 0);
	ck_assert_int_eq(as_nobody(pws("sticky"), "own", TRY_UNLINK), 0);
	ck_assert(!exists(phws("sticky/own")));
}
END_TEST

/* ---- a full filesystem ------------------------------------------------ */

static struct tview S;
static char small_dir[PATH_MAX];
static bool small_mounted;

static void setup_small(void)
{
	char spec[PATH_MAX + 16];

	umask(022);
	snprintf(small_dir, sizeof(small_dir), "%s", test_dir("small"));
	ck_assert_ok(mount("tmpfs", small_dir, "tmpfs", 0, "size=1m"));
	small_mounted = true;
	snprintf(spec, sizeof(spec), "/mnt/small=%s", small_dir);
	const char *extra[] = { "--mount", spec, "--rbw", "off", "--staging=off", NULL };
	ck_assert_int_eq(tview_mount(&S, NULL, "alice", "full", extra), 0);
}

static void teardown_small(void)
{
	tview_umount(&S);
	/* Lazily: the daemon may still hold the root for a moment. */
	if (small_mounted)
		umount2(small_dir, MNT_DETACH);
	small_mounted = false;
}

/* Seconds until the tmpfs has no block in use (at most LIMIT), or -1. */
static double wait_small_empty(double limit)
{
	struct timespec t0, t1;
	struct statvfs sv;
	double dt;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		ck_assert_ok(statvfs(small_dir, &sv));
		clock_gettime(CLOCK_MONOTONIC, &t1);
		dt = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
		if (sv.f_bfree == sv.f_blocks)
			return dt;
		if (dt > limit)
			return -1;
		usleep(5000);
	}
}

/* Writes up to 4 MiB to PATH; returns the bytes acknowledged and the
 * errno of the failing write and of close (0 if none). */
static size_t fill(const char *path, int *werr, int *cerr)
{
	static char buf[65536];
	size_t total = 0;
	int fd;

	memset(buf, 'x', sizeof(buf));
	*werr = *cerr = 0;
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	ck_assert_msg(fd >= 0, "open %s: %s", path, ename(errno));
	for (int i = 0; i < 64; i++) {
		ssize_t n = write(fd, buf, sizeof(buf));
		if (n < 0) {
			*werr = errno;
			break;
		}
		total += (size_t)n;
	}
	if (close(fd) < 0)
		*cerr = errno;
	return total;
}

START_TEST(test_posix_full_filesystem_fails_writes_with_enospc)
{
	char *path = vpath(&S, "small/fill"), host[PATH_MAX + 8];
	int werr, cerr;
	size_t total;

	ck_assert_msg(wait_small_empty(2) >= 0, "the tmpfs is not empty");
	total = fill(path, &werr, &cerr);
	ck_assert_msg(werr || cerr, "4 MiB written to a 1 MiB filesystem without an error");
	ck_assert_msg(werr == ENOSPC || (werr == 0 && cerr == ENOSPC),
		      "write gave %s, close %s; expected ENOSPC", ename(werr), ename(cerr));
	ck_assert_int_le(total, 1 << 20);
	/* What write() acknowledged is there, nothing more. */
	snprintf(host, sizeof(host), "%s/fill", small_dir);
	ck_assert_int_eq(xstat(host).st_size, (off_t)total);
	ck_assert_int_eq(xstat(path).st_size, (off_t)total);
	ck_assert_ok(unlink(path));
}
END_TEST

START_TEST(test_posix_space_of_a_deleted_file_is_given_back)
{
	char *path = vpath(&S, "small/fill2"), host[PATH_MAX + 8];
	int werr, cerr;
	double dt;

	ck_assert_msg(wait_small_empty(2) >= 0, "the tmpfs is not empty");
	fill(path, &werr, &cerr);
	ck_assert_int_eq(werr ? werr : cerr, ENOSPC);
	ck_assert_ok(unlink(path));
	/* Natively the blocks are free when unlink returns; the view's
	 * daemon lets go of the file when the kernel's release and forget
	 * arrive, which are asynchronous: allow a moment. */
	dt = wait_small_empty(1);
	ck_assert_msg(dt >= 0, "the deleted file's space is still in use after 1 s");
	ck_assert_int_eq(write_file(vpath(&S, "small/after"), "room again"), 0);
	snprintf(host, sizeof(host), "%s/after", small_dir);
	assert_text(host, "room again");
	ck_assert_ok(unlink(vpath(&S, "small/after")));
}
END_TEST

/* ---- the defaults: --rbw enforce, staging on (pjdfstest's cases) ------ */

static void setup_defaults(void)
{
	const char *extra[] = { "-o", "allow_other", NULL };

	umask(022);
	snprintf(native_dir, sizeof(native_dir), "%s", test_dir("native"));
	ck_assert_int_eq(tview_mount(&P, NULL, "alice", "defaults", extra), 0);
	ck_assert_ok(chmod(vpath(&P, WS), 0755));
	ck_assert_ok(chmod(native_dir, 0755));
}

struct write_try {
	int dirfd;
	const char *name;
	int flags;
	uid_t uid;
	gid_t gid;
};

static int write_try_fn(void *arg)
{
	const struct write_try *t = arg;
	struct stat st;

	if (setgroups(0, NULL) < 0 || setgid(t->gid) < 0 || setuid(t->uid) < 0)
		return 120;
	int fd = openat(t->dirfd, t->name, t->flags);
	if (fd < 0 || write(fd, "x", 1) != 1 || fstat(fd, &st) < 0)
		return errno;
	if (close(fd) < 0)
		return errno;
	return 200 + (int)((st.st_mode & 07000) >> 9);
}

/* As UID/GID: opens DIR/NAME with FLAGS, writes "x" at its start and
 * fstat()s it. Returns the errno of what failed, or 200 + the set-id
 * and sticky bits fstat() showed (200: none). */
static int write_try(const char *dir, const char *name, int flags, uid_t uid, gid_t gid)
{
	struct write_try t = { -1, name, flags, uid, gid };

	return in_child_at(dir, &t.dirfd, write_try_fn, &t);
}

/* pjdfstest chmod/12.t: a write by a non-owner clears the set-id bits (it
 * used to be refused, EPERM, as staging cannot make a set-id file). */
START_TEST(test_posix_write_by_a_non_owner_clears_the_set_id_bits)
{
	static const struct {
		mode_t mode;
		int flags;
	} cases[] = {
		{ 04777, O_WRONLY },
		{ 02777, O_RDWR },
		{ 06777, O_RDWR },
	};
	char *dirs[2] = { nat("setid"), pws("setid") };
	char *files[2] = { nat("setid/f"), pws("setid/f") };

	for (int i = 0; i < 2; i++)
		ck_assert_ok(mkdir(dirs[i], 0755));
	for (size_t c = 0; c < sizeof(cases) / sizeof(*cases); c++) {
		int r[2];
		mode_t mode[2];

		for (int i = 0; i < 2; i++) {
			put_text(files[i], "prog");
			ck_assert_ok(chmod(files[i], cases[c].mode));
			r[i] = write_try(dirs[i], "f", cases[c].flags, NOBODY, NOBODY);
			mode[i] = xstat(files[i]).st_mode & 07777;
		}
		ck_assert_msg(r[0] == 200 && r[1] == r[0], "mode %o: native %d, view %d",
			      cases[c].mode, r[0], r[1]);
		ck_assert_int_eq(mode[0], 0777);
		ck_assert_int_eq(mode[1], mode[0]);
		assert_text(phws("setid/f"), "xrog");
		ck_assert_int_eq(xstat(phws("setid/f")).st_mode & 07777, 0777);
		for (int i = 0; i < 2; i++)
			ck_assert_ok(unlink(files[i]));
	}
}
END_TEST

/* pjdfstest open/06.t: a write-open the file's own mode allows needs no
 * write access to the directory (staging needed it, to rename). */
START_TEST(test_posix_write_open_allowed_by_the_mode_needs_no_directory_write)
{
	static const struct {
		mode_t mode;
		uid_t uid;
		gid_t gid;
		int flags;
	} cases[] = {
		{ 0600, NOBODY, NOBODY, O_WRONLY },
		{ 0060, NOBODY - 1, NOBODY, O_RDWR },
		{ 0006, NOBODY - 1, NOBODY - 1, O_WRONLY },
		{ 0277, NOBODY, NOBODY, O_WRONLY },
	};
	char *dirs[2] = { nat("dir06"), pws("dir06") };
	char *files[2] = { nat("dir06/f"), pws("dir06/f") };

	for (int i = 0; i < 2; i++) {
		ck_assert_ok(mkdir(dirs[i], 0755));
		ck_assert_ok(chown(dirs[i], NOBODY, NOBODY));
		put_text(files[i], "v1");
		ck_assert_ok(chown(files[i], NOBODY, NOBODY));
	}
	for (size_t c = 0; c < sizeof(cases) / sizeof(*cases); c++) {
		int r[2];

		for (int i = 0; i < 2; i++) {
			ck_assert_ok(chmod(files[i], cases[c].mode));
			r[i] = write_try(dirs[i], "f", cases[c].flags, cases[c].uid, cases[c].gid);
		}
		ck_assert_msg(r[0] == 200 && r[1] == r[0], "mode %o as %u: native %d, view %d",
			      cases[c].mode, cases[c].uid, r[0], r[1]);
		ck_assert_ok(chmod(files[1], 0644));
		assert_text(phws("dir06/f"), "x1");
	}
}
END_TEST

/* A save is staged (renamed into place) only where its writer may write
 * the directory. Its owner may exactly when the directory's mode lets
 * the owner write (the view answers that from the mode alone): staged
 * (a new inode on the host) in its 0755 directory, in place (the same
 * inode) in its 0555 one. (Not as nobody, whose uid is what stat shows
 * for an unmapped owner.) */
START_TEST(test_posix_a_directory_owner_stages_as_its_mode_says)
{
	const uid_t owner = NOBODY - 1;
	const char *names[2] = { "own-rw", "own-ro" };
	ino_t before[2];

	for (int i = 0; i < 2; i++) {
		char *f = pws("%s/f", names[i]);
		ck_assert_ok(mkdir(pws("%s", names[i]), 0755));
		put_text(f, "v1");
		ck_assert_ok(chown(f, owner, owner));
		ck_assert_ok(chown(pws("%s", names[i]), owner, owner));
		before[i] = xstat(phws("%s/f", names[i])).st_ino;
	}
	ck_assert_ok(chmod(pws("own-ro"), 0555));
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(write_try(pws("%s", names[i]), "f", O_WRONLY, owner, owner), 200);
	ck_assert_int_ne(xstat(phws("own-rw/f")).st_ino, before[0]);
	ck_assert_int_eq(xstat(phws("own-ro/f")).st_ino, before[1]);
	assert_text(phws("own-rw/f"), "x1");
	assert_text(phws("own-ro/f"), "x1");
}
END_TEST

/* The same is refused where the directory is not writable for the
 * caller... only with --staging=strict, which keeps the old rules. */
START_TEST(test_posix_staging_strict_keeps_the_refusals)
{
	struct tview strict;
	const char *extra[] = { "-o", "allow_other", "--staging=strict", NULL };

	ck_assert_int_eq(tview_mount(&strict, NULL, "alice", "strict", extra), 0);
	ck_assert_ok(chmod(vpath(&strict, WS), 0755));
	char *dir = vpath(&strict, WS "/ro"), *f = vpath(&strict, WS "/ro/f");
	char *sf = vpath(&strict, WS "/ro/s");
	ck_assert_ok(mkdir(dir, 0755));
	put_text(f, "root's\n");
	ck_assert_ok(chmod(f, 0666));
	put_text(sf, "prog");
	ck_assert_ok(chmod(sf, 04777));
	int dir_refused = write_try(dir, "f", O_WRONLY, NOBODY, NOBODY);
	int setid_refused = write_try(dir, "s", O_WRONLY, NOBODY, NOBODY);
	char *text = read_file(hpath(&strict, WS "/ro/f"));
	tview_umount(&strict);
	ck_assert_int_eq(dir_refused, EACCES);
	ck_assert_int_eq(setid_refused, EPERM);
	ck_assert_str_eq(text, "root's\n");
}
END_TEST

/* ---- the suite -------------------------------------------------------- */

Suite *suite_view_posix(void)
{
	Suite *s = suite_create("view_posix");
	TCase *tc = tcase_create("posix");
	TCase *perm = tcase_create("permissions");
	TCase *full = tcase_create("enospc");
	TCase *defaults = tcase_create("defaults");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_posix_create_makes_an_empty_file_with_the_requested_mode);
	tcase_add_test(tc, test_posix_write_at_offsets_is_read_back_through_view_and_host);
	tcase_add_test(tc, test_posix_pread_pwrite_use_their_offset_and_keep_the_file_position);
	tcase_add_test(tc, test_posix_o_append_writes_go_to_the_end_even_with_pwrite);
	tcase_add_test(tc, test_posix_o_trunc_empties_an_existing_file);
	tcase_add_test(tc, test_posix_o_excl_on_an_existing_name_fails_with_eexist);
	tcase_add_test(tc, test_posix_large_write_is_byte_exact_on_host);
	tcase_add_test(tc, test_posix_mkdir_and_rmdir_change_the_host_tree);
	tcase_add_test(tc, test_posix_rmdir_of_a_non_empty_directory_fails_with_enotempty);
	tcase_add_test(tc, test_posix_readdir_lists_every_entry_with_its_type_and_inode);
	tcase_add_test(tc, test_posix_seekdir_returns_to_the_position_telldir_gave);
	tcase_add_test(tc, test_posix_directory_link_count_is_two_plus_subdirectories);
	tcase_add_loop_test(tc, test_posix_readlink_returns_the_target_verbatim, 0,
			    sizeof(link_targets) / sizeof(link_targets[0]));
	tcase_add_test(tc, test_posix_symlink_target_of_4095_bytes_is_kept_verbatim);
	tcase_add_test(tc, test_posix_dangling_symlink_is_a_link_whose_target_is_missing);
	tcase_add_test(tc, test_posix_symlink_to_a_host_file_is_followed_by_the_caller);
	tcase_add_test(tc, test_posix_relative_symlink_resolves_in_the_view_not_on_the_host);
	tcase_add_test(tc, test_posix_hard_link_shares_the_inode_and_counts_links);
	tcase_add_test(tc, test_posix_hard_link_to_a_symlink_links_the_symlink_itself);
	tcase_add_test(tc, test_posix_hard_link_between_workspace_and_outputs_shares_the_inode);
	tcase_add_test(tc, test_posix_rename_moves_a_file_and_keeps_its_inode);
	tcase_add_test(tc, test_posix_rename_over_an_existing_file_replaces_it);
	tcase_add_test(tc, test_posix_rename_noreplace_refuses_existing_target);
	tcase_add_test(tc, test_posix_rename_exchange_swaps_two_files);
	tcase_add_test(tc, test_posix_rename_moves_a_directory_with_its_contents);
	tcase_add_test(tc, test_posix_rename_between_workspace_outputs_and_uploads_keeps_the_inode);
	tcase_add_test(tc, test_posix_unlinked_open_file_stays_readable_and_writable);
	tcase_add_test(tc, test_posix_chmod_sets_the_mode_on_view_and_host);
	tcase_add_test(tc, test_posix_chmod_keeps_the_setuid_bit_for_root);
	tcase_add_test(tc, test_posix_write_and_truncate_remove_a_file_capability_as_natively);
	tcase_add_test(tc, test_posix_chown_by_root_changes_the_owner_on_host);
	tcase_add_test(tc, test_posix_chown_clears_the_setuid_bit_as_natively);
	tcase_add_test(tc, test_posix_utimensat_keeps_nanosecond_times);
	tcase_add_test(tc, test_posix_utimensat_nofollow_sets_the_times_of_the_link_itself);
	tcase_add_test(tc, test_posix_futimens_on_an_open_file_sets_its_times);
	tcase_add_test(tc, test_posix_write_updates_mtime_and_ctime);
	tcase_add_test(tc, test_posix_chmod_updates_ctime_but_not_mtime);
	tcase_add_test(tc, test_posix_read_updates_atime_as_natively);
	tcase_add_test(tc, test_posix_creating_an_entry_updates_the_directory_times);
	tcase_add_test(tc, test_posix_rename_updates_the_ctime_of_the_moved_file);
	tcase_add_test(tc, test_posix_inode_number_is_stable_and_equals_the_host_one);
	tcase_add_test(tc, test_posix_truncate_grows_with_zeros_and_shrinks);
	tcase_add_test(tc, test_posix_ftruncate_grows_with_zeros_and_shrinks);
	tcase_add_test(tc, test_posix_fallocate_allocates_blocks_and_extends_the_size);
	tcase_add_test(tc, test_posix_punch_hole_makes_a_hole_seen_by_seek_hole_and_seek_data);
	tcase_add_test(tc, test_posix_copy_file_range_copies_bytes_between_view_files);
	tcase_add_test(tc, test_posix_user_xattrs_are_set_listed_and_removed_on_the_host);
	tcase_add_test(tc, test_posix_xattr_calls_on_a_symlink_answer_as_natively);
	tcase_add_test(tc, test_posix_missing_xattr_fails_with_enodata);
	tcase_add_test(tc, test_posix_acl_set_with_setfacl_is_stored_on_the_host);
	tcase_add_test(tc, test_posix_acl_set_with_setxattr_is_stored_on_the_host);
	tcase_add_test(tc, test_posix_default_acl_is_inherited_as_natively);
	tcase_add_test(tc, test_posix_fcntl_lock_held_by_one_process_blocks_another);
	tcase_add_test(tc, test_posix_flock_excludes_another_open_file_description);
	tcase_add_test(tc, test_posix_statvfs_reports_the_backing_filesystem);
	tcase_add_test(tc, test_posix_fsync_and_fdatasync_succeed_on_files_and_directories);
	tcase_add_test(tc, test_posix_fifo_carries_bytes_from_a_writer_to_a_reader);
	tcase_add_test(tc, test_posix_unix_socket_bound_in_the_view_accepts_connections);
	tcase_add_test(tc, test_posix_o_direct_aligned_write_lands_on_the_host);
	tcase_add_test(tc, test_posix_o_direct_aligned_read_returns_the_file_content);
	tcase_add_test(tc, test_posix_mmap_shared_write_reaches_the_host_after_msync);
	tcase_add_test(tc, test_posix_mmap_reads_the_file_content);
	tcase_add_test(tc, test_posix_mknod_makes_a_device_node_for_root);
	tcase_add_test(tc, test_posix_paths_longer_than_path_max_work_with_directory_fds);
	tcase_add_test(tc, test_posix_open_of_a_missing_file_fails_with_enoent);
	tcase_add_test(tc, test_posix_mkdir_of_an_existing_directory_fails_with_eexist);
	tcase_add_test(tc, test_posix_rmdir_of_a_file_fails_with_enotdir);
	tcase_add_test(tc, test_posix_unlink_of_a_directory_fails_with_eisdir);
	tcase_add_loop_test(tc, test_posix_other_errors_reach_the_caller_as_natively, 4,
			    sizeof(err_cases) / sizeof(err_cases[0]));
	suite_add_tcase(s, tc);

	tcase_add_test(tc, test_posix_root_without_capabilities_on_a_private_view);
	tcase_add_unchecked_fixture(perm, setup_allow_other, teardown_allow_other);
	tcase_add_test(perm, test_posix_write_without_permission_fails_with_eacces);
	tcase_add_test(perm, test_posix_files_created_by_a_user_belong_to_that_user);
	tcase_add_test(perm, test_posix_setgid_directory_gives_new_entries_its_group);
	tcase_add_test(perm, test_posix_write_by_a_non_root_owner_clears_setuid);
	tcase_add_test(perm, test_posix_privileged_changes_follow_the_callers_capabilities);
	tcase_add_test(perm, test_posix_sticky_directory_keeps_others_from_deleting);
	suite_add_tcase(s, perm);

	tcase_add_unchecked_fixture(defaults, setup_defaults, teardown_allow_other);
	tcase_add_test(defaults, test_posix_write_by_a_non_owner_clears_the_set_id_bits);
	tcase_add_test(defaults,
		       test_posix_write_open_allowed_by_the_mode_needs_no_directory_write);
	tcase_add_test(defaults, test_posix_a_directory_owner_stages_as_its_mode_says);
	tcase_add_test(defaults, test_posix_staging_strict_keeps_the_refusals);
	suite_add_tcase(s, defaults);

	tcase_add_unchecked_fixture(full, setup_small, teardown_small);
	tcase_add_test(full, test_posix_full_filesystem_fails_writes_with_enospc);
	tcase_add_test(full, test_posix_space_of_a_deleted_file_is_given_back);
	suite_add_tcase(s, full);
	return s;
}
