/* store.c - sbx store: where a home's records are kept, whether they can
 * be used and are sound, their schema brought forward, a copy of them
 * (docs/configuration.md, "The store"). */
#include "args.h"
#include "cli.h"
#include "store/store.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* S in single quotes for a shell, a quote in it as '\''. */
static void shell_quote(FILE *out, const char *s)
{
	fputc('\'', out);
	for (; *s; s++)
		if (*s == '\'')
			fputs("'\\''", out);
		else
			fputc(*s, out);
	fputc('\'', out);
}

static const char store_usage[] =
	"Usage: sbx store check|migrate [--home DIR] [--store STORE]\n"
	"       sbx store backup [--force] FILE [--home DIR] [--store STORE]\n"
	"\n"
	"  check    say where the home's records are kept (sqlite: HOME/sbx.db, or\n"
	"           a PostgreSQL server, its password hidden), whether the store\n"
	"           answers, its schema version against this sbx's, and whether it\n"
	"           is sound: SQLite's integrity_check and foreign_key_check, or on\n"
	"           PostgreSQL amcheck where the database has it (it says what it\n"
	"           checked); each problem found and how to recover; exit 1 if it\n"
	"           cannot be used as it is (unreachable, refused, newer, damaged)\n"
	"  migrate  bring the store's schema to this sbx's version (made if it\n"
	"           has none); every program does so when it opens the store,\n"
	"           this does it ahead, and says from which version\n"
	"  backup   copy the store, consistent while views write (SQLite's online\n"
	"           backup), to the new file FILE: made beside it, put in place\n"
	"           whole; --force replaces an existing FILE. A PostgreSQL store is\n"
	"           pg_dump's to copy: this prints the command\n"
	"The store is --store, else $SBX_STORE, else store in HOME/sbx.conf,\n"
	"else sqlite.\n";

static void damaged(void *arg, const char *line)
{
	(void)arg;
	fprintf(stderr, "sbx: store: damaged: %s\n", line);
}

/* The integrity of the store at TARGET (SHOWN): 0 if sound, else 1 with
 * each problem and how to recover said. */
static int check_integrity(const char *target, const char *shown, bool postgres)
{
	char checked[1024], err[1024];
	int n = store_check(target, damaged, NULL, checked, sizeof(checked), err, sizeof(err));

	if (n < 0) {
		fprintf(stderr, "sbx: store: %s: %s\n", shown, err);
		return 1;
	}
	if (n == 0) {
		printf("integrity: ok (%s)\n", checked);
		return 0;
	}
	fprintf(stderr, "sbx: store: %d problem%s found (%s)\n", n, n == 1 ? "" : "s", checked);
	if (postgres)
		fprintf(stderr,
			"sbx: store: to recover: restore the database from a copy (pg_dump's,"
			" with pg_restore), or rebuild a damaged index (REINDEX INDEX"
			" name); then sbx store check again\n");
	else
		fprintf(stderr,
			"sbx: store: to recover: stop the home's views and brokers (sbx umount),"
			" then put a copy made before the damage in its place (sbx store backup"
			" makes one), or salvage what can be read: sqlite3 %s .recover | sqlite3"
			" %s.recovered, and move that in its place; then sbx store check again\n",
			target, target);
	return 1;
}

/* sbx store backup: a copy of the SQLite store at TARGET in FILE; for
 * a PostgreSQL store, the pg_dump command that makes one. */
static int backup(const char *target, const char *file, bool force)
{
	char err[PATH_MAX + 256], conn[STORE_TARGET_MAX];
	struct stat st;

	if (store_target_is_postgres(target)) {
		store_target_public(target, conn, sizeof(conn));
		fprintf(stderr,
			"sbx: store: a PostgreSQL store is copied by pg_dump (consistent while"
			" views write; the password from ~/.pgpass or PGPASSWORD):\n"
			"pg_dump --format=custom --file=");
		shell_quote(stderr, file);
		fputs(" ", stderr);
		shell_quote(stderr, conn);
		fputs("\n", stderr);
		return 1;
	}
	if (store_backup(target, file, force, err, sizeof(err)) < 0) {
		fprintf(stderr, "sbx: store: %s\n", err);
		return 1;
	}
	printf("copied %s to %s (%lld bytes)\n", target, file,
	       stat(file, &st) == 0 ? (long long)st.st_size : 0LL);
	return 0;
}

int cmd_store(int argc, char **argv, const char *home)
{
	char buf[PATH_MAX], target[STORE_TARGET_MAX], shown[STORE_TARGET_MAX], err[1024];
	const char *what = NULL, *file = NULL;
	bool postgres, force = false;
	int r, version;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(store_usage, stdout);
			return 0;
		}
		if ((r = take_home(argc, argv, &i, &home)) < 0)
			return usage_error("store", "--home needs a directory");
		if (r)
			continue;
		/* --force is backup's: check and migrate do not know it. */
		if (!strcmp(argv[i], "--force") && (!what || !strcmp(what, "backup")))
			force = true;
		else if (argv[i][0] == '-')
			return usage_error("store", "unrecognized option '%s'", argv[i]);
		else if (!what && (!strcmp(argv[i], "check") || !strcmp(argv[i], "migrate") ||
				   !strcmp(argv[i], "backup")))
			what = argv[i];
		else if (what && !strcmp(what, "backup") && !file)
			file = argv[i];
		else
			return usage_error("store",
					   "expected check, migrate or backup FILE, not '%s'",
					   argv[i]);
	}
	if (!what)
		return usage_error("store", "expected check, migrate or backup FILE");
	if (!strcmp(what, "backup") && !file)
		return usage_error("store", "backup needs the FILE to copy the store to");
	if (force && !file)
		return usage_error("store", "--force is backup's");
	bool migrate = !strcmp(what, "migrate");
	if (resolve_home("store", home, buf, sizeof(buf)) < 0)
		return 2;
	if ((r = store_where(buf, target, sizeof(target), err, sizeof(err))) < 0) {
		fprintf(stderr, "sbx: store: %s\n", err);
		return 1;
	}
	if (file)
		return backup(target, file, force);
	store_target_shown(target, shown, sizeof(shown));
	if ((r = store_probe(target, &version, &postgres, err, sizeof(err))) < 0) {
		fprintf(stderr, "sbx: store: %s: %s\n", shown, err);
		return 1;
	}
	printf("store: %s %s\n", postgres ? "postgresql" : "sqlite", shown);
	printf("schema: version %d; this sbx: %d\n", version, STORE_SCHEMA_VERSION);
	if (version > STORE_SCHEMA_VERSION) {
		fprintf(stderr, "sbx: store: a newer sbx wrote it: this one refuses it\n");
		return 1;
	}
	if (!migrate) {
		if (version < STORE_SCHEMA_VERSION)
			printf("%s\n",
			       version ? "sbx store migrate (or any program) brings it forward"
				       : "empty: made at the first use (or sbx store migrate)");
		return version ? check_integrity(target, shown, postgres) : 0;
	}
	struct store *s;
	if (store_open_target(target, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "sbx: store: %s: %s\n", shown, err);
		return 1;
	}
	int now = store_schema_version(s);
	store_close(s);
	if (now == version)
		printf("nothing to do\n");
	else
		printf("migrated: version %d to %d\n", version, now);
	return 0;
}
