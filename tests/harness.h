/* harness.h - helpers shared by the test suites.
 *
 * Integration tests mount real views. Every view is mounted under
 * $SBX_TEST_DIR (made by tests/run-tests, which also unmounts whatever is
 * left there when the run ends, even after a crash), and each suite's
 * fixture unmounts its own views in teardown.
 */
#ifndef SBX_TEST_HARNESS_H
#define SBX_TEST_HARNESS_H

#include <check.h>
#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

struct tview {
	char home[PATH_MAX]; /* $SBX_HOME of this view */
	char mnt[PATH_MAX];  /* mount point */
	char user[64], thread[64];
	bool mounted;
};

/* A fresh directory under $SBX_TEST_DIR named after TAG, as a heap string
 * the test may leak (each test runs in its own process). */
const char *test_dir(const char *tag);

/* Path of a program in the build's bin directory ($SBX_BIN). */
const char *test_bin(const char *prog);

/* Mounts a view of USER/THREAD with home HOME (NULL: a fresh one) at a
 * fresh mount point; EXTRA are more sbxfs arguments (NULL-terminated, may
 * be NULL). Returns sbxfs's exit status (0 on success). */
int tview_mount(struct tview *v, const char *home, const char *user, const char *thread,
		const char *const *extra);
/* The same at the directory MNT. */
int tview_mount_at(struct tview *v, const char *mnt, const char *home, const char *user,
		   const char *thread, const char *const *extra);
void tview_umount(struct tview *v);
/* Until V's daemon has taken every content hash and stored every event
 * queued so far (the user.sbxfs.sync control): a sync point, not a
 * sleep. */
void tview_sync(const struct tview *v);
/* Unmounts and waits (up to 5 s) until the daemon has logged its exit, so
 * everything it had to write is written. Returns 0, or -1 on timeout. */
int tview_umount_wait(struct tview *v);

/* "MNT/REL" and "HOME/users/U/threads/T/REL" (host backing path). Each
 * call returns a new heap string that the test may leak. */
char *vpath(const struct tview *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *hpath(const struct tview *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The same below user-data/workspace: "MNT/user-data/workspace/REL" and
 * its host backing path. */
char *ws_of(const struct tview *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *hws_of(const struct tview *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Runs "sh -c CMD" and returns its exit status (-1 if it did not exit). */
int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Writes/reads a whole small file; read returns a heap string or NULL. */
int write_file(const char *path, const char *content);
int append_file(const char *path, const char *content);
char *read_file(const char *path);
bool exists(const char *path);

/* Polls until CHECK(ARG) holds: true, or false after EVENTUALLY_S.
 * That a change shows is a test's business; how fast is a benchmark's:
 * on a loaded machine any tight bound flakes. The bound only has to
 * be far below the view's long cache (an hour) for a change that shows
 * to prove the host watch made it show. */
#define EVENTUALLY_S 10
bool eventually(bool (*check)(const char *), const char *arg);
/* ARG is "PID": true once that process has exited (gone, or a zombie:
 * a daemon's parent may not reap it). */
bool has_exited_pid(const char *arg);
/* ARG is "DIR/NAME": true if NAME is (is not) in the listing of DIR. */
bool is_listed(const char *arg);
bool is_unlisted(const char *arg);

/* A throw-away PostgreSQL server (tests/tools/pgserver): pg_server_up()
 * starts one for the test process (an unchecked fixture: in the parent,
 * before its tests fork), pg_server_down() stops it; run-tests stops any
 * left behind. pg_database() makes a fresh database on it for the
 * calling test and returns its conninfo. */
void pg_server_up(void);
/* The same outside a test (main): 0, or -1 (pgserver said why). */
int pg_server_start(void);
void pg_server_down(void);
const char *pg_database(void);
/* Restarts the server: its clients lose their connections. */
void pg_server_restart(void);
/* Stops it (immediately) until pg_server_restart(). */
void pg_server_stop(void);
/* Sends signal SIG ("STOP", "CONT") to the server and its backends: a
 * server that does not answer at all, then answers again. */
void pg_server_signal(const char *sig);
/* Whether the integration tests run on PostgreSQL (SBX_TEST_STORE=
 * postgresql: run-tests' second pass of the store's suites); then
 * test_home_store() gives the new home HOME a database of its own (its
 * sbx.conf names it), and does nothing otherwise. */
bool pg_mode(void);
void test_home_store(const char *home);

/* Suites. */
Suite *suite_unit_names(void);
Suite *suite_unit_ids(void);
Suite *suite_unit_cleanup(void);
Suite *suite_unit_lockcheck(void);
Suite *suite_unit_quote(void);
Suite *suite_unit_page(void);
Suite *suite_unit_log(void);
Suite *suite_unit_paths(void);
Suite *suite_unit_inode(void);
Suite *suite_view_layout(void);
Suite *suite_view_posix(void);
Suite *suite_view_confine(void);
Suite *suite_view_lifecycle(void);
Suite *suite_view_tools(void);
Suite *suite_view_gate(void);
Suite *suite_view_stage(void);
Suite *suite_view_quota(void);
Suite *suite_view_snapshot(void);
Suite *suite_view_runs(void);
Suite *suite_view_undo(void);
Suite *suite_view_undo_crash(void);
Suite *suite_view_broker(void);
Suite *suite_mcp_protocol(void);
Suite *suite_cli(void);
Suite *suite_serve(void);
Suite *suite_aio(void);
Suite *suite_view_differential(void);
Suite *suite_view_faults(void);
Suite *suite_view_escape(void);
Suite *suite_view_skills(void);
Suite *suite_view_try(void);
Suite *suite_view_try_review(void);
Suite *suite_sandbox(void);
Suite *suite_mcp(void);
Suite *suite_unit_gate(void);
Suite *suite_unit_store(void);
Suite *suite_unit_snapshot(void);
Suite *suite_unit_diff(void);
Suite *suite_unit_summary(void);
Suite *suite_unit_runlog(void);
Suite *suite_unit_exec(void);
Suite *suite_unit_config(void);
Suite *suite_unit_filetool(void);
Suite *suite_unit_aiotool(void);
Suite *suite_view_filetool(void);
Suite *suite_view_watch(void);
Suite *suite_view_hosts(void);
Suite *suite_valgrind(void);
Suite *suite_sanitizers(void);

#endif
