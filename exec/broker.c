/* broker.c - see broker.h: the socket and its lock, a thread per
 * connection, the main loop, the shutdown. The requests are
 * broker_ops.c's; what a connection sends, transport.c's. */
#include "broker.h"
#include "broker_int.h"
#include "broker_ops.h"
#include "cgroup.h"
#include "fdpass.h"
#include "identity.h"
#include "launcher.h"
#include "provider.h"
#include "sandbox.h"
#include "session.h"
#include "transport.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/home.h"
#include "common/log.h"
#include "common/spawn.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* How long a connection accepted just before the broker stops may take
 * to send its request: it still gets a reply ("shutting_down"). */
#define STOP_GRACE_MS 1000
/* How long the shutdown waits for the connections to be done. */
#define STOP_WAIT_S 30

/* ---- stopping ----------------------------------------------------------- */

bool broker_stopping(const struct broker *b)
{
	struct pollfd p = { b->stop[0], POLLIN, 0 };

	return poll(&p, 1, 0) > 0;
}

void broker_stop(struct broker *b)
{
	(void)!write(b->stop[1], "x", 1);
	pthread_mutex_lock(&b->lock);
	pthread_cond_broadcast(&b->admitted); /* waiters give up at once */
	pthread_mutex_unlock(&b->lock);
}

/* ---- connections -------------------------------------------------------- */

/* Serves C's requests until it hangs up, or the broker stops: then what
 * it sent, or sends within STOP_GRACE_MS of its connecting, still gets
 * its reply. */
static void *serve(void *arg)
{
	struct client *c = arg;
	struct broker *b = c->b;
	_cleanup_(freep) char *buf = malloc(BROKER_LINE_MAX + 1);
	size_t len = 0;
	bool skipping = false; /* the rest of an oversized line */

	while (buf) {
		struct pollfd p[2] = { { c->fd, POLLIN, 0 }, { b->stop[0], POLLIN, 0 } };
		int wait = -1;
		if (broker_stopping(b)) {
			int64_t left = c->accepted_ms + STOP_GRACE_MS - now_ms();
			wait = left > 0 ? (int)left : 0;
			p[1].fd = -1;
		}
		int n = poll(p, 2, wait);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* stopping, and it sent nothing more */
		if (!p[0].revents)
			continue;
		/* A client sends one request at a time, its fd (if any) with
		 * its line's first byte: the fd is the next line's. */
		n = (int)fdpass_recv(c->fd, buf + len, BROKER_LINE_MAX + 1 - len, &c->passed_fd);
		if (n <= 0)
			break;
		len += (size_t)n;
		char *nl;
		while ((nl = memchr(buf, '\n', len))) {
			size_t line = (size_t)(nl - buf);
			if (!skipping && line > 0)
				broker_dispatch(c, buf, line);
			closep(&c->passed_fd); /* what its request left */
			skipping = false;
			memmove(buf, nl + 1, len - line - 1);
			len -= line + 1;
		}
		if (len > BROKER_LINE_MAX) {
			if (!skipping)
				send_error(c, NULL, "too_large",
					   "a request line is longer than %u bytes",
					   BROKER_LINE_MAX);
			skipping = true;
			len = 0;
		}
	}
	broker_client_gone(c);
	closep(&c->passed_fd);
	close(c->fd);
	free(c->outbox);
	free(c);
	pthread_mutex_lock(&b->lock);
	if (--b->clients == 0)
		pthread_cond_broadcast(&b->clients_gone);
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

/* Accepts a connection on LFD and serves it on a thread of its own.
 * Returns 0, or -errno from accept4 (-EAGAIN: none waits). */
static int accept_client(struct broker *b, int lfd)
{
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	pthread_t t;
	pthread_attr_t attr;

	if (fd < 0)
		return -errno;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 ||
	    (cred.uid != geteuid() && cred.uid != 0)) {
		struct client refused = { .b = b, .fd = fd };
		send_error(&refused, NULL, "not_allowed",
			   "only uid %u and root may use this broker", (unsigned)geteuid());
		free(refused.outbox);
		log_warn("refused a client of uid %u", (unsigned)cred.uid);
		close(fd);
		return 0;
	}
	struct client *c = malloc(sizeof(*c));
	if (!c) {
		close(fd);
		return 0;
	}
	*c = (struct client){
		.b = b, .fd = fd, .uid = cred.uid, .accepted_ms = now_ms(), .passed_fd = -1
	};
	struct timeval stall = { SEND_STALL_S, 0 };
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &stall, sizeof(stall));
	pthread_mutex_lock(&b->lock);
	b->clients++;
	pthread_mutex_unlock(&b->lock);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, serve, c) != 0) {
		close(fd);
		free(c);
		pthread_mutex_lock(&b->lock);
		b->clients--;
		pthread_mutex_unlock(&b->lock);
	}
	pthread_attr_destroy(&attr);
	return 0;
}

/* ---- the socket and the main loop --------------------------------------- */

/* A sockaddr for HOME/run/broker.sock; a long HOME goes through the run
 * directory's fd (DIRFD) as /proc/self/fd/N/broker.sock. */
static int socket_addr(const char *home, int dirfd, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if ((size_t)snprintf(sa->sun_path, sizeof(sa->sun_path),
			     "%s/" HOME_RUN "/" HOME_BROKER_SOCKET, home) < sizeof(sa->sun_path))
		return 0;
	if (dirfd < 0)
		return -ENAMETOOLONG;
	snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/" HOME_BROKER_SOCKET, dirfd);
	return 0;
}

static int run_dir(const char *home)
{
	_cleanup_(closep) int h = home_open(home);

	return h < 0 ? h : dir_ensure(h, HOME_RUN, 0700);
}

int broker_connect(const char *home)
{
	_cleanup_(closep) int dir = -1;
	struct sockaddr_un sa;
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/" HOME_RUN, home);
	dir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (socket_addr(home, dir, &sa) < 0)
		return -ENAMETOOLONG;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

static void on_alarm(int sig)
{
	(void)sig;
}

int broker_wait_stopped(const char *home, unsigned timeout_s)
{
	char path[PATH_MAX];
	struct sigaction alarm_act = { .sa_handler = on_alarm }, old;

	if ((size_t)snprintf(path, sizeof(path), "%s/" HOME_RUN "/" HOME_BROKER_LOCK, home) >=
	    sizeof(path))
		return -ENAMETOOLONG;
	_cleanup_(closep) int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	/* No SA_RESTART: the alarm interrupts flock(). */
	sigaction(SIGALRM, &alarm_act, &old);
	alarm(timeout_s);
	int r = flock(fd, LOCK_SH) < 0 ? -errno : 0;
	alarm(0);
	sigaction(SIGALRM, &old, NULL);
	return r == -EINTR ? -ETIMEDOUT : r;
}

/* Takes HOME/run/broker.lock: one broker per home, held until it exits. */
static int take_lock(int dir, const char *home)
{
	int fd = openat(dir, HOME_BROKER_LOCK, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	char pid[32] = "";

	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		fprintf(stderr, "sbx: broker: a broker already runs for %s%s%s%s\n", home,
			*pid ? " (pid " : "", pid, *pid ? ")" : "");
		close(fd);
		return -EEXIST;
	}
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) == 0)
		(void)!pwrite(fd, pid, strlen(pid), 0);
	return fd;
}

static int listen_socket(const char *home, int dir)
{
	struct sockaddr_un sa;
	int fd, r;

	if ((r = socket_addr(home, dir, &sa)) < 0)
		return r;
	unlinkat(dir, HOME_BROKER_SOCKET, 0); /* ours: we hold the lock */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	mode_t old = umask(0177); /* the socket is 0600 */
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || listen(fd, 64) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

/* The signals that stop the broker: blocked in every thread (see
 * broker_main) and read from a signalfd by the serving loop. */
static void stop_signals(sigset_t *mask)
{
	sigemptyset(mask);
	sigaddset(mask, SIGTERM);
	sigaddset(mask, SIGINT);
	sigaddset(mask, SIGHUP);
}

/* Whether USER's THREAD has shell sessions: they bind its view, which
 * is then not idle (provider_tick). Its one-off launchers bind it too,
 * but are only kept for speed: they end with it. */
static bool has_sessions(void *arg, const char *user, const char *thread)
{
	struct broker *b = arg;

	if (sessions_of(b->sessions, user, thread) > 0)
		return true;
	if (b->launchers)
		launchers_end(b->launchers, user, thread);
	return false;
}

/* Whether B has had no client for its exit_idle_s (IDLE_SINCE_MS: when
 * the last one left, 0 while one is connected). */
static bool idle_too_long(struct broker *b, int64_t *idle_since_ms)
{
	pthread_mutex_lock(&b->lock);
	unsigned clients = b->clients;
	pthread_mutex_unlock(&b->lock);
	if (!b->exit_idle_s || clients) {
		*idle_since_ms = 0;
		return false;
	}
	if (!*idle_since_ms)
		*idle_since_ms = now_ms();
	return now_ms() - *idle_since_ms >= (int64_t)b->exit_idle_s * 1000;
}

static int serve_loop(struct broker *b, int lfd)
{
	sigset_t mask;
	stop_signals(&mask);
	_cleanup_(closep) int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	int64_t idle_since_ms = 0;

	for (;;) {
		struct pollfd p[3] = { { lfd, POLLIN, 0 },
				       { b->stop[0], POLLIN, 0 },
				       { sfd, POLLIN, 0 } };
		int n = poll(p, 3, 1000);
		if (n < 0 && errno != EINTR)
			return 1;
		if (p[1].revents)
			return 0;
		if (p[2].revents) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof(si)) == sizeof(si))
				log_info("signal %u: shutting down", si.ssi_signo);
			return 0;
		}
		if (p[0].revents)
			accept_client(b, lfd);
		provider_tick(b->provider, has_sessions, b);
		sessions_tick(b->sessions);
		cgroups_tick(b->limits);
		if (idle_too_long(b, &idle_since_ms)) {
			log_info("no client for %u s: stopping (--exit-idle)", b->exit_idle_s);
			return 0;
		}
	}
}

/* The first half of a shutdown: no new client can
 * connect, those that did get their replies, and the commands running
 * are stopped. Returns 0 once every connection is done, or -ETIMEDOUT
 * after STOP_WAIT_S: their threads may still use the broker's state. */
static int shut_down(struct broker *b, int dir, int lfd)
{
	broker_stop(b);
	unlinkat(dir, HOME_BROKER_SOCKET, 0); /* connect() now fails */
	fcntl(lfd, F_SETFL, O_NONBLOCK);
	while (accept_client(b, lfd) == 0) {
		/* the backlog: each gets a reply */
	}
	close(lfd);

	struct timespec until = deadline_in(CLOCK_REALTIME, STOP_WAIT_S * 1000000000LL);
	int e = 0;
	pthread_mutex_lock(&b->lock);
	if (b->clients)
		log_info("stopping: %u connection%s to finish (commands running are stopped)",
			 b->clients, b->clients == 1 ? "" : "s");
	while (b->clients && e != ETIMEDOUT)
		e = pthread_cond_timedwait(&b->clients_gone, &b->lock, &until);
	unsigned busy = b->clients;
	pthread_mutex_unlock(&b->lock);
	if (busy)
		log_warn("stopping: %u connection%s still busy after %d s; exiting without"
			 " tidying up (the next broker detaches the views)",
			 busy, busy == 1 ? "" : "s", STOP_WAIT_S);
	return busy ? -ETIMEDOUT : 0;
}

/* ---- the broker's life -------------------------------------------------- */

static void log_limit(void *arg, const char *limit, const char *how, const char *text)
{
	(void)arg;
	if (!strcmp(how, "rlimit"))
		log_warn("limit %s: no cgroup, falling back: %s", limit, text);
	else
		log_info("limit %s (%s): %s", limit, how, text);
}

/* Whether bubblewrap works here as a sandbox's uid: said at start, not
 * at the first command. */
static void probe_sandbox(struct broker *b)
{
	struct identity id;
	char why[512];

	if (identity_take(b->home, "-", "-probe", b->config.sandbox_uid_base,
			  b->config.sandbox_uid_count, &id, why, sizeof(why)) < 0 ||
	    sandbox_probe(b->sandbox, &id, why, sizeof(why)) < 0)
		log_warn("namespace mode cannot start sandboxes here: %s (sbx doctor says more)",
			 why);
	else if (sandbox_leaves_chroot(b->sandbox))
		log_info("the broker runs in a chroot: each sandbox leaves it first, in its own"
			 " mount namespace (a chroot may not make user namespaces)");
	identity_release(&id);
}

/* What protects the sandboxes of this broker, and what does not. */
static void log_protections(const struct broker *b)
{
	const struct config *c = &b->config;

	if (b->sandbox)
		log_info("sandbox: %s, seccomp filter, %zu paths of /etc masked, %s",
			 sandbox_bwrap(b->sandbox), sandbox_masked(b->sandbox),
			 geteuid() == 0 ? "a host uid of its own per sandbox"
					: "the broker's own uid (not root)");
	if (geteuid() == 0)
		log_info("sandbox uids %u to %u", (unsigned)c->sandbox_uid_base,
			 (unsigned)(c->sandbox_uid_base + c->sandbox_uid_count - 1));
	cgroups_describe(b->limits, log_limit, NULL);
}

/* The parent of a broker that detaches (pid PID): waits until it says on
 * READY that it serves, and says where it went, or that it cannot (it
 * said why on stderr). Returns the parent's exit status. */
static int wait_ready(int ready[2], const char *home, pid_t pid, bool quiet)
{
	char c;

	close(ready[1]);
	ssize_t n = read(ready[0], &c, 1);
	if (n != 1 || c != '0')
		return 1; /* the child said why */
	/* It detaches: say where it went, and who it is. */
	if (!quiet)
		printf("sbx: broker serving %s/" HOME_RUN "/" HOME_BROKER_SOCKET " (pid %d)\n",
		       home, (int)pid);
	return 0;
}

/* The broker's log: stderr in the foreground; else HOME/run/broker.log,
 * which stderr writes too, with stdin and stdout on /dev/null. */
static void log_open(const char *home, bool foreground, bool debug)
{
	char path[PATH_MAX + 32];

	if (foreground) {
		log_setup("sbx-broker", NULL, debug ? LOG_DEBUG : LOG_INFO, true);
		return;
	}
	snprintf(path, sizeof(path), "%s/" HOME_RUN "/" HOME_BROKER_LOG, home);
	FILE *f = fopen(path, "ae");
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (f) {
		setvbuf(f, NULL, _IOLBF, 0);
		dup2(fileno(f), 2); /* sbxfs's messages land here too */
		log_setup("sbx-broker", f, debug ? LOG_DEBUG : LOG_INFO, true);
		snprintf(path, sizeof(path), "%s/" HOME_RUN, home);
		int run = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (run >= 0)
			log_set_file(run, HOME_BROKER_LOG, LOG_FILE_MAX);
	}
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		close(null);
	}
}

/* B's state and parts, but for its configuration: the stop pipe, the
 * locks, the sandbox (probed; without one only namespace mode is
 * refused), the limits, the views and the sessions. Returns 0 or -errno;
 * what it made is not freed on failure (the broker exits). */
static int broker_setup(struct broker *b)
{
	if (pipe2(b->stop, O_CLOEXEC) < 0)
		return -errno;
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->admitted, NULL);
	pthread_cond_init(&b->clients_gone, NULL);
	b->sandbox = sandbox_new(&b->config, b->sandbox_err, sizeof(b->sandbox_err));
	if (!b->sandbox)
		log_warn("namespace mode cannot run commands: %s", b->sandbox_err);
	else
		probe_sandbox(b);
	b->limits = cgroups_new(&b->config.limits, b->home, false);
	b->provider = provider_new(b->home, &b->config);
	b->sessions = b->limits ? sessions_new(b->config.max_shell_sessions,
					       b->config.max_shell_sessions_total, b->limits)
				: NULL;
	if (b->sandbox && !b->config.one_off_fresh && b->config.isolation == ISOLATION_NAMESPACE) {
		char program[PATH_MAX], err[PATH_MAX + 64];
		sibling_program("sbx-launcher", program, sizeof(program));
		b->launchers = launchers_new(program, err, sizeof(err));
		if (!b->launchers)
			log_warn("one-off commands get a fresh sandbox each: %s", err);
	}
	return b->provider && b->sessions ? 0 : -ENOMEM;
}

/* Frees B's parts, once no connection uses them. */
static void broker_teardown(struct broker *b)
{
	sessions_free(b->sessions); /* their shells use the views */
	launchers_free(b->launchers);
	provider_free(b->provider);
	cgroups_free(b->limits);
	sandbox_free(b->sandbox);
	if (b->kept)
		store_close(b->kept);
	free(b->slots); /* the one-off commands' turns (broker_ops.c) */
}

/* broker_main(), *CHILD set in the process that detached to serve. */
static int broker_run(const struct broker_options *o, bool *child)
{
	char path[PATH_MAX + 32], err[PATH_MAX + 256];
	struct broker b = { 0 };
	int ready[2] = { -1, -1 }, r;

	/* A command's output is captured up to 10 MiB per stream, on the
	 * thread of its connection: glibc's per-thread arenas (and its
	 * threshold, which grows as big blocks are freed) would keep such
	 * buffers once freed, and the broker's RSS would grow by 10 MiB
	 * or more per arena. Buffers from 1 MiB on are mapped and unmapped
	 * instead. */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
	snprintf(b.home, sizeof(b.home), "%s", o->home);
	b.exit_idle_s = o->exit_idle_s;
	if (o->config)
		snprintf(path, sizeof(path), "%s", o->config);
	else
		snprintf(path, sizeof(path), "%s/" HOME_CONFIG, o->home);
	r = config_load(path, &b.config, err, sizeof(err));
	if (r < 0 && !(r == -ENOENT && !o->config)) {
		fprintf(stderr, "sbx: broker: %s\n", err);
		return 1;
	}
	_cleanup_(closep) int dir = run_dir(o->home);
	if (dir < 0) {
		fprintf(stderr, "sbx: broker: cannot make %s/" HOME_RUN ": %s\n", o->home,
			strerror(-dir));
		config_free(&b.config);
		return 1;
	}
	if (!o->foreground) {
		/* The parent returns once the socket is ready (or says why not);
		 * the configuration is the child's. */
		pid_t pid = pipe2(ready, O_CLOEXEC) < 0 ? -1 : fork();
		if (pid != 0)
			config_free(&b.config);
		if (pid < 0)
			return 1;
		if (pid > 0)
			return wait_ready(ready, o->home, pid, o->quiet);
		*child = true;
		close(ready[0]);
		setsid();
	}
	_cleanup_(closep) int lock = take_lock(dir, o->home);
	if (lock < 0)
		goto fail;
	int lfd = listen_socket(o->home, dir);
	if (lfd < 0) {
		fprintf(stderr,
			"sbx: broker: cannot listen on %s/" HOME_RUN "/" HOME_BROKER_SOCKET
			": %s\n",
			o->home, strerror(-lfd));
		goto fail;
	}
	log_open(o->home, o->foreground, o->debug);
	/* Before any thread starts: a thread that left them unblocked
	 * would take their default action, ending the process without
	 * unmounting or removing anything. */
	sigset_t stop;
	stop_signals(&stop);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	if (broker_setup(&b) < 0)
		goto fail;
	log_protections(&b);
	log_info("serving %s/" HOME_RUN "/" HOME_BROKER_SOCKET " (isolation %s%s)", o->home,
		 b.config.isolation == ISOLATION_HOST ? "host" : "namespace",
		 b.config.allow_host_bash ? ", host bash allowed" : "");
	if (ready[1] >= 0) {
		(void)!write(ready[1], "0", 1);
		close(ready[1]);
	}
	r = serve_loop(&b, lfd);
	if (shut_down(&b, dir, lfd) == 0)
		broker_teardown(&b);
	log_info("stopped");
	config_free(&b.config);
	return r;
fail:
	if (ready[1] >= 0)
		(void)!write(ready[1], "1", 1);
	config_free(&b.config);
	return 1;
}

int broker_main(const struct broker_options *o)
{
	bool child = false;
	int r = broker_run(o, &child);

	/* The detached broker never goes back to its caller's code (sbx mcp
	 * starts one from the middle of its own). */
	if (child)
		exit(r);
	return r;
}
