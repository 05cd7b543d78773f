/* The exec sandbox as a security boundary, tried as an attacker who
 * controls an agent's commands, against a root broker in its default
 * namespace mode. One test per attack: host root through /proc/sys,
 * set-id files on the host, host secrets, the request's environment
 * reaching the host-side exec, inherited descriptors, two threads whose
 * sandbox names collide, fork and memory bombs, refused system calls
 * (new user namespaces, keys, perf, userfaultfd, mounts...), masked
 * /proc files, host paths in /proc, cgroupfs from a nested namespace,
 * device nodes, the disk quota; and what must keep working: the identity
 * the docs promise, file ownership, the default tools with the network
 * on. The bombs are bounded in count and time, so that a sandbox without
 * limits does not take the machine down with the test. */
#include "tests/cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *H;

/* At most 2,000 processes that live 20 s each: it stops by itself where
 * nothing else does (tests/tools/bomb.py, after add_tool(T, "bomb.py")). */
#define FORK_BOMB "python3 bomb.py fork sbx-fork-bomb"
/* The fork bomb is gone within 5 s. */
#define BOMB_GONE                                                               \
	"for i in $(seq 50); do pgrep -f sbx-fork-bom[b] >/dev/null || exit 0;" \
	" sleep 0.1; done; exit 1"

static void start(const char *conf)
{
	H = broker_start("shome", conf);
}

static void setup(void)
{
	tool_env();
	start(NULL);
}

static void teardown(void)
{
	broker_stop(H);
}

/* Restarts the broker with configuration CONF. */
static void restart(const char *conf)
{
	teardown();
	start(conf);
}

/* Runs CMD (any shell text) in THREAD of user alice with the extra sbx
 * exec options OPTS; its output (stdout and stderr) and status. */
static char *run_opts(const char *thread, const char *opts, int *status, const char *cmd)
{
	char *f = fmt_cmd("%s/cmd", test_dir("cmd"));

	ck_assert_int_eq(write_file(f, cmd), 0);
	return capture(
		fmt_cmd("'%s' exec --home '%s' --user alice --thread %s %s -- \"$(cat '%s')\""
			" 2>&1",
			test_bin("sbx"), H, thread, opts, f),
		status);
}

static char *run(const char *thread, int *status, const char *cmd)
{
	return run_opts(thread, "", status, cmd);
}

/* The same, and it must exit 0. */
static char *run_ok(const char *thread, const char *cmd)
{
	int st;
	char *out = run(thread, &st, cmd);

	ck_assert_msg(st == 0, "exit %d: %s\n%s", st, cmd, out);
	return out;
}

static char *workspace(const char *thread)
{
	return fmt_cmd("%s/users/alice/threads/%s/user-data/workspace", H, thread);
}

/* Copies the test tool NAME (tests/tools) into THREAD's workspace. */
static void add_tool(const char *thread, const char *name)
{
	OK("mkdir -p '%s' && cp 'tests/tools/%s' '%s/'", workspace(thread), name,
	   workspace(thread));
}

/* Copies tests/tools/probe.py into THREAD's workspace. */
static void add_probe(const char *thread)
{
	add_tool(thread, "probe.py");
}

/* /proc/sys is read-only: no core_pattern pipe to a program of the
 * agent (run as host root at the next crash), no drop_caches, no
 * suid_dumpable. Each write puts back the value that is there, so that
 * a sandbox that can write does no harm. */
START_TEST(test_sandbox_proc_sys_is_read_only)
{
	static const char *const knobs[] = {
		"kernel/core_pattern",
		"fs/suid_dumpable",
		"kernel/panic",
		"vm/overcommit_memory",
	};

	for (size_t i = 0; i < sizeof(knobs) / sizeof(*knobs); i++) {
		char *out = run_ok("t1",
				   fmt_cmd("v=$(cat /proc/sys/%s); { printf '%%s\\n' \"$v\" >"
					   " /proc/sys/%s; } 2>/dev/null && echo WROTE; echo done",
					   knobs[i], knobs[i]));
		SAME(out, "done\n");
	}
	SAME(run_ok("t1",
		    "{ echo 4 > /proc/sys/vm/drop_caches; } 2>/dev/null && echo WROTE; echo done"),
	     "done\n");
	/* The mount itself is read-only, whoever the caller is. */
	SAME(run_ok("t1", "grep -q ' /proc/sys ro,' /proc/self/mountinfo && echo ro"), "ro\n");
}
END_TEST

/* /proc/sysrq-trigger cannot be written (an empty write: no action). */
START_TEST(test_sandbox_sysrq_trigger_is_read_only)
{
	SAME(run_ok("t1", "{ : > /proc/sysrq-trigger; } 2>/dev/null && echo WROTE; echo done"),
	     "done\n");
}
END_TEST

/* No set-id file reaches the host: chown to another user or to root is
 * refused (the caller has no CAP_CHOWN), and so are set-id bits. */
START_TEST(test_sandbox_no_set_id_files_on_the_host)
{
	char *out =
		run("t1", (int[]){ 0 },
		    "cp /usr/bin/id x; chown 4321:4321 x && echo CHOWNED;"
		    " chown 0:0 x && echo ROOTED; chmod 6755 x && echo SETID; chmod u+s x && echo"
		    " SETUID; chmod g+s x && echo SETGID; echo done");
	ck_assert_msg(!strstr(out, "CHOWNED") && !strstr(out, "ROOTED") && !strstr(out, "SETID") &&
			      !strstr(out, "SETUID") && strstr(out, "done"),
		      "%s", out);
	struct stat st;
	ck_assert_int_eq(stat(fmt_cmd("%s/x", workspace("t1")), &st), 0);
	ck_assert_msg(!(st.st_mode & (S_ISUID | S_ISGID)), "host file mode %o", st.st_mode);
	ck_assert_msg(st.st_uid == getuid(), "host file owned by %u", (unsigned)st.st_uid);
}
END_TEST

/* chmod u+s on a file of its own is refused too: the file belongs to
 * the broker's user on the host, root here. */
START_TEST(test_sandbox_chmod_setuid_as_the_agent)
{
	char *out = run("t1", (int[]){ 0 },
			"echo '#!/bin/sh' > s; chmod 755 s; chmod u+s s 2>&1;"
			" stat -c %a s");
	ck_assert_msg(strstr(out, "Operation not permitted") && strstr(out, "755"), "%s", out);
	struct stat st;
	ck_assert_int_eq(stat(fmt_cmd("%s/s", workspace("t1")), &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0755);
}
END_TEST

/* No device nodes, in the view or in the sandbox's own /tmp. */
START_TEST(test_sandbox_no_device_nodes)
{
	SAME(run_ok("t1", "mknod null c 1 3 2>/dev/null && echo MADE; mknod /tmp/null c 1 3"
			  " 2>/dev/null && echo MADE; mknod fifo p && echo fifo"),
	     "fifo\n");
	ck_assert(!exists(fmt_cmd("%s/null", workspace("t1"))));
}
END_TEST

/* Nothing the sandbox can read reveals a host secret. */
START_TEST(test_sandbox_host_secrets_stay_out)
{
	SAME(run_ok("t1",
		    "head -c 100 /etc/shadow 2>/dev/null; head -c 100 /etc/gshadow 2>/dev/null;"
		    " for d in /root /home /run /var /srv /boot /sys; do test -e $d && echo $d; done;"
		    " echo end"),
	     "end\n");
	/* Whatever of /etc the host keeps from other users reads as nothing. */
	char *secret =
		OUT("find /etc -xdev -type f ! -perm -o=r 2>/dev/null | head -20 | tr '\\n' ' '");
	SAME(run_ok("t1", fmt_cmd("for f in %s; do head -c 1 \"$f\" 2>/dev/null; done; echo end",
				  secret)),
	     "end\n");
	/* No socket of the host (docker.sock, the broker's own), no store. */
	SAME(run_ok("t1", fmt_cmd("find / -xdev -type s 2>/dev/null | grep -v '^/tmp/';"
				  " test -e '%s/sbx.db' && echo STORE; echo end",
				  H)),
	     "end\n");
}
END_TEST

/* A request's variables are the command's, never bwrap's: a library the
 * agent built, preloaded, runs inside the sandbox only. */
START_TEST(test_sandbox_request_env_stays_inside)
{
	const char *marks = test_dir("marks");
	char *mark = fmt_cmd("%s/pwned", marks);
	OK("chmod 777 '%s'", marks);
	run_ok("t1",
	       fmt_cmd("printf '#include <stdio.h>\\n__attribute__((constructor)) static void"
		       " c(void) { FILE *f = fopen(\"%s\", \"a\"); if (f) fputs(\"x\", f); }\\n' > p.c"
		       " && cc -shared -fPIC -o p.so p.c",
		       mark));
	char *so = fmt_cmd("%s/p.so", workspace("t1"));
	int st;
	char *out = run_opts("t1",
			     fmt_cmd("--env LD_PRELOAD=%s --env LD_LIBRARY_PATH=%s"
				     " --env PATH=%s:/usr/bin:/bin",
				     so, workspace("t1"), workspace("t1")),
			     &st, "echo ran");
	ck_assert_msg(strstr(out, "ran"), "%s", out);
	ck_assert_msg(!exists(mark), "the preloaded library ran outside the sandbox");
	/* Inside, the variable is the command's. */
	out = run_opts("t1", "--env LD_PRELOAD=/mnt/user-data/workspace/p.so", &st,
		       "echo $LD_PRELOAD");
	ck_assert_msg(strstr(out, "/mnt/user-data/workspace/p.so"), "%s", out);
}
END_TEST

/* Secrets under names no denylist knows, SBX_HOME (a host path) and any
 * other variable of the broker's stay out of a command's environment,
 * one-off or in a session: it is built from a fixed set, sbx.conf's
 * env_pass and the request's variables. */
START_TEST(test_sandbox_environment_is_built_not_filtered)
{
	static const char *const leaks[] = {
		"SQLALCHEMY_DATABASE_URI",
		"CELERY_BROKER_URL",
		"AZURE_STORAGE_CONNECTION_STRING",
		"HTTPS_PROXY",
		"NPM_CONFIG__AUTH",
		"SLACK_WEBHOOK_URL",
		"SBX_HOME",
		"SBX_TEST_HARMLESS",
		"pw-",
	};
	const char *secrets =
		"SQLALCHEMY_DATABASE_URI=postgresql://app:pw-sqla@db/app"
		" CELERY_BROKER_URL=redis://:pw-celery@redis:6379/0"
		" AZURE_STORAGE_CONNECTION_STRING='AccountName=a;AccountKey=pw-azure'"
		" HTTPS_PROXY=http://u:pw-proxy@proxy:3128 NPM_CONFIG__AUTH=pw-npm"
		" SLACK_WEBHOOK_URL=https://hooks.slack.com/services/pw-slack"
		" SBX_TEST_HARMLESS=1 SBX_TEST_PASSED=passed LANG=C.UTF-8 TERM=xterm-sbx";
	/* The shell's own environment as bubblewrap gave it, with the PWD
	 * of its --chdir (the locale categories aside: the test's caller
	 * may set any of them). */
	const char *given = "tr '\\0' '\\n' < /proc/$$/environ | grep -v '^LC_' | sort";

	teardown();
	H = test_dir("shome");
	OK("env %s SBX_HOME='%s' '%s' broker --home '%s' >/dev/null", secrets, H, test_bin("sbx"),
	   H);
	for (int session = 0; session < 2; session++) {
		char *out = run_opts("t1", session ? "--scope s" : "", (int[]){ 0 },
				     "tr '\\0' '\\n' < /proc/self/environ; echo ---; env");
		for (size_t i = 0; i < sizeof(leaks) / sizeof(*leaks); i++)
			ck_assert_msg(!strstr(out, leaks[i]), "%s reached the command:\n%s",
				      leaks[i], out);
		ck_assert_msg(!strstr(out, H), "the home reached the command:\n%s", out);
	}
	SAME(run_ok("t1", given),
	     "HOME=/tmp\nLANG=C.UTF-8\nLOGNAME=agent\n"
	     "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
	     "PWD=/mnt/user-data/workspace\nTERM=xterm-sbx\nTZ=UTC\nUSER=agent\n");
	/* What sbx.conf names is passed; what the request gives is kept,
	 * whatever its name. */
	broker_stop(H);
	ck_assert_int_eq(append_file(fmt_cmd("%s/sbx.conf", H),
				     "[broker]\nenv_pass = SBX_TEST_PASSED NOT_SET_ANYWHERE\n"),
			 0);
	OK("env %s '%s' broker --home '%s' >/dev/null", secrets, test_bin("sbx"), H);
	SAME(run_opts("t1", "--env API_TOKEN=explicit --env PATH=/usr/bin:/bin", (int[]){ 0 },
		      given),
	     "API_TOKEN=explicit\nHOME=/tmp\nLANG=C.UTF-8\nLOGNAME=agent\nPATH=/usr/bin:/bin\n"
	     "PWD=/mnt/user-data/workspace\nSBX_TEST_PASSED=passed\nTERM=xterm-sbx\nTZ=UTC\nUSER=agent\n");
	SAME(run_opts("t1", "--scope s", (int[]){ 0 }, "echo $SBX_TEST_PASSED"), "passed\n");
}
END_TEST

/* The backups of the host's account files (vipw's passwd- and group-)
 * and its sub-id ranges list no host account: whatever of them can be
 * read inside is in the sandbox's own /etc/passwd and /etc/group. (A
 * host without such files cannot fail this.) */
START_TEST(test_sandbox_account_backups_list_no_host_user)
{
	SAME(run_ok("t1", "for f in /etc/passwd- /etc/group- /etc/shadow- /etc/gshadow-"
			  " /etc/subuid /etc/subgid /etc/subuid- /etc/subgid-; do"
			  " cat $f 2>/dev/null; done | grep -vxF -f /etc/passwd -f /etc/group;"
			  " echo end"),
	     "end\n");
}
END_TEST

/* The broker's own descriptors do not reach a command. */
START_TEST(test_sandbox_no_inherited_descriptors)
{
	char *file = fmt_cmd("%s/host-file", test_dir("fds"));

	teardown();
	H = test_dir("shome");
	OK("'%s' broker --home '%s' 7>>'%s' 8<'%s'", test_bin("sbx"), H, file, file);
	SAME(run_ok("t1", "{ echo X >&7; } 2>/dev/null; ls /proc/self/fd | tr '\\n' ' '; echo"),
	     "0 1 2 3 \n");
	SAME(read_file(file), "");
	/* A session's shell neither. */
	SAME(run_opts("t1", "--scope s", (int[]){ 0 },
		      "{ echo X >&8; } 2>/dev/null || echo closed"),
	     "closed\n");
	/* No controlling terminal, no signal blocked or ignored by the
	 * broker's own set-up. */
	SAME(run_ok("t1", "tty; { : < /dev/tty; } 2>/dev/null || echo no-tty;"
			  " grep -E 'SigBlk|SigIgn' /proc/self/status"),
	     "not a tty\nno-tty\nSigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
}
END_TEST

/* Two threads whose 8-hex-digit sandbox names collide share nothing. */
START_TEST(test_sandbox_colliding_ids_share_nothing)
{
	SAME(OUT("for t in t26821 t49091; do printf $t | sha256sum | cut -c1-8; done"),
	     "3b787b99\n3b787b99\n");
	run_ok("t26821", "echo A > mine; echo A-session > /tmp/x");
	run_opts("t26821", "--scope s", (int[]){ 0 }, "cd /mnt/user-data/outputs; export V=A");
	SAME(run_ok("t49091", "cat mine 2>&1 | sed 's/.*: //'; ls"), "No such file or directory\n");
	SAME(run_opts("t49091", "--scope s", (int[]){ 0 }, "pwd; echo ${V:-unset}"),
	     "/mnt/user-data/workspace\nunset\n");
	SAME(read_file(fmt_cmd("%s/mine", workspace("t26821"))), "A\n");
	ck_assert(!exists(fmt_cmd("%s/mine", workspace("t49091"))));
	char *st = OUT("'%s' broker --home '%s' --status | python3 tests/tools/jsonq.py"
		       " '(len(d[\"views\"]), len({v[\"mount\"] for v in d[\"views\"]}),"
		       " *sorted({v[\"sandbox\"] for v in d[\"views\"]}))'",
		       test_bin("sbx"), H);
	SAME(st, "2 2 3b787b99\n");
	/* Their host uids differ too. */
	SAME(OUT("'%s' broker --home '%s' --status | python3 tests/tools/jsonq.py"
		 " 'len({v[\"uid\"] for v in d[\"views\"]})'",
		 test_bin("sbx"), H),
	     "2\n");
}
END_TEST

/* A process of one sandbox cannot see or trace another's. */
START_TEST(test_sandbox_no_ptrace_across_sandboxes)
{
	run_opts("t1", "--scope s", (int[]){ 0 }, "(exec -a sbx-victim-proc sleep 60) &");
	char *pid = OUT("pgrep -f 'sbx-victim-pro[c]' | head -1");
	ck_assert_msg(*pid, "no victim");
	pid[strcspn(pid, "\n")] = '\0';
	add_probe("t2");
	SAME(run_ok("t2",
		    fmt_cmd("pgrep -f 'sbx-victim-pro[c]'; kill -0 %s 2>&1 | sed 's/.* - //';"
			    " python3 -c 'import ctypes,os; l=ctypes.CDLL(None,use_errno=True);"
			    " print(l.ptrace(16, %s, 0, 0), os.strerror(ctypes.get_errno()))'",
			    pid, pid)),
	     "No such process\n-1 No such process\n");
}
END_TEST

/* The calls Docker's default profile refuses are refused (EPERM; clone3
 * ENOSYS so that libc falls back to clone, whose flags can be checked),
 * and the filter is on. */
START_TEST(test_sandbox_refused_calls)
{
	static const char *const refused[] = {
		"add_key",
		"keyctl",
		"request_key",
		"perf_event_open",
		"userfaultfd",
		"bpf",
		"unshare_user",
		"unshare_mount",
		"mount",
		"umount",
		"pivot_root",
		"open_tree",
		"fsopen",
		"kexec_load",
		"init_module",
		"finit_module",
		"delete_module",
		"reboot",
		"swapon",
		"settimeofday",
		"clock_settime",
		"personality",
		"open_by_handle_at",
		"tiocsti",
		"tioclinux",
		"io_uring_setup",
		"setns",
		"acct",
		"mknod_char",
		"quotactl",
		"pidfd_getfd",
		"process_madvise",
		"get_mempolicy",
		"set_mempolicy",
		"set_mempolicy_home_node",
		"mbind",
		"move_pages",
		"migrate_pages",
	};
	char want[2048] = "", names[2048] = "";

	for (size_t i = 0; i < sizeof(refused) / sizeof(*refused); i++) {
		snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s EPERM\n",
			 refused[i]);
		snprintf(names + strlen(names), sizeof(names) - strlen(names), " %s", refused[i]);
	}
	strcat(want, "clone3 ENOSYS\npersonality_query ok\n");
	add_probe("t1");
	SAME(run_ok("t1", fmt_cmd("python3 probe.py%s clone3 personality_query </dev/null", names)),
	     want);
	SAME(run_ok("t1",
		    "grep -E 'NoNewPrivs|Seccomp:' /proc/self/status; unshare -U true 2>/dev/null"
		    " || echo refused"),
	     "NoNewPrivs:\t1\nSeccomp:\t2\nrefused\n");
}
END_TEST

/* Sockets of Flatpak's families only: AF_VSOCK (not namespaced: the
 * hypervisor's channel) and AF_ALG are not there, through the 64-bit
 * call, the i386 one (int 0x80 from a 64-bit process), or i386's
 * socketcall, whose arguments no filter reads. On a host whose kernel
 * has no i386 ABI (int 0x80 kills the caller there, as on the host
 * itself), the sandbox can do no more than refuse the same way. */
START_TEST(test_sandbox_socket_families)
{
	bool i386 = !strcmp(OUT("python3 tests/tools/probe.py i386_getpid"), "i386_getpid ok\n");
	const char *want_i386 = i386 ? "i386_socket_vsock EAFNOSUPPORT\ni386_socket_unix ok\n"
				       "i386_socketcall_vsock EAFNOSUPPORT\n"
				     : "i386_socket_vsock killed by SIGSEGV\n"
				       "i386_socket_unix killed by SIGSEGV\n"
				       "i386_socketcall_vsock killed by SIGSEGV\n";

	add_probe("t1");
	SAME(run_ok("t1", "python3 probe.py socket_vsock socket_alg socket_unix socket_inet"
			  " i386_socket_vsock i386_socket_unix i386_socketcall_vsock"),
	     fmt_cmd("socket_vsock EAFNOSUPPORT\nsocket_alg EAFNOSUPPORT\nsocket_unix ok\n"
		     "socket_inet ok\n%s",
		     want_i386));
}
END_TEST

/* /proc/kcore, /proc/keys, /proc/timer_list and the like read as
 * nothing. */
START_TEST(test_sandbox_masked_proc_files)
{
	add_probe("t1");
	SAME(run_ok("t1",
		    "python3 probe.py add_key >/dev/null; for f in /proc/keys /proc/timer_list"
		    " /proc/kcore /proc/sched_debug /proc/latency_stats /proc/timer_stats; do"
		    " test -e $f || continue; n=$(head -c 100 $f 2>/dev/null | wc -c);"
		    " test $n = 0 || echo $f $n; done; echo end"),
	     "end\n");
}
END_TEST

/* The sandbox's pid 1 and its mount table show virtual paths only. */
START_TEST(test_sandbox_proc_shows_no_host_paths)
{
	char *out = run_ok("t1", "tr '\\0' ' ' < /proc/1/cmdline; echo; cat /proc/self/mountinfo");
	ck_assert_msg(!strstr(out, H), "%s", out);
	ck_assert_msg(strstr(out, " /mnt/user-data/workspace ") || strstr(out, " /mnt/user-data "),
		      "%s", out);
}
END_TEST

/* No cgroupfs from a nested namespace, no cgroup limit file to write. */
START_TEST(test_sandbox_no_cgroupfs)
{
	SAME(run_ok("t1",
		    "mkdir -p /tmp/cg; unshare -UrmC sh -c 'mount -t cgroup2 none /tmp/cg && echo"
		    " MOUNTED' 2>/dev/null; mount -t cgroup2 none /tmp/cg 2>/dev/null && echo MOUNTED;"
		    " test -e /sys/fs/cgroup && echo SYS; for f in $(cat /proc/self/cgroup | cut -d: -f3);"
		    " do :; done; echo end"),
	     "end\n");
}
END_TEST

/* Commands run as the identity the docs give; files are owned as they
 * say: by the agent inside, by the broker's user on the host. No
 * process of the sandbox is host root. */
START_TEST(test_sandbox_identity_and_ownership)
{
	SAME(run_ok("t1", "id; echo x > made; stat -c '%u:%g %U' made; echo $HOME $USER $LOGNAME"),
	     "uid=1000(agent) gid=1000(agent) groups=1000(agent)\n1000:1000 agent\n"
	     "/tmp agent agent\n");
	SAME(run_opts("t1", "--env HOME=/mnt/user-data/workspace", (int[]){ 0 }, "echo $HOME"),
	     "/mnt/user-data/workspace\n");
	struct stat st;
	ck_assert_int_eq(stat(fmt_cmd("%s/made", workspace("t1")), &st), 0);
	ck_assert_int_eq(st.st_uid, getuid());
	ck_assert_int_eq(st.st_gid, getgid());
	/* A person's file on the host is the agent's to edit. */
	OK("echo person > '%s/theirs'", workspace("t1"));
	SAME(run_ok("t1", "cat theirs > /dev/null; echo agent >> theirs; cat theirs"),
	     "person\nagent\n");
	/* Every process of the sandbox, seen from the host. */
	run_opts("t1", "--scope s", (int[]){ 0 }, "(exec -a sbx-identity-proc sleep 60) &");
	/* From the sleep itself (argv[0] set by exec -a; the shell that
	 * started it has the name in its command line too, and may be gone)
	 * up to the broker; a process that vanishes mid-walk fails the test. */
	char *ids = OUT(
		"p=$(pgrep -f '^sbx-identity-proc' | head -1); [ -n \"$p\" ] || echo none;"
		" while [ \"${p:-0}\" -gt 1 ]; do"
		" c=$(cat /proc/$p/comm) || { echo vanished; break; }; case $c in sbx) break;; esac;"
		" u=$(awk '/^Uid:/ {print $3}' /proc/$p/status);"
		" e=$(awk '/^CapEff:/ {print $2}' /proc/$p/status);"
		" n=$(readlink /proc/$p/ns/user);"
		" if [ \"$u\" = 0 ] || { [ \"$n\" = \"$(readlink /proc/1/ns/user)\" ] &&"
		" [ \"$e\" != 0000000000000000 ]; };"
		" then echo \"$c $u $e\"; fi; p=$(awk '/^PPid:/ {print $2}' /proc/$p/status); done;"
		" echo checked");
	SAME(ids, "checked\n");
}
END_TEST

/* git, python3, cc, make and npm work with the network on. */
START_TEST(test_sandbox_default_tools_work)
{
	restart("[broker]\nnetwork = on\n");
	SAME(run_ok("t1",
		    "git init -q r && cd r && git -c user.name=a -c user.email=a@b commit -q"
		    " --allow-empty -m x && git log --format=%s && python3 -c 'print(6*7)' &&"
		    " printf 'int main(void){return 3;}\\n' > m.c && cc m.c -o m && { ./m; echo $?; } &&"
		    " printf 'all:\\n\\t@echo made\\n' > Makefile && make && npm --version >/dev/null &&"
		    " echo tools"),
	     "x\n42\n3\nmade\ntools\n");
}
END_TEST

/* A fork bomb is contained: the command is killed with a notice, the
 * broker and other sandboxes keep serving, nothing is left running. It
 * stops by itself after 2,000 processes that live 20 s. */
START_TEST(test_sandbox_fork_bomb_is_contained)
{
	restart("[limits]\npids = 64\n");
	add_tool("t1", "bomb.py");
	int st;
	char *out = run("t1", &st, FORK_BOMB);
	ck_assert_msg(st == 137 && strstr(out, "killed: process limit 64 reached"), "exit %d: %s",
		      st, out);
	OK(BOMB_GONE);
	SAME(run_ok("t2", "echo other"), "other\n");
	SAME(run_ok("t1", "echo again"), "again\n");
}
END_TEST

/* A memory bomb is contained the same way; it stops by itself at 1 GiB. */
START_TEST(test_sandbox_memory_bomb_is_contained)
{
	restart("[limits]\nmemory = 256M\n");
	int st;
	add_tool("t1", "bomb.py");
	char *out = run("t1", &st, "python3 bomb.py memory 1");
	ck_assert_msg(st == 137 && strstr(out, "killed: out of memory (limit 256 MiB)") &&
			      !strstr(out, "survived"),
		      "exit %d: %s", st, out);
	SAME(run_ok("t2", "echo other"), "other\n");
}
END_TEST

/* Fixed (a limit's kill told as a plain exit 137; CI's make check,
 * test_sandbox_memory_bomb_is_contained): a one-off's runner that looked
 * at the cgroup's counters at the very wake-up that found the command
 * gone took the OOM kill as seen, then asked again at the command's end,
 * found nothing new and said nothing. A broker whose every poll is late
 * looks at each wake-up: the kill is named each time. */
START_TEST(test_sandbox_a_limit_s_kill_is_named_however_late_the_broker_looks)
{
	teardown();
	H = broker_start_with("shome", "[limits]\nmemory = 256M\npids = 64\n",
			      fmt_cmd("ASAN_OPTIONS=\"$ASAN_OPTIONS:verify_asan_link_order=0\""
				      " SBX_SLOW_POLL_MS=150 LD_PRELOAD='%s'",
				      slowshim()));
	add_tool("t1", "bomb.py");
	for (int i = 0; i < 3; i++) {
		int st;
		char *out = run("t1", &st, "python3 bomb.py memory");
		ck_assert_msg(st == 137 && strstr(out, "killed: out of memory (limit 256 MiB)"),
			      "round %d: exit %d: %s", i, st, out);
	}
	int st;
	char *out = run("t1", &st, FORK_BOMB);
	ck_assert_msg(st == 137 && strstr(out, "killed: process limit 64 reached"), "exit %d: %s",
		      st, out);
	OK(BOMB_GONE);
}
END_TEST

/* The view's quota: a 2 GiB write stops at the limit with EDQUOT, and
 * space comes back when the file goes. */
START_TEST(test_sandbox_disk_quota)
{
	restart("[limits]\ndisk = 64M\ndisk_inodes = 100\n");
	int st;
	char *out = run("t1", &st,
			"head -c 2G /dev/zero > big; echo status $?; du -m big | cut -f1");
	ck_assert_msg(strstr(out, "Disk quota exceeded") && strstr(out, "status 1"), "%s", out);
	struct stat sb;
	ck_assert_int_eq(stat(fmt_cmd("%s/big", workspace("t1")), &sb), 0);
	ck_assert_msg(sb.st_size <= 64 << 20, "%lld bytes written", (long long)sb.st_size);
	/* The view logs why. */
	ck_assert(strstr(read_file(fmt_cmd("%s/log/sbxfs-alice-t1.log", H)),
			 "refused write of 'user-data/workspace/big': the thread's disk quota of"
			 " 64 MiB is reached"));
	SAME(run_ok("t1", "rm big; head -c 1M /dev/zero > small && echo ok"), "ok\n");
	out = run("t1", &st,
		  "for i in $(seq 150); do : > f$i || break; done; echo files $(ls | wc -l)");
	ck_assert_msg(strstr(out, "Disk quota exceeded") && strstr(out, "files "), "%s", out);
	ck_assert_int_le(atoi(strstr(out, "files ") + 6), 100);
}
END_TEST

/* Without cgroups the limits fall back to rlimits on the sandbox's own
 * uid: the fork bomb is still stopped and killed, the memory bomb's
 * allocations fail. */
START_TEST(test_sandbox_rlimit_fallback)
{
	restart("[limits]\ncgroups = off\npids = 64\nmemory = 256M\n");
	ck_assert(strstr(read_file(fmt_cmd("%s/run/broker.log", H)),
			 "limit pids: no cgroup, falling back"));
	add_tool("t1", "bomb.py");
	int st;
	char *out = run("t1", &st, FORK_BOMB);
	ck_assert_msg(st == 137 && strstr(out, "killed: process limit 64 reached"), "exit %d: %s",
		      st, out);
	OK(BOMB_GONE);
	out = run("t1", &st, "python3 bomb.py memory");
	ck_assert_msg(st == 1 && strstr(out, "MemoryError") && !strstr(out, "survived"),
		      "exit %d: %s", st, out);
}
END_TEST

/* sbx doctor names what this host allows and what holds here. */
START_TEST(test_sandbox_doctor)
{
	int st;
	char *out = capture(fmt_cmd("'%s' doctor --home '%s'", test_bin("sbx"), H), &st);
	static const char *const lines[] = {
		"/dev/fuse:",
		"fusermount3:",
		"user namespaces:",
		"bubblewrap:",
		"cgroup v2 delegation:",
		"seccomp:",
		"openat2:",
		"reflinks:",
		"inotify:",
		"ok       store: sqlite ",
		"ok       shared home: ",
		"active   no host root inside:",
		"caller's privileges in the view:",
		"kernel interfaces:",
		"seccomp filter:",
		"host secrets:",
		"boundary hygiene:",
		"one view per thread:",
		"process limit:",
		"memory limit:",
		"disk quota:",
		"host mode:",
	};
	for (size_t i = 0; i < sizeof(lines) / sizeof(*lines); i++)
		ck_assert_msg(strstr(out, lines[i]), "no '%s' in:\n%s", lines[i], out);
	ck_assert_msg(st == 0 && strstr(out, "every protection is active"), "exit %d:\n%s", st,
		      out);
	SAME(OUT("'%s' doctor --home '%s' --format json | python3 tests/tools/jsonq.py"
		 " 'd[\"all_active\"], len(d[\"host\"]) >= 9,"
		 " [p[\"state\"] for p in d[\"protections\"] if p[\"name\"] == \"seccomp filter\"]'",
		 test_bin("sbx"), H),
	     "True True ['active']\n");
	/* A store that cannot be reached is said, its password hidden. */
	ck_assert_int_eq(write_file(fmt_cmd("%s/sbx.conf", H),
				    "store = host=/nonexistent password=s3cret dbname=x\n"),
			 0);
	out = capture(fmt_cmd("'%s' doctor --home '%s'", test_bin("sbx"), H), &st);
	ck_assert_msg(strstr(out, "no       store: host=/nonexistent password=*** dbname=x:"
				  " cannot connect to PostgreSQL: ") &&
			      !strstr(out, "s3cret"),
		      "%s", out);
	/* A protection that does not hold is named, with why, and fails. */
	ck_assert_int_eq(write_file(fmt_cmd("%s/sbx.conf", H), "[limits]\ncgroups = off\n"), 0);
	out = capture(fmt_cmd("'%s' doctor --home '%s'", test_bin("sbx"), H), &st);
	ck_assert_msg(st == 1 && strstr(out, "partial  process limit: rlimit") &&
			      strstr(out, "cgroups = off in sbx.conf"),
		      "exit %d:\n%s", st, out);
}
END_TEST

/* A background fork bomb in a session, between commands, is found by
 * the broker's main loop and its session ended. */
START_TEST(test_sandbox_idle_session_bomb_is_ended)
{
	restart("[limits]\npids = 64\n");
	add_tool("t1", "bomb.py");
	int st;
	run_opts("t1", "--scope s", &st, FORK_BOMB " >/dev/null 2>&1 &");
	ck_assert_int_eq(st, 0);
	OK("for i in $(seq 100); do grep -q 'scope s: killed: process limit 64 reached between"
	   " commands; ended' '%s/run/broker.log' && exit 0; sleep 0.1; done; exit 1",
	   H);
	OK(BOMB_GONE);
	SAME(run_opts("t1", "--scope s", &st, "echo fresh"), "fresh\n");
}
END_TEST

/* A sandbox that bubblewrap cannot make (here a stand-in that fails as
 * bwrap does without user namespaces) is refused with bwrap's reason,
 * in one line, and no output of it passes for the command's. */
START_TEST(test_sandbox_failed_start_says_why)
{
	char *fake = fmt_cmd("%s/bwrap", test_dir("fake"));
	ck_assert_int_eq(write_file(fake, "#!/bin/sh\necho 'bwrap: No permissions to creating new"
					  " namespace, likely because the kernel does not allow"
					  " non-privileged user namespaces.' >&2\nexit 1\n"),
			 0);
	OK("chmod 755 '%s' && chmod 755 \"$(dirname '%s')\"", fake, fake);
	restart(fmt_cmd("[broker]\nbwrap = %s\n", fake));
	int st;
	SAME(run("t1", &st, "echo never"),
	     "sbx: exec: cannot start the sandbox: bwrap: No permissions"
	     " to creating new namespace, likely because the kernel does not allow non-privileged"
	     " user namespaces.\n");
	ck_assert_int_eq(st, 1);
	SAME(run_opts("t1", "--scope s", &st, "echo never"),
	     "sbx: exec: cannot start the sandbox:"
	     " bwrap: No permissions to creating new namespace, likely because the kernel does not"
	     " allow non-privileged user namespaces.\n");
	ck_assert(strstr(read_file(fmt_cmd("%s/run/broker.log", H)),
			 "namespace mode cannot start"
			 " sandboxes here: bwrap: No permissions"));
}
END_TEST

/* A missing bubblewrap is named, at start and for each command, in one
 * line. */
START_TEST(test_sandbox_missing_bubblewrap_is_named)
{
	restart("[broker]\nbwrap = /nonexistent/bwrap\n");
	int st;
	char *out = run("t1", &st, "true");
	ck_assert_int_eq(st, 1);
	SAME(out, "sbx: exec: bubblewrap: bwrap = /nonexistent/bwrap in [broker]: No such file or"
		  " directory\n");
	ck_assert(strstr(read_file(fmt_cmd("%s/run/broker.log", H)),
			 "namespace mode cannot run"
			 " commands: bubblewrap: bwrap = /nonexistent/bwrap"));
	out = capture(fmt_cmd("'%s' doctor --home '%s'", test_bin("sbx"), H), &st);
	ck_assert_msg(st == 1 &&
			      strstr(out, "no       bubblewrap: bubblewrap: bwrap = /nonexistent"),
		      "%s", out);
}
END_TEST

/* Until the broker's log holds N lines with TEXT (at most 30 s). */
static void wait_for_log(const char *text, int n)
{
	OK("for i in $(seq 300); do [ \"$(grep -csF -- '%s' '%s/run/broker.log')\" -ge %d ] &&"
	   " exit 0; sleep 0.1; done; exit 1",
	   text, H, n);
}

/* What a one-off could leave for the next: its processes, the files of
 * the sandbox's own tmpfs trees (/tmp, /dev, /dev/shm, the root), their
 * modes and attributes, a symlink replaced, System V IPC objects. */
#define STATE                                                                            \
	"pgrep -l sleep || echo no-process; ls -A /tmp /dev/shm; ls -A / /mnt /dev |"    \
	" tr '\\n' ' '; echo; readlink /dev/ptmx; stat -c '%a %n' / /tmp /dev /dev/shm;" \
	" ipcs -m -q -s | grep -c '^0x'; python3 -c 'import os;"                         \
	" print([os.listxattr(p) for p in (\"/tmp\", \"/dev/shm\", \"/\")])'"

/* One-offs of a sandbox after its first run in one launcher, and share
 * nothing through it: a one-off that leaves a daemon, files, a changed
 * tree or IPC objects behind finds the next one-off's sandbox as the
 * first found it; it cannot make a POSIX message queue (none could be
 * listed to be removed). */
START_TEST(test_sandbox_one_offs_share_nothing_through_the_launcher)
{
	run_ok("t1", "true"); /* the first: a fresh sandbox, then the launcher */
	wait_for_log("launcher alice/t1: started", 1);
	char *clean = run_ok("t1", STATE);
	ck_assert_msg(strstr(clean, "no-process\n"), "%s", clean);
	run_ok("t1", "sleep 300 & (setsid sleep 301 >/dev/null 2>&1 &);"
		     " nohup sleep 302 >/dev/null 2>&1 &"
		     " echo x > /tmp/a; mkdir -p /tmp/d/e /dev/shm/d /mnt/d; touch /x /dev/x;"
		     " chmod 000 /tmp/d /dev/shm; chmod 700 /tmp; chmod 1777 /;"
		     " ln -sfn /tmp /dev/ptmx; ipcmk -M 4096 -Q -S 2 >/dev/null;"
		     " python3 -c 'import os; os.setxattr(\"/tmp\", \"user.left\", b\"1\")' ||"
		     " true");
	SAME(run_ok("t1", STATE), clean);
	SAME(run_ok("t1", "python3 -c 'import ctypes, os; rt = ctypes.CDLL(\"librt.so.1\");"
			  " print(rt.mq_open(b\"/q\", os.O_CREAT | os.O_RDWR, 0o600, None))'"),
	     "-1\n");
	/* Each ran in the launcher. */
	ck_assert_int_ge(atoi(OUT("grep -c 'exec alice/t1 (launcher)' '%s/run/broker.log'", H)), 4);
	/* The view's directories moved where the launcher removes what a
	 * command added: it ends instead, and the view loses nothing. */
	run_ok("t1", "echo kept > /mnt/user-data/workspace/kept; mv /mnt /mnt2");
	SAME(run_ok("t1", "cat /mnt/user-data/workspace/kept; test -e /mnt2 || echo no-mnt2"),
	     "kept\nno-mnt2\n");
	SAME(read_file(fmt_cmd("%s/kept", workspace("t1"))), "kept\n");
}
END_TEST

/* The launcher is out of the one-offs' reach: not traceable, its
 * descriptors (its socket to the broker) and environment unreadable,
 * deaf to their signals (the namespace's init), and a one-off has no
 * descriptor but its own. */
START_TEST(test_sandbox_the_launcher_is_out_of_reach)
{
	run_ok("t1", "true");
	wait_for_log("launcher alice/t1: started", 1);
	SAME(run_ok("t1",
		    "cat /proc/1/comm; ls /proc/1/fd 2>/dev/null || echo no-fds;"
		    " cat /proc/1/environ 2>/dev/null || echo no-environ;"
		    " head -c1 /proc/1/mem 2>/dev/null || echo no-mem;"
		    " python3 -c 'import ctypes; print(ctypes.CDLL(None).ptrace(16, 1, 0, 0))';"
		    " kill -STOP 1; kill -TERM 1; kill -KILL 1; ls /proc/self/fd | tr '\\n' ' ';"
		    " echo"),
	     "sbx-launcher\nno-fds\nno-environ\nno-mem\n-1\n0 1 2 3 \n");
	SAME(run_ok("t1", "echo alive"), "alive\n");
	/* The same launcher ran both: one started, no other. */
	SAME(OUT("grep -c 'launcher alice/t1: started' '%s/run/broker.log'", H), "1\n");
	ck_assert_int_ge(atoi(OUT("grep -c 'exec alice/t1 (launcher)' '%s/run/broker.log'", H)), 2);
}
END_TEST

/* What a process of the sandbox's uid can change of the launcher without
 * tracing it, and its children would inherit: its rlimits (a hard limit
 * lowered cannot be raised again), its nice value, scheduling policy,
 * CPU affinity and I/O priority. The next one-off starts with them as
 * the first did: the launcher that was changed ends. */
START_TEST(test_sandbox_a_one_off_cannot_change_what_the_next_inherits)
{
	static const char inherited[] = "ulimit -Hn; ulimit -n; ulimit -f; ulimit -u; nice;"
					" chrt -p $$ | cut -d: -f2; taskset -p $$ | cut -d: -f2;"
					" ionice -p $$";

	run_ok("t1", "true");
	wait_for_log("launcher alice/t1: started", 1);
	char *clean = run_ok("t1", inherited);
	run_ok("t1", "prlimit --pid 1 --nofile=64:64 --fsize=4096 --nproc=5 >/dev/null 2>&1;"
		     " renice -n 19 -p 1 >/dev/null 2>&1; chrt -i -p 0 1 >/dev/null 2>&1;"
		     " taskset -p 1 1 >/dev/null 2>&1; ionice -c 3 -p 1 >/dev/null 2>&1; true");
	SAME(run_ok("t1", inherited), clean);
	/* The attack took: the launcher it reached ended. */
	wait_for_log("): it exited; ended", 1);
}
END_TEST

Suite *suite_sandbox(void)
{
	Suite *s = suite_create("sandbox");
	TCase *tc = tcase_create("sandbox");

	tcase_set_timeout(tc, 90);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_sandbox_proc_sys_is_read_only);
	tcase_add_test(tc, test_sandbox_sysrq_trigger_is_read_only);
	tcase_add_test(tc, test_sandbox_no_set_id_files_on_the_host);
	tcase_add_test(tc, test_sandbox_chmod_setuid_as_the_agent);
	tcase_add_test(tc, test_sandbox_no_device_nodes);
	tcase_add_test(tc, test_sandbox_host_secrets_stay_out);
	tcase_add_test(tc, test_sandbox_request_env_stays_inside);
	tcase_add_test(tc, test_sandbox_environment_is_built_not_filtered);
	tcase_add_test(tc, test_sandbox_account_backups_list_no_host_user);
	tcase_add_test(tc, test_sandbox_no_inherited_descriptors);
	tcase_add_test(tc, test_sandbox_colliding_ids_share_nothing);
	tcase_add_test(tc, test_sandbox_no_ptrace_across_sandboxes);
	tcase_add_test(tc, test_sandbox_refused_calls);
	tcase_add_test(tc, test_sandbox_socket_families);
	tcase_add_test(tc, test_sandbox_masked_proc_files);
	tcase_add_test(tc, test_sandbox_proc_shows_no_host_paths);
	tcase_add_test(tc, test_sandbox_no_cgroupfs);
	tcase_add_test(tc, test_sandbox_identity_and_ownership);
	tcase_add_test(tc, test_sandbox_default_tools_work);
	tcase_add_test(tc, test_sandbox_fork_bomb_is_contained);
	tcase_add_test(tc, test_sandbox_memory_bomb_is_contained);
	tcase_add_test(tc, test_sandbox_a_limit_s_kill_is_named_however_late_the_broker_looks);
	tcase_add_test(tc, test_sandbox_disk_quota);
	tcase_add_test(tc, test_sandbox_rlimit_fallback);
	tcase_add_test(tc, test_sandbox_doctor);
	tcase_add_test(tc, test_sandbox_missing_bubblewrap_is_named);
	tcase_add_test(tc, test_sandbox_idle_session_bomb_is_ended);
	tcase_add_test(tc, test_sandbox_failed_start_says_why);
	tcase_add_test(tc, test_sandbox_one_offs_share_nothing_through_the_launcher);
	tcase_add_test(tc, test_sandbox_the_launcher_is_out_of_reach);
	tcase_add_test(tc, test_sandbox_a_one_off_cannot_change_what_the_next_inherits);
	suite_add_tcase(s, tc);
	return s;
}
