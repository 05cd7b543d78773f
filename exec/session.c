/* session.c - see session.h. */
#include "session.h"
#include "env.h"
#include "spawner.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct session {
	struct session *next;
	char *user, *thread, *scope;
	char *cwd; /* where its shell started (virtual), or NULL */
	bool host;
	pid_t pid; /* the shell (or bwrap), its own group */
	int pidfd, in, out, err;
	int init;		  /* its sandbox's first process (pidfd), or -1 */
	struct cgroup_leaf *leaf; /* its cgroup leaf; NULL: none */
	pthread_mutex_t run;	  /* one command at a time, in order */
	unsigned users;		  /* commands holding or waiting for it */
	bool dead;
	bool starting;	    /* started ahead of need (session_prestart()),
			     * until its start ends: the first to go then */
	uint64_t last_used; /* the pool's use counter then (0: never) */
};

struct session_pool {
	pthread_mutex_t lock;
	struct session *list;
	unsigned max, total_max, count; /* per sandbox, in all; alive */
	uint64_t uses;			/* orders last_used */
	/* Shells are forked there: they outlive the connection's thread. */
	struct spawner *spawner;
	pthread_cond_t put_back;      /* a session's users fell to 0 */
	const struct cgroups *limits; /* for notices */
};

struct session_pool *sessions_new(unsigned per_sandbox, unsigned total,
				  const struct cgroups *limits)
{
	struct session_pool *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	if (!(p->spawner = spawner_new())) {
		free(p);
		return NULL;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->put_back, NULL);
	p->max = per_sandbox;
	p->total_max = total;
	p->limits = limits;
	return p;
}

/* Kills S's process tree (its leaf, the shell's group) and reaps its
 * shell. */
static void kill_session(struct session *s)
{
	if (s->pid > 0) {
		run_kill_tree(s->leaf, s->init, s->pid, s->pidfd);
		waitpid(s->pid, NULL, 0);
		s->pid = -1;
	}
	cgroup_leaf_free(s->leaf);
	s->leaf = NULL;
	int *fds[] = { &s->in, &s->out, &s->err, &s->pidfd, &s->init };
	for (size_t i = 0; i < sizeof(fds) / sizeof(*fds); i++) {
		closep(fds[i]);
		*fds[i] = -1;
	}
	s->dead = true;
}

static void session_free(struct session *s)
{
	kill_session(s);
	pthread_mutex_destroy(&s->run);
	free(s->user);
	free(s->thread);
	free(s->scope);
	free(s->cwd);
	free(s);
}

void sessions_free(struct session_pool *p)
{
	if (!p)
		return;
	spawner_free(p->spawner);
	while (p->list) {
		struct session *s = p->list;
		p->list = s->next;
		session_free(s);
	}
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->put_back);
	free(p);
}

unsigned sessions_of(struct session_pool *p, const char *user, const char *thread)
{
	unsigned n = 0;

	pthread_mutex_lock(&p->lock);
	for (struct session *s = p->list; s; s = s->next)
		n += !s->dead && !s->host && !strcmp(s->user, user) && !strcmp(s->thread, thread);
	pthread_mutex_unlock(&p->lock);
	return n;
}

/* Waits for bwrap (process BWRAP) to report the sandbox set up: its info
 * descriptor INFO written to its end (read whole: bwrap dies of SIGPIPE
 * if a later write finds it closed), or closed unwritten, having failed;
 * ERR then gets what bwrap said on stderr (the pipe ERRFD). Returns 0,
 * *INIT the sandbox's first process (run_sandbox_init()), or -EIO. */
static int wait_started(int info, pid_t bwrap, int *init, int errfd, char *err, size_t errlen)
{
	struct pollfd p = { info, POLLIN, 0 };
	char buf[512], rest[512];
	size_t got = 0;
	ssize_t n = 1;

	*init = -1;
	if (info < 0)
		return 0;
	while (n > 0 && poll(&p, 1, 30000) > 0) {
		bool room = got < sizeof(buf);
		if ((n = read(info, room ? buf + got : rest,
			      room ? sizeof(buf) - got : sizeof(rest))) > 0)
			got += room ? (size_t)n : 0;
	}
	if (got) {
		*init = run_sandbox_init(buf, got, bwrap);
		return 0;
	}
	n = read(errfd, buf, sizeof(buf));
	start_failure(buf, n > 0 ? (size_t)n : 0, err, errlen);
	return -EIO;
}

/* A shell forked, not yet known to be started. */
struct shell_fork {
	struct start st;
	int in, out, err; /* our ends */
	pid_t pid;	  /* > 0, or -errno */
	char *cwd;	  /* where it starts (virtual), or NULL */
};

/* Forks the shell SPEC describes (HOLD: launch.h's, or -1) into SH:
 * stdin, stdout and stderr are pipes to us. Returns 0, or -errno (SH
 * then holds nothing). */
static int shell_fork(struct session_pool *pool, const struct session_spec *spec, int hold,
		      struct shell_fork *sh, char *errmsg, size_t errlen)
{
	struct start_spec ss = *spec->start;
	int in[2], out[2], err[2], r;

	ss.cmd.command = NULL; /* a shell reading its commands */
	if ((r = start_prepare(&sh->st, &ss, errmsg, errlen)) < 0)
		return r;
	if (pipe2(in, O_CLOEXEC) < 0) {
		r = -errno;
		start_free(&sh->st);
		return r;
	}
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
		r = -errno;
		close(in[0]), close(in[1]);
		start_free(&sh->st);
		return r;
	}
	if (!ss.host)
		sh->st.sb.launch.hold = hold;
	sh->pid = spawner_spawn(pool->spawner, &sh->st, in[0], out[1], err[1]);
	start_spawned(&sh->st);
	close(in[0]);
	close(out[1]);
	close(err[1]);
	sh->in = in[1];
	sh->out = out[0];
	sh->err = err[0];
	sh->cwd = ss.cmd.cwd ? strdup(ss.cmd.cwd) : NULL;
	return 0;
}

/* Waits for SH's shell to be started and makes it S's. Returns 0, or
 * -errno (why in ERRMSG; the shell killed). Frees SH's resources. */
static int shell_started(struct session *s, struct shell_fork *sh, char *errmsg, size_t errlen)
{
	pid_t pid = sh->pid;
	int init = -1, r;

	if (pid > 0 && (r = wait_started(sh->st.info, pid, &init, sh->err, errmsg, errlen)) < 0) {
		run_kill_tree(NULL, -1, pid, -1);
		waitpid(pid, NULL, 0);
		pid = r;
	}
	if (pid < 0) {
		close(sh->in), close(sh->out), close(sh->err);
		if (!*errmsg)
			snprintf(errmsg, errlen, "cannot start the shell: %s", strerror(-pid));
		start_free(&sh->st);
		free(sh->cwd);
		return pid;
	}
	s->leaf = start_take_leaf(&sh->st);
	start_free(&sh->st);
	s->pid = pid;
	s->in = sh->in;
	s->out = sh->out;
	s->err = sh->err;
	s->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	s->init = init;
	fcntl(s->out, F_SETFL, O_NONBLOCK);
	fcntl(s->err, F_SETFL, O_NONBLOCK);
	s->dead = false;
	free(s->cwd);
	s->cwd = sh->cwd ? sh->cwd : strdup(SANDBOX_CWD);
	log_info("session %s/%s scope %s: started (pid %d%s)", s->user, s->thread, s->scope,
		 (int)pid, s->host ? ", host" : "");
	return 0;
}

/* Starts S's shell. */
static int start_shell(struct session_pool *pool, struct session *s,
		       const struct session_spec *spec, char *errmsg, size_t errlen)
{
	struct shell_fork sh;
	int r = shell_fork(pool, spec, -1, &sh, errmsg, errlen);

	return r < 0 ? r : shell_started(s, &sh, errmsg, errlen);
}

/* Whether S's shell lives; one that has exited is tidied away. Under
 * S's run lock, or the pool's with no user. */
static bool shell_alive(struct session *s)
{
	if (!s->dead && waitpid(s->pid, NULL, WNOHANG) == s->pid) {
		s->pid = -1;
		kill_session(s);
	}
	return !s->dead;
}

static bool same_sandbox(const struct session *s, const char *user, const char *thread)
{
	return !strcmp(s->user, user) && !strcmp(s->thread, thread);
}

/* Under the lock: evicts the oldest idle session of USER's THREAD (whose
 * limit is MAX), or of any sandbox if USER is NULL; one whose shell has
 * ended goes first. False if every one is busy. */
static bool evict_oldest(struct session_pool *p, const char *user, const char *thread, unsigned max)
{
	struct session **link, **oldest = NULL;

	for (link = &p->list; *link; link = &(*link)->next)
		if ((*link)->users == 0 && (!user || same_sandbox(*link, user, thread)) &&
		    (!oldest || (*link)->dead > (*oldest)->dead ||
		     ((*link)->dead == (*oldest)->dead &&
		      (*link)->last_used < (*oldest)->last_used)))
			oldest = link;
	if (!oldest)
		return false;
	struct session *victim = *oldest;
	*oldest = victim->next;
	p->count--;
	if (victim->dead)
		log_info("session %s/%s scope %s: dropped to make room (its shell had ended)",
			 victim->user, victim->thread, victim->scope);
	else if (user)
		log_info(
			"session %s/%s scope %s: evicted (oldest idle of its sandbox; %u sessions per sandbox at most)",
			victim->user, victim->thread, victim->scope, max);
	else
		log_info(
			"session %s/%s scope %s: evicted (oldest idle; %u sessions in all at most, max_shell_sessions_total)",
			victim->user, victim->thread, victim->scope, p->total_max);
	session_free(victim);
	return true;
}

/* Under the lock: room for a new session of USER's THREAD, whose limit
 * is MAX: idle sessions evicted while the sandbox has MAX (a limit
 * lowered since leaves more), then while the pool has its total. False,
 * with which limit in WHY, if the sessions that would make room are all
 * busy. */
static bool make_room(struct session_pool *p, const char *user, const char *thread, unsigned max,
		      char *why, size_t whylen)
{
	for (;;) {
		unsigned mine = 0;
		bool starting = false;
		for (struct session *o = p->list; o; o = o->next)
			if (same_sandbox(o, user, thread)) {
				mine++;
				starting |= o->starting;
			}
		if (mine < max)
			break;
		/* A shell started ahead of need (a sandbox's implicit shell,
		 * started as its view is acquired) is held until its start
		 * ends, some milliseconds: waited for, it is the one to go.
		 * Not waited for, the sandbox's one idle session would be,
		 * though in use a moment ago. */
		if (starting) {
			pthread_cond_wait(&p->put_back, &p->lock);
			continue;
		}
		if (!evict_oldest(p, user, thread, max)) {
			snprintf(why, whylen,
				 "every shell session of this sandbox is busy (max_shell_sessions"
				 " = %u)",
				 max);
			return false;
		}
	}
	if (p->count >= p->total_max && !evict_oldest(p, NULL, NULL, 0)) {
		snprintf(why, whylen,
			 "every shell session of the broker is busy (max_shell_sessions_total"
			 " = %u)",
			 p->total_max);
		return false;
	}
	return true;
}

/* Under the lock: a new session of SPEC (its shell started on first
 * use), or NULL. */
static struct session *session_add(struct session_pool *p, const struct session_spec *spec)
{
	struct session *s = calloc(1, sizeof(*s));

	if (!s || !(s->user = strdup(spec->start->user)) ||
	    !(s->thread = strdup(spec->start->thread)) || !(s->scope = strdup(spec->scope))) {
		if (s) {
			free(s->user);
			free(s->thread);
		}
		free(s);
		return NULL;
	}
	s->host = spec->start->host;
	s->pid = -1;
	s->in = s->out = s->err = s->pidfd = s->init = -1;
	s->dead = true; /* started on first use */
	pthread_mutex_init(&s->run, NULL);
	s->next = p->list;
	p->list = s;
	p->count++;
	return s;
}

/* The session of SPEC, found or (unless SPEC wants an existing one) made,
 * with one more user. -ENOENT: none, and SPEC wants one; -EBUSY if a
 * limit is reached and no session that would make room is idle (which
 * limit, in WHY). */
static struct session *take(struct session_pool *p, const struct session_spec *spec, int *err,
			    char *why, size_t whylen)
{
	const char *user = spec->start->user, *thread = spec->start->thread;
	struct session *s;

	pthread_mutex_lock(&p->lock);
	for (s = p->list; s; s = s->next)
		if (same_sandbox(s, user, thread) && !strcmp(s->scope, spec->scope) &&
		    s->host == spec->start->host)
			break;
	if (!s && spec->existing)
		*err = -ENOENT;
	else if (!s && !make_room(p, user, thread, spec->max ? spec->max : p->max, why, whylen))
		*err = -EBUSY;
	else if (!s && !(s = session_add(p, spec)))
		*err = -ENOMEM;
	if (s)
		s->users++;
	pthread_mutex_unlock(&p->lock);
	return s;
}

/* Gives S back; USED: a use that makes it the newest for eviction;
 * STARTED: the end of a start ahead of need (session_prestart_end()). */
static void give_back(struct session_pool *p, struct session *s, bool used, bool started)
{
	pthread_mutex_lock(&p->lock);
	if (started) {
		s->starting = false;
		pthread_cond_broadcast(&p->put_back);
	}
	if (--s->users == 0)
		pthread_cond_broadcast(&p->put_back);
	if (used)
		s->last_used = ++p->uses;
	pthread_mutex_unlock(&p->lock);
}

static void put(struct session_pool *p, struct session *s)
{
	give_back(p, s, true, false);
}

/* ---- one command ---------------------------------------------------------- */

/* The end markers of one command: "__SBX_END_<token> N" lines with a
 * random token per stream (no line of output ends that way by chance).
 * stderr's is written first, then stdout's with the status; either may
 * come on either pipe (exec 2>&1, exec 1>&2), and is found there. */
enum { MARK_OUT, MARK_ERR };

struct marks {
	char text[2][80];
	bool seen[2];
	int rc; /* from stdout's */
};

/* What one pipe of a session command sent: its output, passed on as it
 * comes, but for a tail that may begin a marker, which waits for more. */
struct scan {
	char *pending;
	size_t len;
};

static void emit(const struct run_spec *run, struct capture *c, int stream, const char *data,
		 size_t len)
{
	if (len == 0)
		return;
	capture_add(c, data, len);
	if (run->on_output)
		run->on_output(run->arg, stream, data, len);
}

/* Passes on the first N bytes of SC's pending data. */
static void scan_emit(struct scan *sc, const struct run_spec *run, struct capture *c, int stream,
		      size_t n)
{
	if (n == 0)
		return;
	emit(run, c, stream, sc->pending, n);
	memmove(sc->pending, sc->pending + n, sc->len - n);
	sc->len -= n;
}

/* The length of the longest tail of P (LEN bytes) that begins MARK. */
static size_t marker_prefix(const char *p, size_t len, const char *mark)
{
	size_t mlen = strlen(mark);

	for (size_t k = len < mlen - 1 ? len : mlen - 1; k > 0; k--)
		if (!memcmp(p + len - k, mark, k))
			return k;
	return 0;
}

/* Takes DATA into SC: passes on what cannot be (the start of) a marker
 * and consumes each whole marker line, noting it in M. */
static int scan_add(struct scan *sc, struct marks *m, const char *data, size_t n,
		    const struct run_spec *run, struct capture *c, int stream)
{
	char *p = realloc(sc->pending, sc->len + n);

	if (!p)
		return -ENOMEM;
	sc->pending = p;
	memcpy(p + sc->len, data, n);
	sc->len += n;
	for (;;) {
		char *hit = NULL;
		int which = 0;
		for (int i = 0; i < 2; i++) {
			char *h = memmem(sc->pending, sc->len, m->text[i], strlen(m->text[i]));
			if (h && (!hit || h < hit))
				hit = h, which = i;
		}
		if (!hit)
			break;
		size_t off = (size_t)(hit - sc->pending), mlen = strlen(m->text[which]);
		char *eol = memchr(hit + mlen, '\n', sc->len - off - mlen);
		if (!eol)
			return 0; /* the rest of the marker line is coming */
		size_t line = (size_t)(eol - hit) + 1;
		scan_emit(sc, run, c, stream, off); /* the marker is first now */
		m->seen[which] = true;
		if (which == MARK_OUT)
			m->rc = atoi(sc->pending + mlen);
		memmove(sc->pending, sc->pending + line, sc->len - line);
		sc->len -= line;
	}
	size_t keep = 0;
	for (int i = 0; i < 2; i++) {
		size_t k = marker_prefix(sc->pending, sc->len, m->text[i]);
		keep = k > keep ? k : keep;
	}
	scan_emit(sc, run, c, stream, sc->len - keep);
	return 0;
}

/* Reads what FD has into SC; false once it is closed. */
static bool read_into(int fd, struct scan *sc, struct marks *m, const struct run_spec *run,
		      struct capture *c, int stream)
{
	char buf[65536];
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n > 0)
		scan_add(sc, m, buf, (size_t)n, run, c, stream);
	return n != 0 || errno == EAGAIN;
}

/* At the command's end (both markers seen, or none will come: the shell
 * exited, or the command is being killed): what is in FD now, without
 * blocking (at most 2 MiB: a background job may write on), and the
 * held-back tail. */
static void drain_rest(int fd, struct scan *sc, struct marks *m, const struct run_spec *run,
		       struct capture *c, int stream)
{
	char buf[65536];
	ssize_t n;

	for (int i = 0; i < 32 && !(m->seen[MARK_OUT] && m->seen[MARK_ERR]) &&
			(n = read(fd, buf, sizeof(buf))) > 0;
	     i++)
		scan_add(sc, m, buf, (size_t)n, run, c, stream);
	scan_emit(sc, run, c, stream, sc->len);
}

static bool write_all(int fd, const char *s, size_t len)
{
	while (len) {
		ssize_t n = write(fd, s, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		s += n;
		len -= (size_t)n;
	}
	return true;
}

/* Reaps S's shell into *STATUS, killing it first if it still runs (its
 * stdout closed while it lives on): never waits on a live shell. */
static bool reap(struct session *s, int *status)
{
	pid_t w = waitpid(s->pid, status, WNOHANG);

	if (w == 0) {
		run_kill_tree(NULL, s->init, s->pid, s->pidfd);
		w = waitpid(s->pid, status, 0);
	}
	if (w != s->pid)
		return false;
	s->pid = -1;
	return true;
}

/* Runs COMMAND in live session S. Returns 0, or -ESRCH if the session
 * turned out to be gone before the command reached it. */
static int run_in(struct session *s, const char *command, const struct run_spec *run,
		  struct run_result *r)
{
	uint8_t rnd[12];
	char token[2][32];
	_cleanup_(freep) char *quoted = shell_quote(command);
	_cleanup_(freep) char *script = NULL;
	struct scan out = { 0 }, err = { 0 };
	struct marks m = { 0 };

	memset(r, 0, sizeof(*r));
	for (int t = 0; t < 2; t++) {
		if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
			return -EIO;
		for (size_t i = 0; i < sizeof(rnd); i++)
			snprintf(token[t] + 2 * i, 3, "%02x", rnd[i]);
		snprintf(m.text[t], sizeof(m.text[t]), "__SBX_END_%s ", token[t]);
	}
	/* stderr's marker first: once stdout's is read, stderr's is in its
	 * pipe already, unless the command sent the shell's stderr
	 * elsewhere (exec 2>/dev/null). */
	if (!quoted || asprintf(&script,
				"eval %s </dev/null\n__sbx_rc=$?\n"
				"printf '__SBX_END_%s 0\\n' >&2\n"
				"printf '__SBX_END_%s %%d\\n' \"$__sbx_rc\"\n",
				quoted, token[MARK_ERR], token[MARK_OUT]) < 0)
		return -ENOMEM;
	if (!write_all(s->in, script, strlen(script)))
		return -ESRCH; /* the shell is gone */

	bool gone = false, err_open = true;
	struct run_watch w;
	struct run_clock clock;
	run_watch_init(&w, -1, 0, s->leaf);
	run_clock_init(&clock, run->timeout_s, run->idle_timeout_s);
	while (!m.seen[MARK_OUT] && !gone) {
		struct pollfd p[5] = {
			{ s->out, POLLIN, 0 },	     { err_open ? s->err : -1, POLLIN, 0 },
			{ s->pidfd, POLLIN, 0 },     { run->cancel_fd, 0, 0 }, /* POLLHUP */
			{ run->stop_fd, POLLIN, 0 },
		};
		if (poll(p, 5, run_watch_wait(&w, run_clock_wait(&clock, 1000))) < 0 &&
		    errno != EINTR)
			break;
		/* Its stdout closed, the status cannot come: the session is
		 * over. Its stderr closed (exec 2>&- in host mode): nothing
		 * more from it, and the shell goes on. */
		if (p[0].revents && !read_into(s->out, &out, &m, run, &r->out, 1))
			gone = true;
		if (p[1].revents && !read_into(s->err, &err, &m, run, &r->err, 2))
			err_open = false;
		if (p[2].revents)
			gone = true; /* the shell exited: `exit` in the command */
		if (p[3].revents & (POLLHUP | POLLERR)) {
			r->cancelled = true;
			break;
		}
		if (p[4].revents) {
			r->stopped = true;
			break;
		}
		/* Output held back (a tail that may begin a marker) counts. */
		enum run_clock_end late =
			run_clock_check(&clock, r->out.total + r->err.total + out.len + err.len);
		if (late != RUN_CLOCK_RUNS) {
			r->timed_out = late == RUN_CLOCK_TIMEOUT;
			r->idle_timed_out = late == RUN_CLOCK_IDLE;
			break;
		}
		if (run_watch_step(&w, false, &r->killed) == 2)
			break;
	}
	/* What is left: stderr's marker (written before stdout's), every
	 * byte written before a kill or the shell's exit. */
	drain_rest(s->err, &err, &m, run, &r->err, 2);
	drain_rest(s->out, &out, &m, run, &r->out, 1);
	if (gone) {
		/* The shell exited (`exit` in the command, or a limit's kill
		 * before the next look): its status. */
		int status = 0;
		if (s->leaf && !r->killed)
			r->killed = cgroup_check(s->leaf);
		if (r->killed) {
			r->code = 137;
		} else if (!m.seen[MARK_OUT] && reap(s, &status)) {
			r->code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
		} else {
			r->code = m.rc;
		}
		if (!r->killed && s->leaf && (r->code == 137 || r->code == -SIGKILL) &&
		    (r->killed = cgroup_check_ended(s->leaf, true)) != LIMIT_NONE)
			r->code = 137;
		r->shell_ended = !r->killed; /* a limit's kill says so itself */
	} else {
		/* What the command did to its leaf is the command's. */
		if (!run_cut_short(r) && s->leaf)
			r->killed = cgroup_check(s->leaf);
		r->code = r->stopped			      ? RUN_STOPPED_CODE
			  : r->timed_out || r->idle_timed_out ? 124
			  : r->killed			      ? 137
							      : m.rc;
	}

	if (gone || run_cut_short(r))
		kill_session(s); /* the next command gets a new one */
	free(out.pending);
	free(err.pending);
	return 0;
}

int session_run(struct session_pool *p, const struct session_spec *spec, const char *command,
		const struct run_spec *run, struct run_result *r, char *err, size_t errlen)
{
	int e = 0;
	struct session *s = take(p, spec, &e, err, errlen);

	memset(r, 0, sizeof(*r));
	if (!s)
		return e;
	pthread_mutex_lock(&s->run);
	int r_ = 0;
	struct pollfd stop = { run->stop_fd, POLLIN, 0 };
	if (poll(&stop, 1, 0) > 0) {
		/* The broker stops: a command queued behind the scope's
		 * previous one never starts. */
		r->stopped = true;
		r->code = RUN_STOPPED_CODE;
	}
	for (int attempt = 0; attempt < 2 && !r->stopped; attempt++) {
		if (!shell_alive(s)) {
			if (spec->existing) {
				r_ = -ENOENT; /* ended, by its command or a kill */
				break;
			}
			if (attempt == 0 && s->pid == -1 && s->last_used)
				log_info(
					"session %s/%s scope %s: session not found; recreating it once",
					s->user, s->thread, s->scope);
			if ((r_ = start_shell(p, s, spec, err, errlen)) < 0)
				break;
		}
		r_ = run_in(s, command, run, r);
		if (r_ != -ESRCH)
			break;
		kill_session(s);
	}
	pthread_mutex_unlock(&s->run);
	put(p, s);
	return r_;
}

int session_open(struct session_pool *p, const struct session_spec *spec, char **cwd, char *err,
		 size_t errlen)
{
	int r = 0;
	struct session *s = take(p, spec, &r, err, errlen);

	if (!s)
		return r;
	pthread_mutex_lock(&s->run);
	if (!shell_alive(s) && (r = start_shell(p, s, spec, err, errlen)) == 0)
		r = 1;
	if (r >= 0 && !(*cwd = strdup(s->cwd ? s->cwd : SANDBOX_CWD)))
		r = -ENOMEM;
	pthread_mutex_unlock(&s->run);
	put(p, s);
	return r;
}

struct session_prestart {
	struct session_pool *p;
	struct session *s; /* taken, its run lock held */
	struct shell_fork sh;
	int go; /* the hold's write end */
};

int session_prestart(struct session_pool *p, const struct session_spec *spec,
		     struct session_prestart **out, char *err, size_t errlen)
{
	int r = 0, hold[2];
	struct session *s = take(p, spec, &r, err, errlen);
	struct session_prestart *ps = NULL;

	*out = NULL;
	if (!s)
		return r;
	pthread_mutex_lock(&s->run);
	if (shell_alive(s))
		goto done;
	if (!(ps = calloc(1, sizeof(*ps)))) {
		r = -ENOMEM;
		goto done;
	}
	if (pipe2(hold, O_CLOEXEC) < 0) {
		r = -errno;
		goto done;
	}
	r = shell_fork(p, spec, hold[0], &ps->sh, err, errlen);
	close(hold[0]); /* the child has its own */
	if (r < 0) {
		close(hold[1]);
		goto done;
	}
	pthread_mutex_lock(&p->lock);
	s->starting = true;
	pthread_mutex_unlock(&p->lock);
	ps->p = p;
	ps->s = s;
	ps->go = hold[1];
	*out = ps;
	return 1;
done:
	free(ps);
	pthread_mutex_unlock(&s->run);
	put(p, s);
	return r;
}

int session_prestart_end(struct session_prestart *ps, bool go, char *err, size_t errlen)
{
	if (!ps)
		return 0;
	if (go && write(ps->go, "g", 1) != 1)
		go = false;
	close(ps->go); /* unwritten: the shell exits at once */
	int r = shell_started(ps->s, &ps->sh, err, errlen);
	if (!go && r == 0) {
		kill_session(ps->s); /* started after all: not wanted */
		r = -ECANCELED;
	}
	pthread_mutex_unlock(&ps->s->run);
	/* Started ahead, not used: the first to go when room is needed. */
	give_back(ps->p, ps->s, false, true);
	free(ps);
	return r < 0 ? r : 1;
}

/* Whether session S's scope is SCOPE, or (BELOW) one named SCOPE:... */
static bool scope_is(const struct session *s, const char *scope, bool below)
{
	size_t n = strlen(scope);

	return !strcmp(s->scope, scope) ||
	       (below && !strncmp(s->scope, scope, n) && s->scope[n] == ':');
}

/* sessions_end_scope(), and with BELOW the scopes named SCOPE:... */
static int end_scopes(struct session_pool *p, const char *user, const char *thread,
		      const char *scope, bool below)
{
	int found = -ENOENT;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct session *s, **link;

		for (link = &p->list; (s = *link); link = &s->next)
			if (!strcmp(s->user, user) && !strcmp(s->thread, thread) &&
			    scope_is(s, scope, below))
				break;
		if (!s)
			break;
		if (s->users) {
			/* A command in flight: once it is put back. */
			pthread_cond_wait(&p->put_back, &p->lock);
			continue;
		}
		*link = s->next;
		p->count--;
		found = (found < 0 ? 0 : found) + shell_alive(s);
		pthread_mutex_unlock(&p->lock);
		log_info("session %s/%s scope %s: ended", user, thread, s->scope);
		session_free(s);
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return found;
}

int sessions_end_scope(struct session_pool *p, const char *user, const char *thread,
		       const char *scope)
{
	return end_scopes(p, user, thread, scope, false);
}

int sessions_end_owner(struct session_pool *p, const char *user, const char *thread,
		       const char *owner)
{
	return end_scopes(p, user, thread, owner, true);
}

void sessions_tick(struct session_pool *p)
{
	char notice[128];

	pthread_mutex_lock(&p->lock);
	for (struct session *s = p->list; s; s = s->next) {
		/* users == 0: no command holds it, and none can take it while
		 * the pool's lock is ours. */
		if (s->users || s->dead)
			continue;
		/* A shell that ended (an `exit`) holds its view no more. */
		if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
			s->pid = -1;
			kill_session(s);
			continue;
		}
		if (!s->leaf)
			continue;
		enum limit_hit hit = cgroup_check(s->leaf);
		if (hit == LIMIT_NONE)
			continue;
		log_warn("session %s/%s scope %s: %s between commands; ended", s->user, s->thread,
			 s->scope, cgroups_notice(p->limits, hit, notice, sizeof(notice)));
		kill_session(s);
	}
	pthread_mutex_unlock(&p->lock);
}
