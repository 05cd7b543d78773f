/* The locking rules of common/lockcheck.h: a SANITIZE=1 build aborts on a
 * broken one, with a message naming it; a release build checks nothing. */
#include "common/lockcheck.h"
#include "tests/harness.h"

#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum step { TAKE_STAGE, TAKE_GATE, DROP_STAGE, DROP_GATE, ASSERT_STAGE, END };

/* Runs STEPS in a child; returns its stderr, and in *ABORTED whether it
 * was killed by SIGABRT. */
static char *run_steps(const enum step *steps, bool *aborted)
{
	static char buf[256];
	int pipefd[2], st;

	ck_assert_int_eq(pipe(pipefd), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(pipefd[1], STDERR_FILENO);
		for (; *steps != END; steps++) {
			switch (*steps) {
			case TAKE_STAGE:
				lock_check_take(LOCK_STAGE);
				break;
			case TAKE_GATE:
				lock_check_take(LOCK_GATE);
				break;
			case DROP_STAGE:
				lock_check_drop(LOCK_STAGE);
				break;
			case DROP_GATE:
				lock_check_drop(LOCK_GATE);
				break;
			case ASSERT_STAGE:
				assert_held(LOCK_STAGE);
				break;
			case END:
				break;
			}
		}
		_exit(0);
	}
	close(pipefd[1]);
	ssize_t n = read(pipefd[0], buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(pipefd[0]);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	*aborted = WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT;
	ck_assert_msg(*aborted || (WIFEXITED(st) && WEXITSTATUS(st) == 0), "status %d", st);
	return buf;
}

#ifdef SBX_LOCK_CHECKS
static void assert_broken(const enum step *steps, const char *message)
{
	bool aborted;
	char *err = run_steps(steps, &aborted);

	ck_assert_msg(aborted && strstr(err, message), "aborted %d, stderr: %s", aborted, err);
}

START_TEST(test_lockcheck_finds_broken_rules)
{
	/* The documented order, then nothing held: fine. */
	const enum step fine[] = { TAKE_STAGE, ASSERT_STAGE, TAKE_GATE, DROP_GATE,
				   DROP_STAGE, TAKE_GATE,    DROP_GATE, END };
	bool aborted;
	char *err = run_steps(fine, &aborted);
	ck_assert_msg(!aborted, "%s", err);

	assert_broken((const enum step[]){ TAKE_GATE, TAKE_GATE, END },
		      "lock rule broken: more held at once than allowed (gate lock)");
	assert_broken(
		(const enum step[]){ TAKE_GATE, TAKE_STAGE, END },
		"lock rule broken: taken while a lock that comes after it is held (stage lock)");
	assert_broken((const enum step[]){ DROP_GATE, END },
		      "lock rule broken: dropped but not held (gate lock)");
	assert_broken((const enum step[]){ TAKE_STAGE, DROP_STAGE, ASSERT_STAGE, END },
		      "run_steps needs its stage lock held");
}
END_TEST
#else
START_TEST(test_lockcheck_checks_nothing_in_a_release_build)
{
	const enum step broken[] = { TAKE_GATE, TAKE_GATE, TAKE_STAGE, ASSERT_STAGE, END };
	bool aborted;
	char *err = run_steps(broken, &aborted);

	ck_assert_msg(!aborted && !*err, "%s", err);
}
END_TEST
#endif

Suite *suite_unit_lockcheck(void)
{
	Suite *s = suite_create("unit_lockcheck");
	TCase *tc = tcase_create("lockcheck");

#ifdef SBX_LOCK_CHECKS
	tcase_add_test(tc, test_lockcheck_finds_broken_rules);
#else
	tcase_add_test(tc, test_lockcheck_checks_nothing_in_a_release_build);
#endif
	suite_add_tcase(s, tc);
	return s;
}
