/* The fd ownership rule (common/cleanup.h) and the double-close check
 * (common/fdcheck.c). */
#include "common/cleanup.h"
#include "tests/harness.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* closep marks the fd closed, so the owner's cleanup does not close the
 * number again (by then maybe another thread's fd). */
START_TEST(test_cleanup_closep_marks_the_fd_closed)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	closep(&fd);
	ck_assert_int_eq(fd, -1);
	closep(&fd); /* nothing: -1 is "none" */
	ck_assert_int_eq(fd, -1);
}
END_TEST

/* A second close of a number is reported on stderr; a SANITIZE=1 build
 * aborts. close(-1) is not reported. */
START_TEST(test_cleanup_a_double_close_is_reported)
{
	int pipefd[2];

	ck_assert_int_eq(pipe(pipefd), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(pipefd[1], STDERR_FILENO);
		close(-1);
		int fd = open("/dev/null", O_RDONLY);
		close(fd);
		close(fd);
		_exit(0);
	}
	close(pipefd[1]);
	char buf[256] = "";
	ssize_t n = read(pipefd[0], buf, sizeof(buf) - 1);
	close(pipefd[0]);
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(n > 0 && strstr(buf, "sbx: BUG: close(") &&
			      strstr(buf, ") of a descriptor that is not open (closed twice?)\n") &&
			      !strstr(buf, "close(-1)"),
		      "stderr: %s", buf);
#ifdef SBX_ABORT_ON_BAD_CLOSE
	ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
#else
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
#endif
}
END_TEST

Suite *suite_unit_cleanup(void)
{
	Suite *s = suite_create("unit_cleanup");
	TCase *tc = tcase_create("cleanup");

	tcase_add_test(tc, test_cleanup_closep_marks_the_fd_closed);
	tcase_add_test(tc, test_cleanup_a_double_close_is_reported);
	suite_add_tcase(s, tc);
	return s;
}
