/* sbx.c - the sbx command: option handling shared by every subcommand,
 * mount and umount (the other commands live in cli/NAME.c, see cli.h).
 *
 * Errors go to stderr as "sbx: <what failed>: <why>"; exit status 2 for
 * usage errors, 1 for failures.
 */
#include "cleanup.h"
#include "cli.h"
#include "spawn.h"
#include "home.h"
#include "ids.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SBX_VERSION
#define SBX_VERSION "0.1.0"
#endif

static const char usage_text[] =
	"Usage: sbx COMMAND [options]\n"
	"\n"
	"Commands:\n"
	"  mount --user ID --thread ID [sbxfs options] MOUNTPOINT\n"
	"                     mount a thread's view (runs sbxfs; see sbxfs --help)\n"
	"  umount MOUNTPOINT  unmount a view, also one whose daemon died\n"
	"  audit --user ID --thread ID [--format text|json]\n"
	"                     list the writes the read-before-write gate refused\n"
	"  snapshot --user ID --thread ID [--max-files N] [--format text|json]\n"
	"                     record what the thread's workspace and outputs hold\n"
	"  run begin --user ID --thread ID [--max-files N]\n"
	"                     start a run (a snapshot); prints its id\n"
	"  run end RUN [--format text|json]\n"
	"                     end it: record and print what it changed\n"
	"  changes RUN [--format text|json|html]\n"
	"                     print what an ended run changed\n"
	"  broker [--config FILE] [-f] [--status|--shutdown]\n"
	"                     the exec broker: views on demand, commands in them\n"
	"  exec --user ID --thread ID [--timeout SEC] [--env K=V]... -- COMMAND\n"
	"                     run a command in the thread's view, in a sandbox\n"
	"  doctor [--format text|json]\n"
	"                     what this host allows, which sandbox protections hold\n"
	"  id user RAW | id check user|thread ID\n"
	"                     the reference's id rules: make_safe_user_id, checks\n"
	"\n"
	"Options for every command (before or after it):\n"
	"  --home DIR         $SBX_HOME (default: $SBX_HOME, else /var/lib/sbxfs for\n"
	"                     root, else $XDG_DATA_HOME/sbxfs or ~/.local/share/sbxfs)\n"
	"  -h, --help         show help (sbx COMMAND --help for a command)\n"
	"  -V, --version      show the version\n";

static const char umount_usage[] =
	"Usage: sbx umount [--home DIR] MOUNTPOINT\n"
	"\n"
	"Unmounts the view at MOUNTPOINT; its daemon then exits. A stale mount\n"
	"(\"Transport endpoint is not connected\" after the daemon died) is\n"
	"detached. Uses umount2(2) as root, fusermount3 otherwise.\n";

int thread_roots_open(const char *command, const char *home, const char *user,
		      const char *thread, struct thread_roots *roots)
{
	_cleanup_(closep) int homefd = open(home, O_PATH | O_DIRECTORY | O_CLOEXEC);

	roots->out = -1;
	roots->ws = homefd < 0 ? -errno
		    : home_thread_dir_open(homefd, user, thread, THREAD_WORKSPACE);
	if (roots->ws < 0) {
		fprintf(stderr, "sbx: %s: thread %s/%s has no workspace under %s: %s\n",
			command, user, thread, home, strerror(-roots->ws));
		return roots->ws;
	}
	roots->out = home_thread_dir_open(homefd, user, thread, THREAD_OUTPUTS);
	return 0;
}

void thread_roots_close(struct thread_roots *roots)
{
	closep(&roots->ws);
	closep(&roots->out);
}

int take_home(int argc, char **argv, int *i, const char **home)
{
	if (!strncmp(argv[*i], "--home=", 7)) {
		*home = argv[*i] + 7;
		return 1;
	}
	if (strcmp(argv[*i], "--home"))
		return 0;
	if (*i + 1 >= argc)
		return -1;
	*home = argv[++*i];
	return 1;
}

int resolve_home(const char *command, const char *home, char *buf, size_t size)
{
	if (home && !*home) {
		fprintf(stderr, "sbx: %s: --home is empty\n", command);
		return -1;
	}
	if (home) {
		if ((size_t)snprintf(buf, size, "%s", home) < size)
			return 0;
		fprintf(stderr, "sbx: %s: the --home path is too long\n", command);
		return -1;
	}
	if (home_default(buf, size) == 0)
		return 0;
	fprintf(stderr, "sbx: %s: no home: set --home or $SBX_HOME\n", command);
	return -1;
}

char *sha256_hex(const uint8_t h[32], char out[65])
{
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", h[i]);
	return out;
}

int thread_args_parse(const char *command, const char *usage, int argc,
		      char **argv, const char *home, unsigned takes,
		      struct thread_args *a)
{
	enum { OPT_USER = 256, OPT_THREAD, OPT_FORMAT, OPT_HOME, OPT_MAX, OPT_DIFF };
	bool takes_max_files = takes & THREAD_ARGS_MAX_FILES;
	static const struct option longopts[] = {
		{ "user", required_argument, NULL, OPT_USER },
		{ "thread", required_argument, NULL, OPT_THREAD },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "home", required_argument, NULL, OPT_HOME },
		{ "max-files", required_argument, NULL, OPT_MAX },
		{ "diff", no_argument, NULL, OPT_DIFF },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *why, *format = "text";
	char *end;
	int c;

	memset(a, 0, sizeof(*a));
	a->max_files = -1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_USER:
			a->user = optarg;
			break;
		case OPT_THREAD:
			a->thread = optarg;
			break;
		case OPT_FORMAT:
			format = optarg;
			break;
		case OPT_HOME:
			home = optarg;
			break;
		case OPT_MAX:
			errno = 0;
			a->max_files = strtol(optarg, &end, 10);
			if (!takes_max_files || errno || *end || end == optarg ||
			    a->max_files < 1) {
				fprintf(stderr, takes_max_files
					? "sbx: %s: --max-files takes a number of files (1 or more), not '%s'\n"
					: "sbx: %s: unknown option --max-files%s\n",
					command, takes_max_files ? optarg : "");
				return 2;
			}
			break;
		case OPT_DIFF:
			if (!(takes & THREAD_ARGS_DIFF)) {
				fprintf(stderr, "sbx: %s: unknown option --diff\nTry 'sbx %s --help'.\n",
					command, command);
				return 2;
			}
			a->diff = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fprintf(stderr, "Try 'sbx %s --help'.\n", command);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "sbx: %s: unexpected argument '%s'\nTry 'sbx %s --help'.\n",
			command, argv[optind], command);
		return 2;
	}
	if (!a->user || !a->thread) {
		fprintf(stderr, "sbx: %s: --user and --thread are required\nTry 'sbx %s --help'.\n",
			command, command);
		return 2;
	}
	if (user_id_check(a->user, &why) < 0) {
		fprintf(stderr, "sbx: %s: invalid user id '%s': %s\n", command, a->user, why);
		return 2;
	}
	if (thread_id_check(a->thread, &why) < 0) {
		fprintf(stderr, "sbx: %s: invalid thread id '%s': %s\n", command, a->thread, why);
		return 2;
	}
	if (strcmp(format, "text") && strcmp(format, "json")) {
		fprintf(stderr, "sbx: %s: --format takes text or json, not '%s'\n", command, format);
		return 2;
	}
	a->json = !strcmp(format, "json");
	if (resolve_home(command, home, a->home, sizeof(a->home)) < 0)
		return 2;
	return -1;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void scan_progress_init(struct scan_progress *p)
{
	p->tty = isatty(STDERR_FILENO);
	p->last_ms = now_ms();
}

void scan_progress_show(struct scan_progress *p, size_t files)
{
	long now = now_ms();

	if (!p->tty || now - p->last_ms < 100)
		return;
	p->last_ms = now;
	fprintf(stderr, "\rscanning: %zu files", files);
}

void scan_progress_done(struct scan_progress *p)
{
	if (p->tty)
		fputs("\r\033[K", stderr);
}

static int cmd_umount(int argc, char **argv)
{
	const char *mp = NULL, *home = NULL;
	int r;

	for (int i = 1; i < argc; i++) {
		int h = take_home(argc, argv, &i, &home);

		if (h < 0) {
			fputs("sbx: umount: --home needs a directory\n", stderr);
			return 2;
		}
		if (h)
			continue;	/* unmounting needs no home */
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(umount_usage, stdout);
			return 0;
		}
		if (argv[i][0] == '-' || mp) {
			fputs("sbx: umount: expected one MOUNTPOINT\nTry 'sbx umount --help'.\n",
			      stderr);
			return 2;
		}
		mp = argv[i];
	}
	if (!mp) {
		fputs("sbx: umount: expected one MOUNTPOINT\nTry 'sbx umount --help'.\n",
		      stderr);
		return 2;
	}
	r = view_unmount(mp, false);
	if (r < 0 && geteuid() == 0)
		fprintf(stderr, "sbx: umount %s: %s%s\n", mp, strerror(-r),
			r == -EBUSY ? " (a process still uses it; close it or retry)"
			: r == -EINVAL ? " (not a mount point)" : "");
	else if (r < 0)
		fprintf(stderr, "sbx: umount %s: fusermount3 failed (its message is above)\n",
			mp);
	if (r < 0)
		return 1;
	return 0;
}

static int cmd_mount(int argc, char **argv, const char *home)
{
	char exe[PATH_MAX];
	_cleanup_(freep) char **args = calloc((size_t)argc + 4, sizeof(char *));
	int n = 0;

	if (!args)
		return 1;
	sibling_program("sbxfs", exe, sizeof(exe));
	args[n++] = exe;
	if (home) {
		args[n++] = "--home";
		args[n++] = (char *)home;
	}
	for (int i = 1; i < argc; i++)
		args[n++] = argv[i];
	args[n] = NULL;
	execv(exe, args);
	execvp("sbxfs", args);
	fprintf(stderr, "sbx: mount: cannot run sbxfs: %s\n", strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	const char *home = NULL;
	int i = 1;

	log_setup("sbx", NULL, LOG_INFO, false);
	while (i < argc && argv[i][0] == '-') {
		int h;

		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage_text, stdout);
			return 0;
		}
		if (!strcmp(argv[i], "--version") || !strcmp(argv[i], "-V")) {
			printf("sbx %s\n", SBX_VERSION);
			return 0;
		}
		h = take_home(argc, argv, &i, &home);
		if (h < 0) {
			fputs("sbx: --home needs a directory\nTry 'sbx --help'.\n", stderr);
			return 2;
		}
		if (h) {
			i++;
			continue;
		}
		fprintf(stderr, "sbx: unknown option '%s'\nTry 'sbx --help'.\n", argv[i]);
		return 2;
	}
	if (i >= argc) {
		fputs(usage_text, stderr);
		return 2;
	}
	if (!strcmp(argv[i], "mount"))
		return cmd_mount(argc - i, argv + i, home);
	if (!strcmp(argv[i], "umount"))
		return cmd_umount(argc - i, argv + i);
	if (!strcmp(argv[i], "audit"))
		return cmd_audit(argc - i, argv + i, home);
	if (!strcmp(argv[i], "snapshot"))
		return cmd_snapshot(argc - i, argv + i, home);
	if (!strcmp(argv[i], "run"))
		return cmd_run(argc - i, argv + i, home);
	if (!strcmp(argv[i], "changes"))
		return cmd_changes(argc - i, argv + i, home);
	if (!strcmp(argv[i], "broker"))
		return cmd_broker(argc - i, argv + i, home);
	if (!strcmp(argv[i], "exec"))
		return cmd_exec(argc - i, argv + i, home);
	if (!strcmp(argv[i], "doctor"))
		return cmd_doctor(argc - i, argv + i, home);
	if (!strcmp(argv[i], "id"))
		return cmd_id(argc - i, argv + i);
	fprintf(stderr, "sbx: unknown command '%s'\nTry 'sbx --help'.\n", argv[i]);
	return 2;
}
