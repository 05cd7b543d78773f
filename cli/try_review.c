/* try_review.c - sbx try status, diff, apply and discard: an overlay's
 * changes reviewed against its project and applied to it (docs/try.md;
 * the engine is run/overlay.h). */
#include "args.h"
#include "hold.h"
#include "cli.h"
#include "report.h"
#include "try.h"
#include "common/cleanup.h"
#include "common/home.h"
#include "common/ids.h"
#include "common/viewreg.h"
#include "exec/client.h"
#include "run/overlay.h"
#include "run/page.h"
#include "run/views.h"
#include "store/origins.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* One overlay, opened for its review: its project, layer and store. */
struct overlay {
	char home[PATH_MAX], project[PATH_MAX];
	const char *user, *name;
	int homefd, layer_fd, project_fd;
	struct store *s;
	struct ov_review review;
};

static void overlay_close(struct overlay *o)
{
	ov_review_free(&o->review);
	if (o->s)
		store_close(o->s);
	for (int *fd = &o->homefd; fd <= &o->project_fd; fd++)
		if (*fd >= 0)
			close(*fd);
}

/* Opens overlay NAME of USER in HOME and reviews it, for COMMAND ("try
 * status"...). Returns -1 to go on, or the exit status (said). */
static int overlay_open(const char *command, const char *home, const char *user, const char *name,
			struct overlay *o)
{
	char err[512];
	const char *why;
	int r;

	*o = (struct overlay){
		.user = user, .name = name, .homefd = -1, .layer_fd = -1, .project_fd = -1
	};
	if (user_id_check(user, &why) < 0)
		return usage_error(command, "invalid user id '%s': %s", user, why);
	if (thread_id_check(name, &why) < 0)
		return usage_error(command, "invalid overlay name '%s': %s", name, why);
	if (resolve_home(command, home, o->home, sizeof(o->home)) < 0)
		return 2;
	if ((o->homefd = home_open(o->home)) < 0) {
		fprintf(stderr, "sbx: %s: cannot open home %s: %s\n", command, o->home,
			strerror(-o->homefd));
		return 1;
	}
	r = home_overlay_get(o->homefd, user, name, o->project, sizeof(o->project));
	if (r <= 0) {
		fprintf(stderr,
			"sbx: %s: %s is not an overlay of user %s (sbx try list --user %s)%s%s\n",
			command, name, user, user, r < 0 ? ": " : "", r < 0 ? strerror(-r) : "");
		return 1;
	}
	if ((o->layer_fd = home_thread_dir_open(o->homefd, user, name, THREAD_WORKSPACE)) < 0 ||
	    (o->project_fd = open(o->project, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "sbx: %s: cannot open %s: %s\n", command,
			o->layer_fd < 0 ? "the overlay's layer" : o->project,
			o->layer_fd < 0 ? strerror(-o->layer_fd) : strerror(errno));
		return 1;
	}
	/* Every origin its mounted views queued is in the store first. */
	views_sync(o->home, user, name);
	if (store_open(o->home, &o->s, err, sizeof(err)) < 0) {
		fprintf(stderr, "sbx: %s: %s\n", command, err);
		return 1;
	}
	if ((r = ov_review(o->layer_fd, o->project_fd, o->s, user, name, &o->review)) < 0) {
		fprintf(stderr, "sbx: %s: cannot review %s: %s\n", command, name, strerror(-r));
		return 1;
	}
	return -1;
}

/* The options every review command takes: --user, --home, --help; and
 * the name of the overlay, the first argument. */
struct review_args {
	const char *user, *home, *name;
	const char *format; /* --format: "text" unless given */
	bool stat, name_status, all, dry_run, all_or_nothing, force, three_way;
	const char **paths; /* PATH arguments and --only */
	size_t n_paths;
};

enum {
	OPT_STAT = 256,
	OPT_NAME_STATUS,
	OPT_PATCH,
	OPT_ALL,
	OPT_DRY_RUN,
	OPT_ALL_OR_NOTHING,
	OPT_ONLY,
	OPT_FORCE,
	OPT_3WAY,
	OPT_FORMAT
};

/* Parses ARGV of COMMAND (USAGE its help) with the options in EXTRA
 * besides the shared ones. Returns -1 to go on, else an exit status. */
static int review_args_parse(const char *command, const char *usage, int argc, char **argv,
			     const char *home, const struct option *extra, size_t n_extra,
			     struct review_args *a)
{
	struct option longopts[16] = {
		{ "user", required_argument, NULL, 'u' },
		{ "home", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
	};
	int c;

	if (n_extra)
		memcpy(longopts + 3, extra, n_extra * sizeof(*extra));
	*a = (struct review_args){ .user = TRY_USER, .home = home, .format = "text" };
	a->paths = calloc((size_t)argc + 1, sizeof(*a->paths));
	if (!a->paths)
		return 1;
	getopt_begin(argv, command);
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'u':
			a->user = optarg;
			break;
		case 'H':
			a->home = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case OPT_STAT:
			a->stat = true;
			a->name_status = false;
			break;
		case OPT_NAME_STATUS:
			a->name_status = true;
			a->stat = false;
			break;
		case OPT_PATCH:
			a->stat = a->name_status = false;
			break;
		case OPT_ALL:
			a->all = true;
			break;
		case OPT_DRY_RUN:
			a->dry_run = true;
			break;
		case OPT_ALL_OR_NOTHING:
			a->all_or_nothing = true;
			break;
		case OPT_FORCE:
			a->force = true;
			break;
		case OPT_3WAY:
			a->three_way = true;
			break;
		case OPT_FORMAT:
			a->format = optarg;
			break;
		case OPT_ONLY:
			a->paths[a->n_paths++] = optarg;
			break;
		default:
			return usage_error(command, NULL);
		}
	}
	if (optind >= argc)
		return usage_error(command, "which overlay? (sbx try list names them)");
	a->name = argv[optind++];
	while (optind < argc)
		a->paths[a->n_paths++] = argv[optind++];
	return -1;
}

/* ---- status --------------------------------------------------------------- */

static const char status_usage[] =
	"Usage: sbx try status NAME [--user ID] [--home DIR]\n"
	"\n"
	"What the agent changed in overlay NAME, against its project as it is\n"
	"now: how many files it added, modified, deleted and renamed, and the\n"
	"conflicts, each with its reason: a file the agent changed that was\n"
	"changed on the project since the agent first touched it (copied it up,\n"
	"or removed it), or one the agent made that the project has now too.\n"
	"Then the files the agent read and left as they were that changed on\n"
	"the project since it read them: what its changes may rest on.\n"
	"sbx try apply writes all but the conflicts. Exit status 0, or 1 if\n"
	"there are conflicts.\n";

int cmd_try_status(int argc, char **argv, const char *home)
{
	struct review_args a;
	struct overlay o;
	size_t counts[4] = { 0 }, noise = 0, git = 0;
	int r = review_args_parse("try status", status_usage, argc, argv, home, NULL, 0, &a);

	if (r < 0)
		r = overlay_open("try status", a.home, a.user, a.name, &o);
	else
		o = (struct overlay){ .homefd = -1, .layer_fd = -1, .project_fd = -1 };
	free(a.paths);
	if (r >= 0) {
		overlay_close(&o);
		return r;
	}
	printf("overlay %s of %s\n", o.name, o.project);
	for (size_t i = 0; i < o.review.n; i++) {
		const struct ov_change *c = &o.review.v[i];
		if (ov_is_dir(c))
			continue;
		if (ov_in_git(c->path)) {
			git++;
			continue;
		}
		counts[c->kind]++;
		noise += ov_noise(c->path);
	}
	printf("%zu added, %zu modified, %zu deleted, %zu renamed", counts[OV_ADDED],
	       counts[OV_MODIFIED], counts[OV_DELETED], counts[OV_RENAMED]);
	if (noise)
		printf(" (%zu of them in build output: node_modules, target, .venv...)", noise);
	if (git)
		printf("\n%zu file%s changed inside .git: never applied as files", git,
		       git == 1 ? "" : "s");
	size_t conflicts = 0;
	for (size_t i = 0; i < o.review.n; i++)
		conflicts += o.review.v[i].conflict && !ov_in_git(o.review.v[i].path);
	printf("\n%zu conflict%s\n", conflicts, conflicts == 1 ? "" : "s");
	for (size_t i = 0; i < o.review.n; i++) {
		const struct ov_change *c = &o.review.v[i];
		if (c->conflict && !ov_in_git(c->path))
			printf("  %c %s: %s\n", ov_status_letter(c), c->path, c->conflict);
	}
	if (o.review.n_stale)
		printf("%zu file%s the agent read changed on the project since:\n",
		       o.review.n_stale, o.review.n_stale == 1 ? "" : "s");
	for (size_t i = 0; i < o.review.n_stale; i++)
		printf("  %s\n", o.review.stale[i]);
	r = conflicts ? 1 : 0;
	overlay_close(&o);
	return r;
}

/* ---- diff ----------------------------------------------------------------- */

static const char diff_usage[] =
	"Usage: sbx try diff NAME [--stat | --name-status | --patch] [--all]\n"
	"                    [--format text|html] [--user ID] [--home DIR] [PATH...]\n"
	"\n"
	"What the agent changed in overlay NAME, as git shows changes, from the\n"
	"project as it is now to the overlay: a patch (the default) that git\n"
	"apply takes, in the project, to give the overlay's files. Binary files\n"
	"and secret-looking ones (a name such as .env, *.pem, *secret*, or a text\n"
	"that holds a credential) are summarized, not shown: they are not in\n"
	"the patch (sbx try apply applies them). Directories are not listed (as\n"
	"git does not).\n"
	"  --stat          a line per file with its lines added and removed\n"
	"  --name-status   a line per file: A, M, D, T (type changed) or R100\n"
	"                  (renamed), and its path\n"
	"  --patch         the patch (the default)\n"
	"  --all           changes in build output too (node_modules, target,\n"
	"                  .venv, __pycache__...): counted on stderr otherwise,\n"
	"                  but their deletions are always listed\n"
	"  --format html   the review page instead, one self-contained HTML file\n"
	"                  (no script): the overlay, its counts, the conflicts\n"
	"                  first with their reasons, an index naming every file,\n"
	"                  the first 200 with their diffs (256 KiB of them at\n"
	"                  most)\n"
	"  PATH...         only these paths, and what is below them (in build\n"
	"                  output too)\n";

/* Lines added and removed in git diff TEXT, its headers apart. */
static void count_lines(const char *text, size_t *adds, size_t *dels)
{
	bool hunk = false;

	for (const char *l = text; l && *l;) {
		if (!strncmp(l, "@@ ", 3))
			hunk = true;
		else if (!strncmp(l, "diff --git ", 11))
			hunk = false;
		else if (hunk && *l == '+')
			++*adds;
		else if (hunk && *l == '-')
			++*dels;
		l = strchr(l, '\n');
		l = l ? l + 1 : NULL;
	}
}

/* git diff --stat's line of C: its path, how many lines changed and a
 * bar of that many + and - (at most 50), or "Bin" for a binary. */
static void print_stat(const struct ov_change *c, const char *text, size_t adds, size_t dels)
{
	char bar[51];
	size_t n = adds + dels, scale = n > 50 ? n : 50, k = 0;

	printf(" %s%s%s | ", c->from ? c->from : "", c->from ? " => " : "", c->path);
	if (strstr(text, "\nBinary files ")) {
		puts("Bin");
		return;
	}
	for (size_t i = 0; i < adds * 50 / scale; i++)
		bar[k++] = '+';
	for (size_t i = 0; i < dels * 50 / scale; i++)
		bar[k++] = '-';
	bar[k] = '\0';
	printf("%zu%s%s\n", n, k ? " " : "", bar);
}

/* ---- diff --format html: the review page (run/page.h) --------------------- */

/* Sections at most on the page, the rest named in its index only: as a
 * run's summary lists 200 files, so that 2,000 changes still make a page
 * of a few hundred KiB (docs/try.md). */
#define DIFF_PAGE_SECTIONS 200
/* The files the agent read that changed on the project since, named at
 * the top at most: sbx try status names them all. */
#define DIFF_PAGE_STALE 20

/* The page's entries: each change's diff and note, which its page_file
 * points into. */
struct diff_page {
	struct page_file *files;
	char **texts, **notes;
	size_t n;
	size_t kinds[4];   /* of the entries, conflicts by their kind */
	size_t build, git; /* changes left out: in build output, inside .git */
	long long adds, dels;
};

static void diff_page_free(struct diff_page *d)
{
	for (size_t i = 0; i < d->n; i++) {
		free(d->texts[i]);
		free(d->notes[i]);
	}
	free(d->files);
	free(d->texts);
	free(d->notes);
}

/* What the page says where an overlay's content is not shown: the run
 * reports' words say "never kept", and the layer keeps it. */
static const char *hidden_words(enum ov_hidden h)
{
	switch (h) {
	case OV_SECRET_NAME:
		return "Redacted by its name: it looks like a file that holds a secret (.env, "
		       "*token*, *.pem, id_rsa, ...), so its content is not shown.";
	case OV_SECRET_CONTENT:
		return "Redacted by its content: it holds what looks like a credential (a private "
		       "key, an API token), so its content is not shown.";
	case OV_BINARY:
		return "Binary content (a NUL byte in its first 8,000 bytes, as git judges) is "
		       "not shown.";
	case OV_SHOWN:
		break;
	}
	return NULL;
}

/* Adds change C, whose diff TEXT (LEN bytes, taken) ov_diff()
 * made, to D. */
static int diff_page_add(struct diff_page *d, const struct ov_change *c, char *text, size_t len,
			 enum ov_hidden hidden)
{
	static const enum page_kind kinds[] = { PAGE_ADDED, PAGE_MODIFIED, PAGE_DELETED,
						PAGE_RENAMED };
	static const enum page_why whys[] = { [OV_SHOWN] = PAGE_WHY_NONE,
					      [OV_SECRET_NAME] = PAGE_WHY_SECRET_NAME,
					      [OV_SECRET_CONTENT] = PAGE_WHY_SECRET_CONTENT,
					      [OV_BINARY] = PAGE_WHY_BINARY };
	bool type = ov_status_letter(c) == 'T';
	const char *word = type ? "type changed" : ov_kind_name(c->kind);
	size_t adds = 0, dels = 0;
	size_t i = d->n++;

	d->texts[i] = text;
	if (c->conflict && asprintf(&d->notes[i], "%s by the agent; %s", word, c->conflict) < 0) {
		d->notes[i] = NULL;
		return -ENOMEM;
	}
	if (hidden == OV_SHOWN)
		count_lines(text, &adds, &dels);
	d->kinds[c->kind]++;
	d->adds += (long long)adds;
	d->dels += (long long)dels;
	d->files[i] = (struct page_file){
		.path = c->path,
		.kind = c->conflict ? PAGE_CONFLICT : kinds[c->kind],
		.status = !c->conflict && type ? word : NULL,
		.from = c->from,
		.note = d->notes[i],
		.additions = hidden == OV_SHOWN ? (long long)adds : -1,
		.deletions = hidden == OV_SHOWN ? (long long)dels : -1,
		.size_before = c->in_project && S_ISREG(c->project.st_mode) ? c->project.st_size
									    : -1,
		.size_after = c->in_overlay && S_ISREG(c->overlay.st_mode) ? c->overlay.st_size
									   : -1,
		.diff = hidden == OV_SHOWN ? text : NULL,
		.diff_len = hidden == OV_SHOWN ? len : 0,
		.why = whys[hidden],
		.why_text = hidden_words(hidden),
	};
	return 0;
}

/* The changes A chooses of overlay O, into D, as try diff's text shows
 * them: build output counted apart unless asked for (its deletions
 * listed), .git counted apart, directories left out. Returns 0, or 1
 * after an error (said). */
static int diff_page_fill(const struct overlay *o, const struct review_args *a, struct diff_page *d)
{
	size_t n = o->review.n + 1;

	if (!(d->files = calloc(n, sizeof(*d->files))) || !(d->texts = calloc(n, sizeof(char *))) ||
	    !(d->notes = calloc(n, sizeof(char *)))) {
		fprintf(stderr, "sbx: try diff: %s\n", strerror(ENOMEM));
		return 1;
	}
	for (size_t i = 0; i < o->review.n; i++) {
		const struct ov_change *c = &o->review.v[i];
		if (!ov_chosen(c, a->paths, a->n_paths))
			continue;
		if (ov_in_git(c->path)) {
			d->git += !ov_is_dir(c);
			continue;
		}
		if (!a->all && !a->n_paths && ov_noise(c->path) && c->kind != OV_DELETED) {
			d->build += !ov_is_dir(c);
			continue;
		}
		char *text = NULL;
		size_t len = 0;
		enum ov_hidden hidden = OV_SHOWN;
		int e = ov_diff(&o->review, c, &text, &len, &hidden);
		if (e == 0 && text)
			e = diff_page_add(d, c, text, len, hidden);
		else if (e < 0)
			free(text);
		if (e < 0) {
			fprintf(stderr, "sbx: try diff: %s: %s\n", c->path, strerror(-e));
			return 1;
		}
	}
	return 0;
}

/* Writes the review page of overlay O's changes that A chooses on
 * stdout: the overlay's metadata at the top, conflicts first with their
 * reasons, every change named in the index. Returns an exit status. */
static int diff_html(const struct overlay *o, const struct review_args *a)
{
	struct diff_page d = { 0 };
	char title[PATH_MAX + 300], host[256] = "", made[32], took[48], age[64], now[32];
	char changes[160], conflicts[64], apart[200], unnamed[320], hint[300], rec[PATH_MAX];
	struct page_row rows[11], stale[DIFF_PAGE_STALE + 1];
	char more[64];
	size_t n = 0, nc = 0, ns = 0;
	struct stat st;
	struct timespec ts;
	int r = diff_page_fill(o, a, &d);

	if (r) {
		diff_page_free(&d);
		return r;
	}
	for (size_t i = 0; i < d.n; i++)
		nc += d.files[i].kind == PAGE_CONFLICT;
	snprintf(title, sizeof(title), "Changes of overlay %s of %s", o->name, o->project);
	rows[n++] = (struct page_row){ "overlay", o->name, NULL };
	rows[n++] = (struct page_row){ "project", o->project, NULL };
	rows[n++] = (struct page_row){ "user", o->user, NULL };
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t now_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	/* The overlay's record is made with the overlay: the layer's age. */
	if (home_thread_path(o->home, o->user, o->name, OVERLAY_RECORD, rec, sizeof(rec)) == 0 &&
	    lstat(rec, &st) == 0) {
		int64_t ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		report_time(ns, made, sizeof(made));
		report_duration(now_ns > ns ? now_ns - ns : 0, took, sizeof(took));
		snprintf(age, sizeof(age), "(%s ago)", took);
		rows[n++] = (struct page_row){ "made", made, age };
	}
	report_time(now_ns, now, sizeof(now));
	rows[n++] = (struct page_row){ "reviewed", now, "(against the project as it was then)" };
	if (gethostname(host, sizeof(host)) == 0) {
		host[sizeof(host) - 1] = '\0';
		rows[n++] = (struct page_row){ "host", host, NULL };
	}
	rows[n++] = (struct page_row){ "home", o->home, NULL };
	snprintf(changes, sizeof(changes),
		 "%zu file%s: %zu added, %zu modified, %zu deleted, %zu renamed", d.n,
		 d.n == 1 ? "" : "s", d.kinds[OV_ADDED], d.kinds[OV_MODIFIED], d.kinds[OV_DELETED],
		 d.kinds[OV_RENAMED]);
	rows[n++] = (struct page_row){ "changes", changes, NULL };
	snprintf(conflicts, sizeof(conflicts), "%zu", nc);
	rows[n++] = (struct page_row){ "conflicts", conflicts,
				       nc ? "(first below: sbx try apply leaves them out)" : NULL };
	/* Build output and .git: counted, said, not listed. */
	int k = 0, u = 0;
	apart[0] = unnamed[0] = '\0';
	if (d.build) {
		k = snprintf(apart, sizeof(apart), "%zu in build output", d.build);
		u = snprintf(unnamed, sizeof(unnamed),
			     "%zu in build output (node_modules, target, .venv...): --all lists"
			     " them.",
			     d.build);
	}
	if (d.git) {
		snprintf(apart + k, sizeof(apart) - (size_t)k, "%s%zu inside .git", k ? ", " : "",
			 d.git);
		snprintf(unnamed + u, sizeof(unnamed) - (size_t)u,
			 "%s%zu inside .git: a repository's internals are never applied as files.",
			 u ? " " : "", d.git);
	}
	if (d.build || d.git)
		rows[n++] = (struct page_row){ "not listed", apart, NULL };
	if (!strcmp(o->user, TRY_USER))
		snprintf(hint, sizeof(hint), "sbx try diff %s PATH prints the diff of PATH.",
			 o->name);
	else
		snprintf(hint, sizeof(hint),
			 "sbx try diff %s --user %s PATH prints the diff of PATH.", o->name,
			 o->user);
	/* What the agent's changes may rest on: not changes, so not in the
	 * index. */
	for (; ns < o->review.n_stale && ns < DIFF_PAGE_STALE; ns++)
		stale[ns] = (struct page_row){ "", o->review.stale[ns], NULL };
	if (o->review.n_stale > ns) {
		snprintf(more, sizeof(more), "and %zu more", o->review.n_stale - ns);
		stale[ns++] = (struct page_row){ "", more, "(sbx try status names them)" };
	}
	const struct page_section meta[] = {
		{ "Overlay", rows, n },
		{ "Read by the agent, changed on the project since", stale, ns },
	};
	struct page page = {
		.title = title,
		.sections = meta,
		.n_sections = ns ? 2 : 1,
		.additions = d.adds,
		.deletions = d.dels,
		.files = d.files,
		.n_files = d.n,
		.unnamed = (long long)(d.build + d.git),
		.unnamed_why = unnamed,
		.omitted_hint = hint,
		.listed_max = DIFF_PAGE_SECTIONS,
	};
	for (size_t i = 0; i < d.n; i++)
		page.counts[d.files[i].kind]++;
	r = page_render(stdout, &page);
	if (r < 0)
		fprintf(stderr, "sbx: try diff: cannot write the page: %s\n", strerror(-r));
	diff_page_free(&d);
	return r < 0 ? 1 : 0;
}

int cmd_try_diff(int argc, char **argv, const char *home)
{
	static const struct option extra[] = {
		{ "stat", no_argument, NULL, OPT_STAT },
		{ "name-status", no_argument, NULL, OPT_NAME_STATUS },
		{ "patch", no_argument, NULL, OPT_PATCH },
		{ "all", no_argument, NULL, OPT_ALL },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ NULL, 0, NULL, 0 },
	};
	struct review_args a = { 0 };
	struct overlay o;
	size_t hidden = 0, files = 0, adds = 0, dels = 0;
	int r = review_args_parse("try diff", diff_usage, argc, argv, home, extra,
				  sizeof(extra) / sizeof(*extra), &a);
	const char *format = a.format;

	if (r < 0 && strcmp(format, "text") && strcmp(format, "html"))
		r = usage_error("try diff", "--format takes text or html, not '%s'", format);
	if (r < 0 && !strcmp(format, "html") && (a.stat || a.name_status))
		r = usage_error("try diff", "--%s and --format html exclude each other",
				a.stat ? "stat" : "name-status");
	if (r < 0)
		r = overlay_open("try diff", a.home, a.user, a.name, &o);
	else
		o = (struct overlay){ .homefd = -1, .layer_fd = -1, .project_fd = -1 };
	if (r < 0 && !strcmp(format, "html"))
		r = diff_html(&o, &a);
	if (r >= 0) {
		free(a.paths);
		overlay_close(&o);
		return r;
	}
	for (size_t i = 0; i < o.review.n && r < 0; i++) {
		const struct ov_change *c = &o.review.v[i];
		if (!ov_chosen(c, a.paths, a.n_paths) || ov_in_git(c->path))
			continue;
		if (!a.all && !a.n_paths && ov_noise(c->path) && c->kind != OV_DELETED) {
			hidden += !ov_is_dir(c);
			continue;
		}
		_cleanup_(freep) char *text = NULL;
		size_t len = 0, fa = 0, fd = 0;
		int e = ov_diff(&o.review, c, &text, &len, NULL);
		if (e < 0) {
			fprintf(stderr, "sbx: try diff: %s: %s\n", c->path, strerror(-e));
			r = 1;
			break;
		}
		if (!text)
			continue; /* a directory */
		files++;
		count_lines(text, &fa, &fd);
		adds += fa;
		dels += fd;
		if (a.name_status && c->kind == OV_RENAMED)
			printf("R100\t%s\t%s\n", c->from, c->path);
		else if (a.name_status)
			printf("%c\t%s\n", ov_status_letter(c), c->path);
		else if (a.stat)
			print_stat(c, text, fa, fd);
		else
			fwrite(text, 1, len, stdout);
	}
	if (r < 0 && a.stat)
		printf(" %zu file%s changed, %zu insertion%s(+), %zu deletion%s(-)\n", files,
		       files == 1 ? "" : "s", adds, adds == 1 ? "" : "s", dels,
		       dels == 1 ? "" : "s");
	fflush(stdout); /* the note comes after what it is about */
	if (r < 0 && hidden)
		fprintf(stderr,
			"sbx: try diff: %zu more file%s changed in build output (node_modules,"
			" target, .venv...): --all shows them\n",
			hidden, hidden == 1 ? "" : "s");
	free(a.paths);
	overlay_close(&o);
	return r < 0 ? 0 : r;
}

/* ---- apply ---------------------------------------------------------------- */

static const char apply_usage[] =
	"Usage: sbx try apply NAME [--only PATH]... [--dry-run] [--all-or-nothing]\n"
	"                     [--3way] [--user ID] [--home DIR] [PATH...]\n"
	"\n"
	"Writes what the agent changed in overlay NAME to its project, file by\n"
	"file: each path is checked against what the agent first saw there\n"
	"(its origin) and against the review just before it is written, and a\n"
	"conflict is listed, never written (sbx try status says why). A file or\n"
	"symlink is published whole (made under a temporary name beside it, then\n"
	"renamed over its path), with its mode, owner where allowed, xattrs and\n"
	"times; deletions and renames are done, directories made and removed.\n"
	"A repository's internals (.git) are never written as files: the\n"
	"agent's commits the project lacks become its branches sbx-try/NAME/*\n"
	"(a git bundle made in the overlay's sandbox, fetched here). FIFOs,\n"
	"sockets and devices are skipped. An applied path's origin becomes what\n"
	"the apply left, so that the agent's next change of it is judged\n"
	"against that, and a second overlay's change of the same file is a\n"
	"conflict.\n"
	"An apply that writes is a run of the project's record (a thread of\n"
	"the user, applied-NAME-HASH, which it names): sbx run undo of it takes\n"
	"it back (from copies of what it replaced or removed, kept in the home),\n"
	"and an undo of that undo applies it again; a path changed since is a\n"
	"conflict. sbx runs --thread RECORD lists the applies to the project.\n"
	"  --only PATH, PATH...  only these paths and what is below them\n"
	"  --dry-run             say what would be applied; write nothing\n"
	"  --all-or-nothing      if any chosen change is a conflict, write none\n"
	"  --3way                a text file changed on both sides since the agent\n"
	"                        copied it is merged (diff3 -m) against the content\n"
	"                        the agent copied: the two sides' changes kept,\n"
	"                        conflict markers (<<<<<<< project, ||||||| origin,\n"
	"                        ======= , >>>>>>> overlay) where they overlap\n"
	"Exit status 0 if everything chosen was applied, 1 if a conflict or a\n"
	"failure kept one out, or a merge left conflict markers.\n";

/* Prints each change's outcome, but for those inside .git, counted in
 * *ARG (a size_t). */
/* The bundle of the agent's new commits, made in the sandbox, in its
 * thread's outputs (/mnt/user-data/outputs there). */
#define COMMITS_BUNDLE ".sbx-try-commits.bundle"

/* Runs ARGV (git ...) on the host, its output on stderr; its status. */
static int host_git(const char *const argv[])
{
	pid_t pid;
	int st;
	posix_spawn_file_actions_t fa;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO);
	int e = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (e || waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The agent's commits, offered as branches of the project: a git bundle
 * of those its repository has and the project has not, made in the
 * overlay's sandbox (where the agent's repository and its configuration
 * are), then fetched on the host as refs/heads/sbx-try/NAME/BRANCH.
 * Nothing of the agent's repository runs on the host: a bundle is data,
 * checked by git as a fetch checks any pack. Returns 0, or 1 (said). */
static int offer_commits(struct overlay *o)
{
	char refs[PATH_MAX + 64];
	snprintf(refs, sizeof(refs), "git -C '%s' for-each-ref --format='%%(objectname)'",
		 o->project);
	FILE *f = popen(refs, "r");
	if (!f) {
		fprintf(stderr, "sbx: try apply: cannot read %s's refs\n", o->project);
		return 1;
	}
	/* The sandbox's command: the bundle of what none of those reach. */
	char *cmd = NULL;
	size_t len = 0;
	FILE *c = open_memstream(&cmd, &len);
	char line[128];
	fprintf(c, "cd /mnt/user-data/workspace && git bundle create -q"
		   " /mnt/user-data/outputs/" COMMITS_BUNDLE " --branches --not");
	while (fgets(line, sizeof(line), f))
		if (strspn(line, "0123456789abcdef") >= 40)
			fprintf(c, " %.*s", (int)strspn(line, "0123456789abcdef"), line);
	pclose(f);
	fprintf(c, " 2>&1 | grep -v 'Refusing to create empty bundle' >&2;"
		   " test -f /mnt/user-data/outputs/" COMMITS_BUNDLE);
	fclose(c);
	char *args[] = { "exec", "--user", (char *)o->user, "--thread", (char *)o->name, "--",
			 cmd,	 NULL };
	struct client_conn *keep = NULL;
	int r = hold_broker("try apply", o->home, &keep) ? 1 : cmd_exec(7, args, o->home);
	client_close(keep);
	free(cmd);
	if (r != 0) {
		printf("the agent made no commits the project lacks\n");
		return 0;
	}
	/* The agent's file: opened without following a symlink it may have
	 * put there, and handed to git by its fd. */
	_cleanup_(closep) int out = home_thread_dir_open(o->homefd, o->user, o->name,
							 THREAD_OUTPUTS);
	_cleanup_(closep) int fd = out < 0 ? -1
					   : openat(out, COMMITS_BUNDLE, O_RDONLY | O_NOFOLLOW);
	struct stat st;
	char bundle[64], spec[128];
	snprintf(bundle, sizeof(bundle), "/dev/fd/%d", fd);
	snprintf(spec, sizeof(spec), "refs/heads/*:refs/heads/sbx-try/%s/*", o->name);
	const char *fetch[] = { "git",	   "-C",      o->project, "fetch", "--no-tags",
				"--quiet", "--force", bundle,	  spec,	   NULL };
	r = fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ? -1 : host_git(fetch);
	if (out >= 0)
		unlinkat(out, COMMITS_BUNDLE, 0);
	if (r != 0) {
		fprintf(stderr,
			"sbx: try apply: the agent's commits could not be fetched (git fetch"
			" exited %d)\n",
			r);
		return 1;
	}
	printf("the agent's commits: branches sbx-try/%s/* of the project (git log --branches="
	       "'sbx-try/%s/*')\n",
	       o->name, o->name);
	return 0;
}

static void say_outcome(void *arg, const struct ov_change *c, const char *outcome, const char *why)
{
	if (ov_in_git(c->path)) {
		++*(size_t *)arg;
		return;
	}
	if (c->from)
		printf("%-12s R %s -> %s%s%s\n", outcome, c->from, c->path, why ? ": " : "",
		       why ? why : "");
	else
		printf("%-12s %c %s%s%s%s\n", outcome, ov_status_letter(c), c->path,
		       ov_is_dir(c) ? "/" : "", why ? ": " : "", why ? why : "");
}

int cmd_try_apply(int argc, char **argv, const char *home)
{
	static const struct option extra[] = {
		{ "only", required_argument, NULL, OPT_ONLY },
		{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
		{ "all-or-nothing", no_argument, NULL, OPT_ALL_OR_NOTHING },
		{ "3way", no_argument, NULL, OPT_3WAY },
		{ NULL, 0, NULL, 0 },
	};
	struct review_args a;
	struct overlay o;
	struct ov_applied done;
	size_t git = 0;
	int r = review_args_parse("try apply", apply_usage, argc, argv, home, extra,
				  sizeof(extra) / sizeof(*extra), &a);

	if (r < 0)
		r = overlay_open("try apply", a.home, a.user, a.name, &o);
	else
		o = (struct overlay){ .homefd = -1, .layer_fd = -1, .project_fd = -1 };
	if (r < 0) {
		struct ov_apply how = {
			.only = a.paths,
			.n_only = a.n_paths,
			.dry_run = a.dry_run,
			.all_or_nothing = a.all_or_nothing,
			.three_way = a.three_way,
			.s = o.s,
			.user = o.user,
			.thread = o.name,
			.home = o.home,
			.project = o.project,
			.say = say_outcome,
			.arg = &git,
		};
		struct error e;
		if (ov_apply(&o.review, &how, &done, &e) < 0) {
			fprintf(stderr, "sbx: try apply: %s\n", e.text);
			r = 1;
		} else {
			printf("%zu %s", done.applied, a.dry_run ? "would be applied" : "applied");
			if (done.merged)
				printf(" (%zu merged, %zu with conflict markers)", done.merged,
				       done.marked);
			printf(", %zu conflict%s, %zu skipped, %zu failed\n", done.conflicts,
			       done.conflicts == 1 ? "" : "s", done.skipped - git, done.failed);
			if (done.run && done.applied)
				printf("recorded as run %lld of %s/%s: sbx run undo %lld takes it"
				       " back\n",
				       (long long)done.run, o.user, done.record,
				       (long long)done.run);
			if (git)
				printf("%zu file%s changed inside .git not applied: a repository's"
				       " internals are never applied as files\n",
				       git, git == 1 ? "" : "s");
			if (git && !a.dry_run && !a.n_paths && offer_commits(&o))
				done.failed++;
			r = done.conflicts || done.failed || done.marked ? 1 : 0;
		}
	}
	free(a.paths);
	overlay_close(&o);
	return r;
}

/* ---- discard -------------------------------------------------------------- */

static const char discard_usage[] =
	"Usage: sbx try discard NAME [--force] [--user ID] [--home DIR]\n"
	"\n"
	"Drops overlay NAME: its layer (everything the agent changed that was\n"
	"not applied) and its records of origins. The project is untouched. An\n"
	"overlay with a mounted view is refused unless --force, which unmounts\n"
	"its views first (as sbx umount does: one a sandbox still uses is\n"
	"refused).\n";

static void no_view(const char *mountpoint, void *arg)
{
	(void)mountpoint;
	(void)arg;
}

static void umount_view(const char *mountpoint, void *arg)
{
	struct overlay *o = arg;
	char *args[] = { "umount", (char *)mountpoint, NULL };

	cmd_umount(2, args, o->home);
}

int cmd_try_discard(int argc, char **argv, const char *home)
{
	static const struct option extra[] = {
		{ "force", no_argument, NULL, OPT_FORCE },
		{ NULL, 0, NULL, 0 },
	};
	struct review_args a;
	struct overlay o;
	int r = review_args_parse("try discard", discard_usage, argc, argv, home, extra,
				  sizeof(extra) / sizeof(*extra), &a);

	if (r < 0)
		r = overlay_open("try discard", a.home, a.user, a.name, &o);
	else
		o = (struct overlay){ .homefd = -1, .layer_fd = -1, .project_fd = -1 };
	if (r < 0) {
		int views = viewreg_each(o.homefd, o.user, o.name, no_view, NULL);
		if (views > 0 && a.force)
			viewreg_each(o.homefd, o.user, o.name, umount_view, &o);
		if (viewreg_each(o.homefd, o.user, o.name, no_view, NULL) > 0) {
			fprintf(stderr,
				"sbx: try discard: %s is in use: a view of it is mounted%s\n",
				o.name, a.force ? " still" : " (--force unmounts it)");
			r = 1;
		}
	}
	if (r < 0) {
		int e = ov_discard(o.homefd, o.s, o.user, o.name);
		if (e < 0) {
			fprintf(stderr, "sbx: try discard: %s: %s\n", o.name, strerror(-e));
			r = 1;
		} else {
			printf("discarded %s (the overlay of %s)\n", o.name, o.project);
			r = 0;
		}
	}
	free(a.paths);
	overlay_close(&o);
	return r;
}
