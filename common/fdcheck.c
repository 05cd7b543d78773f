/* fdcheck.c - the double-close check (see cleanup.h).
 *
 * Every close(2) in our code is linked to __wrap_close (the linker's
 * --wrap=close). A close that fails with EBADF closed a number nobody
 * owned: a second close of the same fd, which in a threaded daemon can
 * just as well close another thread's newly opened fd (an inode's, a
 * stage's, SQLite's WAL). It is reported on stderr in every build, and
 * a SANITIZE=1 build aborts, so the tests catch the next one. The
 * report is async-signal-safe: close() runs between fork and exec too.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int __real_close(int fd);
int __wrap_close(int fd);

static void report_bad_close(int fd)
{
	static const char head[] = "sbx: BUG: close(";
	static const char tail[] = ") of a descriptor that is not open (closed twice?)\n";
	char buf[sizeof(head) + sizeof(tail) + 12], digits[12];
	size_t n = sizeof(head) - 1, d = 0;
	unsigned v = (unsigned)fd;

	memcpy(buf, head, n);
	do
		digits[d++] = (char)('0' + v % 10);
	while ((v /= 10) && d < sizeof(digits));
	while (d)
		buf[n++] = digits[--d];
	memcpy(buf + n, tail, sizeof(tail) - 1);
	n += sizeof(tail) - 1;
	(void)!write(STDERR_FILENO, buf, n);
#ifdef SBX_ABORT_ON_BAD_CLOSE
	abort();
#endif
}

int __wrap_close(int fd)
{
	int r = __real_close(fd);

	if (r < 0 && errno == EBADF && fd >= 0) { /* -1 is "none", not a number */
		report_bad_close(fd);
		errno = EBADF;
	}
	return r;
}
