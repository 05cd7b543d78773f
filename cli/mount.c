/* mount.c - sbx mount and sbx umount: a thread's view, by sbxfs, and its
 * unmounting, also of one whose daemon died. */
#include "args.h"
#include "cli.h"
#include "common/cleanup.h"
#include "common/mounts.h"
#include "common/spawn.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char umount_usage[] =
	"Usage: sbx umount [--home DIR] MOUNTPOINT\n"
	"\n"
	"Unmounts the view at MOUNTPOINT; its daemon then exits. A stale mount\n"
	"(\"Transport endpoint is not connected\" after the daemon died) is\n"
	"detached. Anything else mounted there (not an sbxfs view) is refused.\n"
	"A view that sandboxes still use (a broker's shell sessions or commands\n"
	"of its thread, or any other mount namespace that binds it) is refused\n"
	"too, naming their processes: unmounted, it would live on in them. A\n"
	"namespace that lets go within a second (another sandbox being set up\n"
	"copies every mount for a moment) is waited out.\n"
	"Uses umount2(2) as root, fusermount3 otherwise.\n";

/* sbxfs does the mounting, its options and help included: sbx mount is
 * sbxfs under the name the person typed. */
int cmd_mount(int argc, char **argv, const char *home)
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
	/* Its help and errors then speak of sbx mount, what was typed. */
	setenv(SBXFS_NAME_ENV, "sbx mount", 1);
	execv(exe, args);
	execvp("sbxfs", args);
	fprintf(stderr, "sbx: mount: cannot run sbxfs: %s\n", strerror(errno));
	return 1;
}

/* How long a holder may take to let go before it counts (ms): a mount
 * namespace made anywhere on the host copies every mount, the view's
 * too, and a sandbox of another thread drops the copies once it has
 * pivoted into its own tree, a moment later. */
#define HOLD_GRACE_MS 1000
#define HOLD_POLL_MS 50

/* 1 with a message naming them if other mount namespaces hold the view
 * at MP: their binds would keep its connection, and its daemon, alive
 * after the unmount, which would then return 0 for nothing. Not ending
 * them is deliberate: a shell session's state and its jobs are the
 * agent's, as a host process's are when umount says busy. */
static int refuse_if_held(const char *mp)
{
	struct view_holder h[8];
	int n;

	for (int waited = 0;; waited += HOLD_POLL_MS) {
		n = view_holders(mp, h, sizeof(h) / sizeof(*h));
		if (n <= 0)
			return 0;
		if (waited >= HOLD_GRACE_MS)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = HOLD_POLL_MS * 1000000L }, NULL);
	}
	fprintf(stderr,
		"sbx: umount: %s: in use by %d other mount namespace%s (a broker's sandboxes of"
		" its thread, or processes that bound it):",
		mp, n, n == 1 ? "" : "s");
	for (int i = 0; i < n && i < (int)(sizeof(h) / sizeof(*h)); i++)
		fprintf(stderr, "%s pid %d (%s)", i ? "," : "", (int)h[i].pid, h[i].comm);
	fprintf(stderr,
		"%s; end them first (a shell session: `exit` in its scope, or the broker's"
		" shutdown): left mounted\n",
		n > 8 ? ", ..." : "");
	return 1;
}

int cmd_umount(int argc, char **argv, const char *home)
{
	static const struct option longopts[] = {
		{ "home", required_argument, NULL, 'H' }, /* unmounting needs none */
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char type[64];
	int c, r;

	(void)home;
	getopt_begin(argv, "umount");
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'h') {
			fputs(umount_usage, stdout);
			return 0;
		}
		if (c != 'H')
			return usage_error("umount", NULL);
	}
	if (optind != argc - 1)
		return usage_error("umount", "expected one MOUNTPOINT");
	const char *mp = argv[optind];
	/* As root umount2 takes down whatever is there: check first that it
	 * is a view, its daemon alive or not (a dead one's is still listed). */
	r = view_mounted_at(mp, type, sizeof(type));
	if (r == 0) {
		fprintf(stderr, "sbx: umount: %s is a %s mount, not an sbxfs view: left mounted\n",
			mp, type);
		return 1;
	}
	if (r < 0) {
		fprintf(stderr, "sbx: umount: %s: %s\n", mp,
			r == -EINVAL ? "not a mount point (nothing is mounted there)"
				     : strerror(-r));
		return 1;
	}
	if ((r = refuse_if_held(mp)) != 0)
		return r;
	r = view_unmount(mp, false);
	if (r < 0 && geteuid() == 0)
		fprintf(stderr, "sbx: umount: %s: %s%s\n", mp, strerror(-r),
			r == -EBUSY ? " (a process still uses it; close it or retry)" : "");
	else if (r < 0)
		fprintf(stderr, "sbx: umount: %s: fusermount3 failed (its message is above)\n", mp);
	return r < 0 ? 1 : 0;
}
