/* cmd.c - see cmd.h. */
#include "cmd.h"

#include <stdarg.h>
#include <stdio.h>
#include <sys/wait.h>

char *fmt_cmd(const char *fmt, ...)
{
	va_list ap;
	char *cmd;

	va_start(ap, fmt);
	if (vasprintf(&cmd, fmt, ap) < 0)
		abort();
	va_end(ap);
	return cmd;
}

/* Runs "sh -c CMD"; returns its standard output (stderr passes through)
 * and stores its exit status (-1 if it did not exit) in *status. */
char *capture(const char *cmd, int *status)
{
	FILE *p = popen(cmd, "r");
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	size_t n;
	int st;

	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(buf);
	while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (cap - len < 2) {
			cap *= 2;
			buf = realloc(buf, cap);
			ck_assert_ptr_nonnull(buf);
		}
	}
	buf[len] = '\0';
	st = pclose(p);
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return buf;
}

/* "diff -u" of two texts, at most about 3 KB of it (Check's messages
 * are bounded). */
char *text_diff(const char *got, const char *want)
{
	char *dir = strdup(test_dir("diff"));
	char a[PATH_MAX + 8], b[PATH_MAX + 8];
	char *cmd, *out;
	int st;

	snprintf(a, sizeof(a), "%s/want", dir);
	snprintf(b, sizeof(b), "%s/got", dir);
	ck_assert_int_eq(write_file(a, want), 0);
	ck_assert_int_eq(write_file(b, got), 0);
	if (asprintf(&cmd, "cd '%s' && diff -u want got | head -c 3000; rm -rf '%s'", dir, dir) < 0)
		abort();
	out = capture(cmd, &st);
	free(cmd);
	free(dir);
	return out;
}

const char *broker_start(const char *tag, const char *conf)
{
	const char *home = test_dir(tag);

	test_home_store(home);
	if (conf)
		ck_assert_int_eq(append_file(fmt_cmd("%s/sbx.conf", home), conf), 0);
	OK("'%s' broker --home '%s' >/dev/null", test_bin("sbx"), home);
	return home;
}

void broker_stop(const char *home)
{
	sh("'%s' broker --home '%s' --shutdown >/dev/null 2>&1", test_bin("sbx"), home);
}

void tool_env(void)
{
	setenv("LC_ALL", "C", 1);
	unsetenv("PYTHONDONTWRITEBYTECODE");
	setenv("TZ", "UTC", 1);
	setenv("HOME", test_dir("tool-home"), 1);
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
	setenv("GIT_CONFIG_GLOBAL", "/dev/null", 1);
	setenv("GIT_AUTHOR_NAME", "Tools Test", 1);
	setenv("GIT_AUTHOR_EMAIL", "tools@example.com", 1);
	setenv("GIT_COMMITTER_NAME", "Tools Test", 1);
	setenv("GIT_COMMITTER_EMAIL", "tools@example.com", 1);
}

const char *killshim(void)
{
	const char *so = fmt_cmd("%s/killshim.so", test_dir("shim"));

	OK("cc -shared -fPIC -o '%s' tests/tools/killshim.c -ldl", so);
	return so;
}
