/* stdio_transport.c - see stdio_transport.h. */
#include "stdio_transport.h"
#include "jsonrpc.h"
#include "common/cleanup.h"
#include "common/proc.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

struct out {
	int fd;
	pthread_mutex_t lock; /* one message at a time */
	bool broken;	      /* the client stopped reading */
};

static void send_line(void *arg, json_t *msg, json_t *about)
{
	struct out *o = arg;
	_cleanup_(freep) char *text = json_dumps(msg, JSON_COMPACT);

	(void)about; /* one stream for all */
	json_decref(msg);
	if (!text)
		return;
	size_t len = strlen(text);
	pthread_mutex_lock(&o->lock);
	text[len] = '\n'; /* over the NUL: one write a message */
	for (size_t at = 0; !o->broken && at < len + 1;) {
		ssize_t n = write(o->fd, text + at, len + 1 - at);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			o->broken = true;
		else
			at += (size_t)n;
	}
	pthread_mutex_unlock(&o->lock);
}

/* The lines of standard input, as they come. */
struct lines {
	char *buf;
	size_t len, cap;
	bool skipping; /* the rest of a line over the limit */
};

/* Hands each whole line in L to S; keeps a partial one. */
static void lines_take(struct lines *l, struct mcp_session *s, struct out *o)
{
	size_t start = 0;
	char *nl;

	while ((nl = memchr(l->buf + start, '\n', l->len - start))) {
		size_t n = (size_t)(nl - (l->buf + start));
		if (!l->skipping && n > 0 && !(n == 1 && l->buf[start] == '\r'))
			mcp_session_receive(s, l->buf + start, n);
		l->skipping = false;
		start += n + 1;
	}
	memmove(l->buf, l->buf + start, l->len - start);
	l->len -= start;
	if (l->len > MCP_STDIO_LINE_MAX) {
		if (!l->skipping)
			send_line(o,
				  jsonrpc_error(NULL, JSONRPC_PARSE_ERROR,
						"Parse error: a message over %u bytes",
						MCP_STDIO_LINE_MAX),
				  NULL);
		l->skipping = true;
		l->len = 0;
	}
}

/* Reads what FD has into L: >0 bytes, 0 at the end, -errno. */
static ssize_t lines_read(struct lines *l, int fd)
{
	if (l->cap - l->len < 65536) {
		size_t cap = l->cap ? l->cap * 2 : 1 << 20;
		char *p = realloc(l->buf, cap);
		if (!p)
			return -ENOMEM;
		l->buf = p;
		l->cap = cap;
	}
	ssize_t n = read(fd, l->buf + l->len, l->cap - l->len);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 1 : -errno;
	l->len += (size_t)n;
	return n;
}

int mcp_stdio_serve(const struct mcp_config *cfg, int fd_in, int fd_out)
{
	struct out o = { .fd = fd_out, .lock = PTHREAD_MUTEX_INITIALIZER };
	struct lines l = { 0 };
	sigset_t stop;
	int status = 0;
	bool stop_signalled = false;

	/* Blocked in every thread the session starts; read here. */
	stop_signals_block(&stop);
	_cleanup_(closep) int sfd = signalfd(-1, &stop, SFD_CLOEXEC);

	struct mcp_session *s = mcp_session_new(cfg, send_line, &o);
	if (!s) {
		fprintf(stderr, "sbx: mcp: out of memory\n");
		return 1;
	}
	for (;;) {
		struct pollfd p[2] = { { fd_in, POLLIN, 0 }, { sfd, POLLIN, 0 } };
		if (poll(p, sfd >= 0 ? 2 : 1, -1) < 0 && errno != EINTR)
			break;
		if (sfd >= 0 && p[1].revents) {
			stop_signalled = true;
			break;
		}
		if (!p[0].revents)
			continue;
		ssize_t n = lines_read(&l, fd_in);
		if (n < 0) {
			fprintf(stderr, "sbx: mcp: cannot read standard input: %s\n",
				strerror((int)-n));
			status = 1;
		}
		if (n <= 0)
			break;
		lines_take(&l, s, &o);
	}
	/* The end of the input is not the client gone: the calls it made
	 * last are answered, unless it stops reading (or a signal comes). */
	while (status == 0 && !stop_signalled && mcp_session_calls(s)) {
		struct pollfd p[2] = { { fd_out, 0, 0 }, { sfd, POLLIN, 0 } };
		if (poll(p, sfd >= 0 ? 2 : 1, 100) > 0 &&
		    (p[0].revents & (POLLERR | POLLHUP) || (sfd >= 0 && p[1].revents)))
			break;
	}
	mcp_session_end(s);
	free(l.buf);
	return status;
}
