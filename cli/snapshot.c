/* snapshot.c - sbx snapshot: scan a thread's workspace and outputs by the
 * reference rules (store/snapshot.h), record the result in the store and
 * print it. */
#include "args.h"
#include "cli.h"
#include "run/lookup.h"
#include "common/progress.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/hash.h"
#include "common/quote.h"
#include "store/snapshot.h"
#include "store/store.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char snapshot_usage[] =
	"Usage: sbx snapshot --user ID --thread ID [--max-files N]\n"
	"                    [--format text|json] [--home DIR]\n"
	"\n"
	"Scans the thread's user-data/workspace, then user-data/outputs, as a\n"
	"change summary does, records the snapshot in the store and prints it.\n"
	"\n"
	"Rules: a sorted walk (in each directory its files, then its\n"
	"subdirectories); directories named .git .hg .svn .cache .mcp .next\n"
	".venv .browser-frames .tool-results __pycache__ build dist\n"
	"node_modules are skipped at any depth; symlinks are recorded, never\n"
	"followed; sensitive-looking names (.env, *token*, *.pem, id_rsa, ...)\n"
	"are recorded without reading them, texts holding a private key or an\n"
	"API token (docs/changes.md) without a hash; binary files (by\n"
	"extension, a NUL byte or invalid UTF-8) and files over 256 KiB\n"
	"(\"large\") are metadata only; other files up to 256 KiB get a\n"
	"SHA-256. A file that vanishes while it is scanned is left out.\n"
	"\n"
	"  --max-files N   record at most N files (default 2000); with more the\n"
	"                  snapshot is marked truncated\n"
	"  --format text   a summary line, then one line per file (default)\n"
	"  --format json   {\"id\", \"truncated\", \"files\": [{path, root, kind, size,\n"
	"                  mtime_ns, sha256, binary, sensitive, large, target}]}\n";

static void show_progress(void *arg, size_t files)
{
	scan_progress_show(arg, files);
}

static const char *kind_of(const struct snap_file *f)
{
	return f->symlink     ? "symlink"
	       : f->sensitive ? "sensitive"
	       : f->binary    ? "binary"
	       : f->large     ? "large"
			      : "text";
}

static void print_text(int64_t id, const char *user, const char *thread, const struct snapshot *s,
		       double secs)
{
	char sha[65], path[QUOTE_MAX], target[QUOTE_MAX];

	printf("snapshot %lld of %s/%s: %zu files%s, %.1f MB hashed in %.2f s\n", (long long)id,
	       user, thread, s->n, s->truncated ? " (truncated: more files than --max-files)" : "",
	       (double)s->bytes_hashed / 1e6, secs);
	for (size_t i = 0; i < s->n; i++) {
		const struct snap_file *f = &s->files[i];

		if (f->hashed)
			sha256_hex(f->sha256, sha);
		printf("%-9s %10lld  %.12s  %s%s%s\n", kind_of(f), (long long)f->size,
		       f->hashed ? sha : "-", quote_name(f->path, path, sizeof(path)),
		       f->symlink ? " -> " : "",
		       f->symlink ? quote_name(f->target, target, sizeof(target)) : "");
	}
}

static int print_json(int64_t id, const struct snapshot *s)
{
	json_auto_t *doc = json_pack("{s:I, s:b, s:[]}", "id", (json_int_t)id, "truncated",
				     s->truncated, "files");
	json_t *files = doc ? json_object_get(doc, "files") : NULL;
	char sha[65];

	if (!files)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++) {
		const struct snap_file *f = &s->files[i];

		if (f->hashed)
			sha256_hex(f->sha256, sha);
		json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:I, s:o, s:b, s:b, s:b, s:o}", "path",
				      f->path, "root", f->root, "kind",
				      f->symlink ? "symlink" : "file", "size", (json_int_t)f->size,
				      "mtime_ns", (json_int_t)f->mtime_ns, "sha256",
				      f->hashed ? json_string(sha) : json_null(), "binary",
				      f->binary, "sensitive", f->sensitive, "large", f->large,
				      "target", f->symlink ? json_string(f->target) : json_null());
		if (!o || json_array_append_new(files, o) < 0)
			return -ENOMEM;
	}
	if (json_dumpf(doc, stdout, JSON_INDENT(2)) < 0)
		return -EIO;
	putchar('\n');
	return 0;
}

int cmd_snapshot(int argc, char **argv, const char *home)
{
	struct thread_roots roots;
	struct scan_progress prog;
	char err[PATH_MAX + 256];
	struct thread_args a;
	struct snapshot snap;
	struct timespec t0, t1;
	struct store *s;
	int64_t id;
	int r = thread_args_parse("snapshot", snapshot_usage, argc, argv, home,
				  THREAD_ARGS_MAX_FILES | THREAD_ARGS_FORMAT, &a);

	if (r >= 0)
		return r;
	size_t max = a.max_files > 0 ? (size_t)a.max_files : SNAPSHOT_MAX_FILES;
	struct error e;
	if (thread_roots_open(a.home, a.user, a.thread, &roots, &e) < 0)
		return say_error("snapshot", &e);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	scan_progress_init(&prog);
	r = snapshot_take(roots.ws, roots.out, max, NULL, show_progress, NULL, &prog, &snap);
	thread_roots_close(&roots);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	scan_progress_done(&prog);
	if (r < 0) {
		fprintf(stderr, "sbx: snapshot: cannot scan %s/%s: %s\n", a.user, a.thread,
			strerror(-r));
		return 1;
	}
	if (store_open(a.home, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "sbx: snapshot: %s\n", err);
		snapshot_free(&snap);
		return 1;
	}
	if (thread_fence(a.home, s, a.user, a.thread, &e) < 0) {
		store_close(s);
		snapshot_free(&snap);
		return say_error("snapshot", &e);
	}
	r = store_snapshot_save(s, a.user, a.thread, &snap, max, realtime_ns(), &id);
	store_close(s);
	if (r < 0) {
		fprintf(stderr, "sbx: snapshot: cannot record the snapshot: %s\n", strerror(-r));
		snapshot_free(&snap);
		return 1;
	}
	if (a.json)
		r = print_json(id, &snap);
	else
		print_text(id, a.user, a.thread, &snap,
			   (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	snapshot_free(&snap);
	return r < 0 || fflush(stdout) != 0 ? 1 : 0;
}
