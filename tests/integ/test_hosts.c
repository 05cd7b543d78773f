/* Several hosts on one store (store/lease.h, fs/owner.h): views of one
 * home mounted as two hosts (--host a, --host b) share its store and its
 * backing directory, as hosts of a deployment share a PostgreSQL server
 * and a filesystem. A thread is mounted on one host at a time; another
 * takes it over once the holder's lease expired (a crash, a partition:
 * SIGKILL, SIGSTOP), and a holder that comes back after that is fenced:
 * the store refuses its rows and it unmounts. Run on both engines
 * (run-tests: view_hosts@postgresql). */
#include "tests/cmd.h"
#include "tests/harness.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

/* A home whose leases last LEASE seconds (renewed every third of it),
 * with sbx.conf's EXTRA lines. */
static const char *hosts_home(const char *lease, const char *extra)
{
	const char *home = test_dir("home");
	char *conf = fmt_cmd("%s/sbx.conf", home);

	test_home_store(home);
	ck_assert_int_eq(append_file(conf, fmt_cmd("lease = %s\n%s", lease, extra ? extra : "")),
			 0);
	return home;
}

/* Mounts USER/THREAD of HOME as host HOST; sbxfs's exit status. */
static int mount_as(struct tview *v, const char *home, const char *thread, const char *host,
		    const char *wait)
{
	const char *extra[] = { "--host", host, wait ? "--lease-wait" : NULL, wait, NULL };

	return tview_mount(v, home, "u", thread, extra);
}

/* The pid of the daemon serving V (the lease row's: it took it). */
static pid_t daemon_of(const struct tview *v)
{
	char *out = OUT("tests/tools/sbxsql '%s' \"SELECT pid FROM leases WHERE thread = '%s'\"",
			v->home, v->thread);
	pid_t pid = (pid_t)atoi(out);

	ck_assert_int_gt(pid, 1);
	return pid;
}

static bool is_mounted(const char *mnt)
{
	char *line = fmt_cmd("grep -q ' %s ' /proc/mounts", mnt);
	bool r = sh("%s", line) == 0;

	free(line);
	return r;
}

static bool is_not_mounted(const char *mnt)
{
	return !is_mounted(mnt);
}

/* The journal's paths of THREAD, in the order written, a line each. */
static char *journal_paths(const char *home, const char *thread)
{
	return OUT("tests/tools/sbxsql '%s' \"SELECT path FROM journal WHERE thread = '%s'"
		   " AND op = 'create' ORDER BY id\" | sed 's|.*/||'",
		   home, thread);
}

/* ARG is "HOME|THREAD|NAME": true once the journal has a create of NAME. */
/* What SQL (a count) says in HOME's store; -1 if it cannot be read. */
static long sql_count(const char *home, const char *sql)
{
	char *cmd = fmt_cmd("tests/tools/sbxsql '%s' \"%s\"", home, sql);
	int st;
	char *out = capture(cmd, &st);
	long n = st == 0 && out[0] ? atol(out) : -1;

	free(cmd);
	free(out);
	return n;
}

/* "HOME|THREAD|NAME": whether the journal has a row of a file NAME. */
static bool journal_has(const char *arg)
{
	char home[PATH_MAX], thread[64], name[64];

	if (sscanf(arg, "%4095[^|]|%63[^|]|%63s", home, thread, name) != 3)
		return false;
	char *sql =
		fmt_cmd("SELECT count(*) FROM journal WHERE thread = '%s' AND path LIKE '%%/%s'",
			thread, name);
	bool r = sql_count(home, sql) > 0;

	free(sql);
	return r;
}

/* One host at a time: another is refused (exit 75, naming the holder)
 * and sbx run begin there too; the holder's other view shares its
 * lease; given back at the unmount, the thread passes at once, with a
 * greater token; sbx hosts says who holds what. */
START_TEST(test_hosts_one_at_a_time)
{
	const char *home = hosts_home("2", NULL), *sbx = fmt_cmd("%s", test_bin("sbx"));
	struct tview a, a2, b;
	int st;

	ck_assert_int_eq(mount_as(&a, home, "t", "a", NULL), 0);
	char *err = fmt_cmd("%s/err", test_dir("out"));
	char *out = capture(fmt_cmd("'%s' --home '%s' --user u --thread t --host b '%s' 2>'%s'",
				    test_bin("sbxfs"), home, test_dir("mnt"), err),
			    &st);
	ck_assert_int_eq(st, 75);
	ck_assert_msg(strstr(read_file(err), "u/t is mounted on host a (pid "), "%s",
		      read_file(err));
	out = capture(fmt_cmd("SBX_HOST=b '%s' --home '%s' run begin --user u --thread t 2>&1", sbx,
			      home),
		      &st);
	ck_assert_msg(st == 1, "exit %d: %s", st, out);
	ck_assert_msg(strstr(out, "u/t is mounted on host a, not this one (b)"), "%s", out);
	ck_assert_int_eq(mount_as(&a2, home, "t", "a", NULL), 0); /* a's own: shared */
	out = OUT("'%s' hosts --home '%s' | awk 'NR <= 2 { print $1, $2, $3, $4; next } 1'", sbx,
		  home);
	SAME(out, "HOST USER/THREAD TOKEN STATE\n"
		  "a u/t 1 live\n"
		  "1 live lease; max-views: none\n");
	out = OUT("'%s' hosts --home '%s' --format json | python3 tests/tools/jsonq.py"
		  " --run 'print(d[\"leases\"][0][\"views\"])'",
		  sbx, home);
	SAME(out, "2\n");
	/* both gone: the last one's unmount gives the lease back */
	ck_assert_int_eq(tview_umount_wait(&a2), 0);
	ck_assert_int_eq(mount_as(&b, home, "t", "b", NULL), 75);
	ck_assert_int_eq(tview_umount_wait(&a), 0);
	ck_assert_int_eq(mount_as(&b, home, "t", "b", NULL), 0);
	out = OUT(
		"'%s' hosts --home '%s' --format json | python3 tests/tools/jsonq.py"
		" --run 'l = d[\"leases\"][0]; print(l[\"host\"], l[\"token\"], l[\"state\"], d[\"live\"])'",
		sbx, home);
	SAME(out, "b 2 live 1\n");
	OK("echo b > '%s'", ws_of(&b, "made-by-b"));
	tview_umount(&b);
}
END_TEST

/* A host crashes while its command writes (kill -9 of the view and the
 * writer): the other host waits for the lease to expire and takes the
 * thread over; in the journal every row of the dead owner comes before
 * the new owner's first one. */
START_TEST(test_hosts_take_over_after_a_crash)
{
	const char *home = hosts_home("2", NULL);
	struct tview a, b;

	ck_assert_int_eq(mount_as(&a, home, "t", "a", NULL), 0);
	pid_t daemon = daemon_of(&a), writer = fork();
	if (writer == 0) {
		for (int i = 0;; i++) {
			char *p = ws_of(&a, "a-%d", i);
			if (write_file(p, "a\n") < 0)
				_exit(0);
			free(p);
		}
	}
	ck_assert_int_gt(writer, 0);
	ck_assert(eventually(journal_has, fmt_cmd("%s|t|a-5", home)));
	kill(writer, SIGKILL);
	kill(daemon, SIGKILL);
	waitpid(writer, NULL, 0);
	ck_assert_int_eq(mount_as(&b, home, "t", "b", "10"), 0);
	OK("echo b > '%s' && echo b > '%s'", ws_of(&b, "b-1"), ws_of(&b, "b-2"));
	tview_sync(&b);
	char *paths = journal_paths(home, "t");
	char *b1 = strstr(paths, "b-1\n");
	ck_assert_msg(b1 && !strstr(b1, "a-"), "a's rows after b's:\n%s", paths);
	ck_assert_msg(!strncmp(paths, "a-0\n", 4), "a's rows are missing:\n%s", paths);
	tview_umount(&b);
	umount2(a.mnt, MNT_DETACH);
}
END_TEST

/* Each thread of process PID: its name, where it waits, its kernel
 * stack (what a hung daemon shows). */
static char *threads_of(pid_t pid)
{
	int st;

	return capture(
		fmt_cmd("for t in /proc/%d/task/*; do echo \"$(cat $t/comm): $(cat $t/wchan)\";"
			" cat $t/stack; done 2>&1",
			(int)pid),
		&st);
}

/* True once the log at PATH says its view unmounted for its lease. */
static bool says_it_lost_its_lease(const char *path)
{
	char *log = read_file(path);
	bool r = log && strstr(log, "it lost its thread's lease");

	free(log);
	return r;
}

/* A partition (the holder's daemon stopped: no heartbeat): the other
 * host takes the thread over once the lease expired; the stale holder,
 * back, unmounts, saying why; what it still did meanwhile reaches no
 * journal row. */
START_TEST(test_hosts_stale_owner_is_fenced)
{
	const char *home = hosts_home("2", NULL);
	struct tview a, b;

	ck_assert_int_eq(mount_as(&a, home, "t", "a", NULL), 0);
	OK("echo a > '%s'", ws_of(&a, "a-before"));
	tview_sync(&a);
	pid_t daemon = daemon_of(&a);
	ck_assert_int_eq(kill(daemon, SIGSTOP), 0);
	ck_assert_int_eq(mount_as(&b, home, "t", "b", "10"), 0);
	OK("echo b > '%s'", ws_of(&b, "b-after"));
	tview_sync(&b);
	ck_assert_int_eq(kill(daemon, SIGCONT), 0);
	/* It may still serve this, or be gone: either way no row of it.
	 * Twice (CI, PostgreSQL; here under the sanitizers, SQLite) this
	 * test timed out right here: a daemon that neither answers nor ends
	 * holds the write for ever. So it is bounded, and a view that did
	 * not end shows its daemon's threads. */
	sh("timeout 60 sh -c \"echo a > '%s'\" 2>/dev/null", ws_of(&a, "a-late"));
	ck_assert_msg(eventually(is_not_mounted, a.mnt), "the stale view did not end:\n%s",
		      threads_of(daemon));
	/* its last line comes after the unmount */
	char *path = fmt_cmd("%s/log/sbxfs-u-t.log", home);
	ck_assert(eventually(says_it_lost_its_lease, path));
	char *log = read_file(path);
	/* Back, it learns it first from its watchdog (its clock ran past
	 * the lease) or from its heartbeat (the store names the new owner). */
	ck_assert_msg(strstr(log, "lost the lease of u/t: host b took it over (token 2; this"
				  " view's was 1); unmounting") ||
			      strstr(log,
				     "lost the lease of u/t: the store has not renewed it for"),
		      "%s", log);
	ck_assert_msg(strstr(log, "it lost its thread's lease"), "%s", log);
	tview_sync(&b);
	SAME(journal_paths(home, "t"), "a-before\nb-after\n");
	tview_umount(&b);
}
END_TEST

/* Capacity: a host past max-views-per-host is refused (exit 75, saying
 * which limit) until one of its views is unmounted; a store that cannot
 * be asked refuses every mount (fail closed). */
START_TEST(test_hosts_capacity_and_fail_closed)
{
	const char *home = hosts_home("5", "max-views-per-host = 1\n");
	struct tview a, a2;
	int st;

	ck_assert_int_eq(mount_as(&a, home, "t1", "a", NULL), 0);
	char *err = fmt_cmd("%s/err", test_dir("out"));
	capture(fmt_cmd("'%s' --home '%s' --user u --thread t2 --host a '%s' 2>'%s'",
			test_bin("sbxfs"), home, test_dir("mnt"), err),
		&st);
	ck_assert_int_eq(st, 75);
	ck_assert_msg(strstr(read_file(err),
			     "capacity: host a has 1 views mounted (max-views-per-host = 1)"),
		      "%s", read_file(err));
	/* Its lease goes with its daemon, after the unmount returned. */
	ck_assert_int_eq(tview_umount_wait(&a), 0);
	ck_assert_int_eq(mount_as(&a2, home, "t2", "a", NULL), 0);
	tview_umount(&a2);
	capture(fmt_cmd("'%s' --home '%s' --user u --thread t3 --host a"
			" --store 'host=%s/nowhere dbname=sbx' '%s' 2>'%s'",
			test_bin("sbxfs"), home, test_dir("nosocket"), test_dir("mnt"), err),
		&st);
	ck_assert_int_eq(st, 1);
	ck_assert_msg(strstr(read_file(err), "cannot take the lease of u/t3"), "%s",
		      read_file(err));
}
END_TEST

/* An sbx exec of SCRIPT in USER u's THREAD through the broker of HOME:
 * its exit status, its output (with stderr) in *OUT if not NULL. */
static int exec_in(const char *home, const char *thread, const char *script, char **out)
{
	int st;
	char *text = capture(fmt_cmd("'%s' exec --home '%s' --user u --thread %s -- '%s' 2>&1",
				     test_bin("sbx"), home, thread, script),
			     &st);

	if (out)
		*out = text;
	else
		free(text);
	return st;
}

static const char *host_b; /* for b_runs() */

static bool b_runs(const char *script)
{
	return exec_in(host_b, "t", script, NULL) == 0;
}

/* Two hosts as a deployment has them: a home each (its own run/, log/,
 * sbx.conf and broker), one PostgreSQL store, and the threads' files
 * shared (B's users/ is A's, bind-mounted: the NFS export of a real
 * deployment). A's broker runs a command writing into thread t; B's is
 * refused the thread, naming A; A dies (kill -9 of its broker, its view
 * and the command); B's next request is served once A's lease expired,
 * and the journal has no row of A's after B's first. */
START_TEST(test_hosts_two_brokers_one_store)
{
	if (!pg_mode() || geteuid() != 0) {
		fprintf(stderr, "two brokers: needs the PostgreSQL pass and root (bind mount)\n");
		return;
	}
	const char *ha = test_dir("hosta"), *hb = test_dir("hostb");
	test_home_store(ha);
	char *store = OUT("sed -n 's/^store *= *//p' '%s/sbx.conf'", ha);
	ck_assert_int_eq(append_file(fmt_cmd("%s/sbx.conf", ha), "host = a\nlease = 2\n"), 0);
	ck_assert_int_eq(write_file(fmt_cmd("%s/sbx.conf", hb),
				    fmt_cmd("store = %shost = b\nlease = 2\n", store)),
			 0);
	OK("mkdir -p '%s/users' '%s/users' && mount --bind '%s/users' '%s/users'", ha, hb, ha, hb);
	OK("'%s' broker --home '%s' >/dev/null", test_bin("sbx"), ha);
	OK("'%s' broker --home '%s' >/dev/null", test_bin("sbx"), hb);
	pid_t client = fork();
	if (client == 0) {
		exec_in(ha, "t",
			"i=0; while echo a > /mnt/user-data/workspace/a-$i; do i=$((i+1));"
			" sleep 0.01; done",
			NULL);
		_exit(0);
	}
	ck_assert(eventually(journal_has, fmt_cmd("%s|t|a-3", ha)));
	char *out;
	ck_assert_int_ne(exec_in(hb, "t", "true", &out), 0);
	ck_assert_msg(strstr(out, "u/t is mounted on host a"), "%s", out);
	/* Host A dies: its broker, its view, its command. */
	pid_t broker = (pid_t)atoi(read_file(fmt_cmd("%s/run/broker.lock", ha)));
	pid_t daemon = (pid_t)atoi(
		OUT("tests/tools/sbxsql '%s' \"SELECT pid FROM leases WHERE thread = 't'\"", ha));
	ck_assert_int_gt(broker, 1);
	ck_assert_int_gt(daemon, 1);
	kill(broker, SIGKILL);
	kill(daemon, SIGKILL);
	waitpid(client, NULL, 0); /* its writes fail: the loop ends */
	host_b = hb;
	ck_assert(eventually(b_runs, "echo b > /mnt/user-data/workspace/b-1"));
	ck_assert(eventually(journal_has, fmt_cmd("%s|t|b-1", ha)));
	char *paths = journal_paths(ha, "t"), *b1 = strstr(paths, "b-1\n");
	ck_assert_msg(b1 && !strstr(b1, "a-"), "a's rows after b's:\n%s", paths);
	ck_assert_msg(!strncmp(paths, "a-0\n", 4), "a's rows are missing:\n%s", paths);
	char *hosts = OUT("'%s' hosts --home '%s' | awk 'NR == 2 { print $1, $2, $3, $4 }'",
			  test_bin("sbx"), hb);
	SAME(hosts, "b u/t 2 live\n");
	broker_stop(hb);
	sh("umount -l '%s/users'", hb);
}
END_TEST

/* A store that does not answer at all (its server stopped: a network
 * that drops everything looks the same): the view's renewal waits in
 * its request, and the view still ends before its lease expires, then
 * refuses nothing it no longer may. */
START_TEST(test_hosts_unanswered_store_ends_the_view)
{
	if (!pg_mode()) {
		fprintf(stderr, "unanswered store: needs the PostgreSQL pass\n");
		return;
	}
	const char *home = hosts_home("2", NULL);
	struct tview a;

	ck_assert_int_eq(mount_as(&a, home, "t", "a", NULL), 0);
	pg_server_signal("STOP");
	bool ended = eventually(is_not_mounted, a.mnt);
	pg_server_signal("CONT");
	ck_assert_msg(ended, "the view outlived its lease");
	char *log = read_file(fmt_cmd("%s/log/sbxfs-u-t.log", home));
	ck_assert_msg(strstr(log, "lost the lease of u/t: the store has not renewed it for"), "%s",
		      log);
}
END_TEST

/* ARG is "HOME|N": true once HOME's database has N client connections
 * besides the one asking. */
/* "HOME|N": whether N connections other than this query's are open to
 * HOME's database. */
static bool connections_are(const char *arg)
{
	char home[PATH_MAX];
	int n;

	return sscanf(arg, "%4095[^|]|%d", home, &n) == 2 &&
	       sql_count(home, "SELECT count(*) FROM pg_stat_activity WHERE datname ="
			       " current_database() AND pid <> pg_backend_pid()") == n;
}

/* An idle view's writer gives its PostgreSQL connection back after
 * three leases' time and connects again for its next rows: an idle view
 * holds one server process (its heartbeat's), a busy one two. */
START_TEST(test_hosts_an_idle_view_holds_one_connection)
{
	if (!pg_mode()) {
		fprintf(stderr, "idle connection: needs the PostgreSQL pass\n");
		return;
	}
	const char *home = hosts_home("1", NULL);
	struct tview v;

	ck_assert_int_eq(mount_as(&v, home, "t", "a", NULL), 0);
	ck_assert_msg(eventually(connections_are, fmt_cmd("%s|1", home)),
		      "the idle view still holds its writer's connection");
	ck_assert_int_eq(write_file(ws_of(&v, "after-rest"), "x\n"), 0);
	tview_sync(&v);
	EQ_OUT("1\n",
	       "tests/tools/sbxsql '%s' \"SELECT count(*) FROM journal WHERE path LIKE"
	       " '%%/after-rest' AND op = 'create'\"",
	       home);
	ck_assert(connections_are(fmt_cmd("%s|2", home)));
	ck_assert_msg(eventually(connections_are, fmt_cmd("%s|1", home)),
		      "the view kept its writer's connection after its rows");
	ck_assert_int_eq(tview_umount_wait(&v), 0);
}
END_TEST

/* libpq is loaded for a PostgreSQL store only: a view on SQLite maps
 * neither it nor the libraries it needs (Kerberos, LDAP, TLS). */
START_TEST(test_hosts_libpq_only_for_a_postgresql_store)
{
	const char *home = hosts_home("10", NULL);
	struct tview v;

	ck_assert_int_eq(mount_as(&v, home, "t", "a", NULL), 0);
	int pid = (int)daemon_of(&v);
	bool libpq = sh("grep -q /libpq.so /proc/%d/maps", pid) == 0;
	bool krb5 = sh("grep -q /libkrb5 /proc/%d/maps", pid) == 0;
	ck_assert_msg(libpq == pg_mode() && krb5 == pg_mode(), "libpq %s, krb5 %s on %s",
		      libpq ? "mapped" : "not mapped", krb5 ? "mapped" : "not mapped",
		      pg_mode() ? "PostgreSQL" : "SQLite");
	/* An sbx command on SQLite does not need it either. */
	if (!pg_mode())
		ck_assert_int_ne(sh("readelf -d '%s' | grep -q libpq", test_bin("sbx")), 0);
	/* And one on PostgreSQL loads it, and works. */
	ck_assert_int_eq(sh("'%s' --home '%s' hosts > /dev/null", test_bin("sbx"), home), 0);
}
END_TEST

/* Unmounts V with sbx umount, which must succeed; then its daemon DAEMON
 * must exit (it gave its lease back on its way out). */
static void umount_ends_its_daemon(struct tview *v, pid_t daemon)
{
	EQ_OUT("", "'%s' umount '%s' 2>&1", test_bin("sbx"), v->mnt);
	v->mounted = false;
	ck_assert_msg(eventually(has_exited_pid, fmt_cmd("%d", (int)daemon)),
		      "the daemon of %s/%s (pid %d) still runs after its unmount", v->user,
		      v->thread, (int)daemon);
}

static const char *session_broker; /* the broker home of the test below */

static void session_teardown(void)
{
	if (session_broker)
		broker_stop(session_broker);
}

/* A broker's sandbox pins no other view: while a shell session of
 * alice/t1 lives, views of other threads (of another home, mounted
 * before the session and after it, the latter below a shared mount as
 * systemd makes them, and of the broker's own home) are not in its
 * mount namespaces (bubblewrap's and the one the launch makes for it
 * hold no FUSE mount but the session's view), and sbx umount of each
 * ends its daemon, whose lease is then free for another host. */
START_TEST(test_hosts_a_sandbox_pins_no_other_view)
{
	const char *home = hosts_home("10", NULL), *sbx = fmt_cmd("%s", test_bin("sbx"));
	struct tview before, after, own, again;

	const char *shared = test_dir("shared"), *const as_a[] = { "--host", "a", NULL };
	OK("mount --bind '%s' '%s' && mount --make-shared '%s' && mkdir '%s/mnt'", shared, shared,
	   shared, shared);
	session_broker = broker_start("bhome", NULL);
	const char *bh = session_broker;
	ck_assert_int_eq(mount_as(&before, home, "b1", "a", NULL), 0);
	ck_assert_int_eq(tview_mount(&own, bh, "u", "b3", NULL), 0);
	EQ_OUT("up\n", "'%s' exec --home '%s' --user alice --thread t1 --scope s -- 'echo up'", sbx,
	       bh);
	ck_assert_int_eq(tview_mount_at(&after, fmt_cmd("%s/mnt", shared), home, "u", "b2", as_a),
			 0);
	pid_t d_before = daemon_of(&before), d_after = daemon_of(&after), d_own = daemon_of(&own);

	/* Every process of the sandbox (its host uid), in whatever mount
	 * namespace: no FUSE mount but the session's view. */
	char *uid =
		OUT("python3 tests/tools/bclient.py '%s' '{\"op\":\"status\"}' |"
		    " python3 tests/tools/jsonq.py --run"
		    " 'print([v[\"uid\"] for v in d[\"views\"] if v[\"thread\"] == \"t1\"][0])'",
		    bh);
	char *dev = OUT("awk '$5 == \"%s/run/views/alice/t1\" { print $3 }' /proc/self/mountinfo",
			bh);
	ck_assert_msg(strlen(dev) > 1, "the session's view is not mounted");
	char *seen = OUT("for p in $(pgrep -u %.*s); do"
			 " awk -v d=%.*s '/ - fuse/ && $3 != d { print FILENAME \": \" $0 }"
			 " $3 == d { n++ } END { if (n) print \"ns \" n }' /proc/$p/mountinfo;"
			 " done | sort | uniq",
			 (int)strcspn(uid, "\n"), uid, (int)strcspn(dev, "\n"), dev);
	ck_assert_msg(!strstr(seen, "/mountinfo: "), "other FUSE mounts in the sandbox:\n%s", seen);
	/* bubblewrap's namespace binds three directories of the view, the
	 * launch's as many: the check above saw both. */
	ck_assert_msg(strstr(seen, "ns 3\n"), "no process of the sandbox seen:\n%s", seen);

	umount_ends_its_daemon(&before, d_before);
	umount_ends_its_daemon(&after, d_after);
	umount_ends_its_daemon(&own, d_own);
	EQ_OUT("0\n",
	       "'%s' hosts --home '%s' --format json | python3 tests/tools/jsonq.py 'd[\"live\"]'",
	       sbx, home);
	ck_assert_int_eq(mount_as(&again, home, "b1", "b", NULL), 0);
	tview_umount(&again);
	ck_assert_int_eq(mount_as(&again, home, "b2", "b", NULL), 0);
	tview_umount(&again);
	ck_assert_int_eq(mount_as(&again, bh, "b3", "b", NULL), 0);
	tview_umount(&again);
	/* The session lived on throughout. */
	EQ_OUT("up\n", "'%s' exec --home '%s' --user alice --thread t1 --scope s -- 'echo up'", sbx,
	       bh);
	OK("umount '%s'", shared);
}
END_TEST

Suite *suite_view_hosts(void)
{
	Suite *s = suite_create("view_hosts");
	TCase *tc = tcase_create("hosts");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_hosts_one_at_a_time);
	tcase_add_test(tc, test_hosts_take_over_after_a_crash);
	tcase_add_test(tc, test_hosts_stale_owner_is_fenced);
	tcase_add_test(tc, test_hosts_capacity_and_fail_closed);
	tcase_add_test(tc, test_hosts_two_brokers_one_store);
	tcase_add_test(tc, test_hosts_unanswered_store_ends_the_view);
	tcase_add_test(tc, test_hosts_libpq_only_for_a_postgresql_store);
	tcase_add_test(tc, test_hosts_an_idle_view_holds_one_connection);
	suite_add_tcase(s, tc);
	TCase *sb = tcase_create("sandboxes");
	tcase_set_timeout(sb, 60);
	tcase_add_checked_fixture(sb, NULL, session_teardown);
	tcase_add_test(sb, test_hosts_a_sandbox_pins_no_other_view);
	suite_add_tcase(s, sb);
	return s;
}
