/* try.c - sbx try: overlays of a person's project (docs/try.md). An
 * overlay is a thread whose directory records its project; its views
 * (sbxfs, and so the broker's and sbx mcp's) show the project through the
 * thread's workspace directory, the layer every change goes to. */
#include "args.h"
#include "cli.h"
#include "hold.h"
#include "try.h"
#include "common/cleanup.h"
#include "common/home.h"
#include "common/ids.h"
#include "common/viewreg.h"
#include "common/units.h"
#include "common/walk.h"
#include "run/overlay.h"
#include "store/store.h"
#include "exec/client.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char try_usage[] =
	"Usage: sbx try [--project DIR] [--name NAME] [--user ID] [--home DIR]\n"
	"               [--mount MOUNTPOINT | -- COMMAND...]\n"
	"\n"
	"An overlay of a project: a thread whose workspace (/mnt/user-data/\n"
	"workspace) shows DIR copy-on-write. The agent's changes go to a layer\n"
	"of the thread's own and never to DIR; a person's edits of DIR show at\n"
	"once (docs/try.md). Prints the overlay's name, then:\n"
	"  --project DIR       the project (default: the current directory)\n"
	"  --name NAME         the overlay's name, a thread id (default: the\n"
	"                      project directory's name, with -2, -3... where an\n"
	"                      overlay of another project has it); an overlay of\n"
	"                      the same project by that name is taken again\n"
	"  --user ID           whose threads overlays are (default: try)\n"
	"  --mount MOUNTPOINT  mount the overlay's view there, as sbx mount does\n"
	"                      (sbx umount ends it)\n"
	"  -- COMMAND...       run COMMAND in the overlay's sandbox, as sbx exec\n"
	"                      does, through the home's broker (started if none\n"
	"                      serves it), and exit with its status\n"
	"Any command about a thread takes the overlay as --user ID --thread NAME\n"
	"(sbx exec, sbx mcp, sbx run, sbx changes).\n"
	"\n"
	"Then, each with its --help:\n"
	"  sbx try list               the overlays\n"
	"  sbx try status NAME        what the agent changed; the conflicts\n"
	"  sbx try diff NAME          the changes as a patch git apply takes\n"
	"  sbx try apply NAME         write them to the project, conflicts apart\n"
	"  sbx try discard NAME       drop the overlay\n"
	"  sbx try hook AGENT         an agent's worktree hooks (Claude Code's)\n";

static const char try_list_usage[] =
	"Usage: sbx try list [--user ID] [--home DIR]\n"
	"\n"
	"Each overlay of the user (default: try): its name, age, the bytes its\n"
	"layer holds, how many files the agent changed and how many of those\n"
	"are conflicts (as sbx try status counts them), whether a view of it is\n"
	"mounted, and its project.\n";

/* The thread id made of the project directory's name: its characters
 * that ids allow, at most 60 (room for a -N). */
static void name_of(const char *project, char *out, size_t size)
{
	const char *base = strrchr(project, '/');

	thread_id_slug(base && base[1] ? base + 1 : "project", 60, out, size);
}

int try_overlay_make(int homefd, const char *user, const char *name, const char *base,
		     const char *project, char *out, size_t size)
{
	char own[64];
	int r = -EEXIST;

	if (name) {
		snprintf(out, size, "%s", name);
		r = home_overlay_set(homefd, user, name, project);
	} else {
		if (!base) {
			name_of(project, own, sizeof(own));
			base = own;
		}
		for (int i = 1; r == -EEXIST && i < 1000; i++) {
			if (i == 1)
				snprintf(out, size, "%s", base);
			else
				snprintf(out, size, "%s-%d", base, i);
			r = home_overlay_set(homefd, user, out, project);
		}
	}
	if (r == -EEXIST) {
		char other[PATH_MAX];
		if (home_overlay_get(homefd, user, out, other, sizeof(other)) <= 0)
			snprintf(other, sizeof(other), "another project");
		fprintf(stderr, "sbx: try: %s is an overlay of %s already\n", out, other);
		return 1;
	}
	if (r < 0) {
		fprintf(stderr, "sbx: try: cannot make the overlay %s: %s\n", out, strerror(-r));
		return 1;
	}
	return 0;
}

/* What a layer holds: its entries (directories apart) and their bytes. */
struct layer_size {
	long entries;
	uint64_t bytes;
};

/* Adds the entry NAME of layer directory DIRFD (taken) to ARG, a
 * struct layer_size, with what a directory holds. */
static int count_entry(void *arg, int dirfd, const char *name, const struct stat *st)
{
	struct layer_size *n = arg;

	if (!S_ISDIR(st->st_mode)) {
		n->entries++;
		n->bytes += S_ISREG(st->st_mode) ? (uint64_t)st->st_size : 0;
		return 0;
	}
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0)
		dir_each(fd, count_entry, n);
	return 0;
}

static void count_view(const char *mountpoint, void *arg)
{
	(void)mountpoint;
	(void)arg;
}

struct list_ctx {
	int homefd;
	const char *user;
	struct store *s; /* the origins; NULL if the home has no store yet */
	time_t now;
	int shown;
	char **names; /* the threads, to be listed in order */
	size_t n, cap;
};

static int add_thread(void *arg, int dirfd, const char *thread, const struct stat *st)
{
	struct list_ctx *l = arg;

	(void)dirfd;
	if (!S_ISDIR(st->st_mode))
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		char **v = realloc(l->names, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->names = v;
		l->cap = cap;
	}
	return (l->names[l->n] = strdup(thread)) ? (l->n++, 0) : -ENOMEM;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void list_one(struct list_ctx *l, int dirfd, const char *thread)
{
	char project[PATH_MAX];
	struct stat rec;

	if (home_overlay_get(l->homefd, l->user, thread, project, sizeof(project)) <= 0)
		return;
	struct layer_size size = { 0 };
	_cleanup_(closep) int lfd = home_thread_dir_open(l->homefd, l->user, thread,
							 THREAD_WORKSPACE);
	int rfd = lfd < 0 ? -1 : openat(lfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd >= 0)
		dir_each(rfd, count_entry, &size);
	/* Its changes and conflicts, as sbx try status counts them (none
	 * before its first mount made the layer). */
	char changed[24] = "?", conflicts[24] = "?";
	if (lfd == -ENOENT) {
		snprintf(changed, sizeof(changed), "0");
		snprintf(conflicts, sizeof(conflicts), "0");
	}
	_cleanup_(closep) int pfd = open(project, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct ov_review rv;
	if (lfd >= 0 && pfd >= 0 && l->s && ov_review(lfd, pfd, l->s, l->user, thread, &rv) == 0) {
		size_t n = 0, k = 0;
		for (size_t i = 0; i < rv.n; i++) {
			bool counted = !ov_is_dir(&rv.v[i]) && !ov_in_git(rv.v[i].path);
			n += counted;
			k += counted && rv.v[i].conflict;
		}
		snprintf(changed, sizeof(changed), "%zu", n);
		snprintf(conflicts, sizeof(conflicts), "%zu", k);
		ov_review_free(&rv);
	}
	int mounted = viewreg_each(l->homefd, l->user, thread, count_view, NULL);
	_cleanup_(closep) int tfd = openat(dirfd, thread,
					   O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	long age = tfd >= 0 && fstatat(tfd, OVERLAY_RECORD, &rec, AT_SYMLINK_NOFOLLOW) == 0
			   ? (long)(l->now - rec.st_mtim.tv_sec)
			   : -1;
	if (!l->shown++)
		printf("%-24s %-6s %9s %8s %9s  %-7s  %s\n", "NAME", "AGE", "SIZE", "CHANGED",
		       "CONFLICTS", "IN USE", "PROJECT");
	char when[24] = "-";
	if (age >= 86400)
		snprintf(when, sizeof(when), "%ldd", age / 86400);
	else if (age >= 3600)
		snprintf(when, sizeof(when), "%ldh", age / 3600);
	else if (age >= 0)
		snprintf(when, sizeof(when), "%ldm", age / 60);
	char bytes[32];
	printf("%-24s %-6s %9s %8s %9s  %-7s  %s\n", thread, when,
	       size_text(size.bytes, bytes, sizeof(bytes)), changed, conflicts,
	       mounted > 0 ? "mounted" : "-", project);
}

static int try_list(int argc, char **argv, const char *home)
{
	static const struct option longopts[] = {
		{ "user", required_argument, NULL, 'u' },
		{ "home", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *user = TRY_USER, *why;
	char h[PATH_MAX];
	int c;

	getopt_begin(argv, "try");
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'u':
			user = optarg;
			break;
		case 'H':
			home = optarg;
			break;
		case 'h':
			fputs(try_list_usage, stdout);
			return 0;
		default:
			return usage_error("try", NULL);
		}
	}
	if (optind != argc)
		return usage_error("try", "unexpected argument '%s'", argv[optind]);
	if (user_id_check(user, &why) < 0)
		return usage_error("try", "invalid user id '%s': %s", user, why);
	if (resolve_home("try", home, h, sizeof(h)) < 0)
		return 2;
	_cleanup_(closep) int homefd = home_open(h);
	if (homefd < 0) {
		fprintf(stderr, "sbx: try: cannot open home %s: %s\n", h, strerror(-homefd));
		return 1;
	}
	struct list_ctx l = { .homefd = homefd, .user = user, .now = time(NULL) };
	char err[512];
	if (store_open_existing(h, &l.s, err, sizeof(err)) < 0 && l.s == NULL)
		l.s = NULL; /* no store yet: no origins, changes unknown ("?") */
	const char *const path[] = { "users", user, "threads" };
	_cleanup_(closep) int tfd = dir_chain_open(homefd, path, 3, false);
	int rfd = tfd < 0 ? tfd : openat(tfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r = rfd < 0 ? 0 : dir_each(rfd, add_thread, &l);
	if (r == 0 && l.n)
		qsort(l.names, l.n, sizeof(*l.names), by_name);
	for (size_t i = 0; i < l.n; i++) {
		if (r == 0)
			list_one(&l, tfd, l.names[i]);
		free(l.names[i]);
	}
	free(l.names);
	if (l.s)
		store_close(l.s);
	if (r < 0) {
		fprintf(stderr, "sbx: try: cannot list the overlays: %s\n", strerror(-r));
		return 1;
	}
	if (!l.shown)
		printf("no overlays of user %s in %s\n", user, h);
	return 0;
}

int try_mount(const char *home, const char *user, const char *name, const char *mountpoint)
{
	char *args[] = { "mount",      "--user",	   (char *)user, "--thread",
			 (char *)name, (char *)mountpoint, NULL };

	return cmd_mount(6, args, home);
}

int cmd_try(int argc, char **argv, const char *home)
{
	static const struct option longopts[] = {
		{ "project", required_argument, NULL, 'p' },
		{ "name", required_argument, NULL, 'n' },
		{ "user", required_argument, NULL, 'u' },
		{ "mount", required_argument, NULL, 'm' },
		{ "home", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *project = ".", *name = NULL, *user = TRY_USER, *mountpoint = NULL, *why;
	char h[PATH_MAX], real[PATH_MAX], made[128];
	int c;

	static const struct {
		const char *word;
		int (*fn)(int argc, char **argv, const char *home);
	} subs[] = {
		{ "list", try_list },		{ "status", cmd_try_status },
		{ "diff", cmd_try_diff },	{ "apply", cmd_try_apply },
		{ "discard", cmd_try_discard }, { "hook", cmd_try_hook },
	};
	for (size_t i = 0; argc > 1 && i < sizeof(subs) / sizeof(*subs); i++)
		if (!strcmp(argv[1], subs[i].word))
			return subs[i].fn(argc - 1, argv + 1, home);
	getopt_begin(argv, "try");
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			project = optarg;
			break;
		case 'n':
			name = optarg;
			break;
		case 'u':
			user = optarg;
			break;
		case 'm':
			mountpoint = optarg;
			break;
		case 'H':
			home = optarg;
			break;
		case 'h':
			fputs(try_usage, stdout);
			return 0;
		default:
			return usage_error("try", NULL);
		}
	}
	bool run = optind < argc;
	if (optind < argc && strcmp(argv[optind - 1], "--"))
		return usage_error("try", "unexpected argument '%s' (a command comes after --)",
				   argv[optind]);
	if (run && mountpoint)
		return usage_error("try", "--mount and a COMMAND exclude each other");
	if (user_id_check(user, &why) < 0)
		return usage_error("try", "invalid user id '%s': %s", user, why);
	if (name && thread_id_check(name, &why) < 0)
		return usage_error("try", "invalid name '%s': %s", name, why);
	if (!realpath(project, real)) {
		fprintf(stderr, "sbx: try: cannot use project %s: %s\n", project, strerror(errno));
		return 1;
	}
	if (resolve_home("try", home, h, sizeof(h)) < 0)
		return 2;
	_cleanup_(closep) int homefd = home_open(h);
	if (homefd < 0) {
		fprintf(stderr, "sbx: try: cannot open home %s: %s\n", h, strerror(-homefd));
		return 1;
	}
	int r = try_overlay_make(homefd, user, name, NULL, real, made, sizeof(made));
	if (r)
		return r;
	if (mountpoint)
		return try_mount(h, user, made, mountpoint);
	if (!run) {
		printf("%s\n", made);
		return 0;
	}
	size_t n = (size_t)(argc - optind);
	_cleanup_(freep) char **args = calloc(n + 8, sizeof(*args));
	struct client_conn *keep = NULL;
	if (!args || hold_broker("try", h, &keep))
		return 1;
	char *head[] = { "exec", "--user", (char *)user, "--thread", made, "--" };
	memcpy(args, head, sizeof(head));
	memcpy(args + 6, argv + optind, n * sizeof(*args));
	r = cmd_exec((int)n + 6, args, h);
	client_close(keep);
	return r;
}
