/* client.c - see client.h. */
#include "client.h"
#include "broker.h"
#include "fdpass.h"
#include "common/cleanup.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

struct client_conn {
	int fd;	   /* the socket: shut down by client_cancel(), closed by client_close() */
	char *buf; /* what was read of the replies and not yet taken */
	size_t len, cap;
};

int client_open(const char *home, struct client_conn **out, struct error *e)
{
	int fd = broker_connect(home);

	if (fd < 0)
		return error_set(e, fd, "no broker serves %s (%s)", home, strerror(-fd));
	struct client_conn *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return error_set(e, -ENOMEM, "out of memory");
	}
	c->fd = fd;
	*out = c;
	return 0;
}

void client_close(struct client_conn *c)
{
	if (!c)
		return;
	close(c->fd);
	free(c->buf);
	free(c);
}

/* REQ as a line on C, FD (-1: none) passed with it. */
static int send_line(struct client_conn *c, json_t *req, int fd, struct error *e)
{
	_cleanup_(freep) char *text = json_dumps(req, JSON_COMPACT);

	if (!text)
		return error_set(e, -ENOMEM, "out of memory");
	size_t len = strlen(text);
	struct iovec iov[2] = { { text, len }, { "\n", 1 } };
	ssize_t n = fdpass_send(c->fd, iov, 2, fd);
	if (n != (ssize_t)len + 1)
		return error_set(e, n < 0 ? (int)n : -EIO,
				 "cannot send a request to the broker: %s",
				 n < 0 ? strerror((int)-n) : "short write");
	return 0;
}

int client_send(struct client_conn *c, json_t *req, struct error *e)
{
	return send_line(c, req, -1, e);
}

int client_send_passing(struct client_conn *c, json_t *req, int fd, struct error *e)
{
	return send_line(c, req, fd, e);
}

int client_args_memfd(json_t *args)
{
	_cleanup_(closep) int fd = memfd_create("sbx-tool-args", MFD_CLOEXEC);

	if (fd < 0)
		return neg_errno();
	if (json_dumpfd(args, fd, JSON_COMPACT) < 0)
		return -EIO;
	return TAKE_FD(fd);
}

/* The next line of C's replies, without its newline, in place in C's
 * buffer: its length, or -errno (-ECONNRESET: the broker hung up). The
 * caller takes it with take_line(). With FD, what is read is read with
 * the fds passed along (fdpass_recv(): the first into *FD). */
static ssize_t next_line(struct client_conn *c, int *fd)
{
	for (size_t scanned = 0;;) {
		char *nl = c->len > scanned ? memchr(c->buf + scanned, '\n', c->len - scanned)
					    : NULL;
		if (nl)
			return nl - c->buf;
		scanned = c->len;
		if (c->len == c->cap) {
			size_t cap = c->cap ? 2 * c->cap : 4096;
			char *b = realloc(c->buf, cap);
			if (!b)
				return -ENOMEM;
			c->buf = b;
			c->cap = cap;
		}
		ssize_t n;
		if (fd)
			n = fdpass_recv(c->fd, c->buf + c->len, c->cap - c->len, fd);
		else
			while ((n = read(c->fd, c->buf + c->len, c->cap - c->len)) < 0 &&
			       errno == EINTR)
				;
		if (n <= 0)
			return n < 0 ? (fd ? n : -errno) : -ECONNRESET;
		c->len += (size_t)n;
	}
}

/* Drops the line of N bytes (and its newline) next_line() found. */
static void take_line(struct client_conn *c, size_t n)
{
	c->len -= n + 1;
	memmove(c->buf, c->buf + n + 1, c->len);
}

/* client_next(), the fds passed with the replies into FD (NULL: none
 * expected). */
static json_t *next_reply(struct client_conn *c, int *fd, struct error *e)
{
	ssize_t n = next_line(c, fd);

	if (n < 0) {
		error_set(e, n == -ENOMEM ? -ENOMEM : -ECONNRESET, "%s",
			  n == -ENOMEM ? "out of memory" : "the broker closed the connection");
		return NULL;
	}
	json_t *v = json_loadb(c->buf, (size_t)n, 0, NULL);
	take_line(c, (size_t)n);
	if (!json_is_object(v)) {
		json_decref(v);
		error_set(e, -EPROTO, "the broker sent a line that is not a JSON object");
		return NULL;
	}
	return v;
}

json_t *client_next(struct client_conn *c, struct error *e)
{
	return next_reply(c, NULL, e);
}

/* client_final(), the fds passed with the replies into FD (NULL: none). */
static json_t *final_reply(struct client_conn *c, int *fd,
			   void (*on_event)(void *arg, json_t *event), void *arg, struct error *e)
{
	json_t *v;

	while ((v = next_reply(c, fd, e)) && !json_object_get(v, "ok")) {
		if (on_event)
			on_event(arg, v);
		json_decref(v);
	}
	return v;
}

json_t *client_final(struct client_conn *c, void (*on_event)(void *arg, json_t *event), void *arg,
		     struct error *e)
{
	return final_reply(c, NULL, on_event, arg, e);
}

void client_cancel(struct client_conn *c)
{
	shutdown(c->fd, SHUT_RDWR);
}

int client_hold_broker(const char *home, unsigned exit_idle_s, struct client_conn **keep,
		       bool *started, struct error *e)
{
	int r = client_open(home, keep, e);

	*started = false;
	if (r != -ENOENT && r != -ECONNREFUSED)
		return r;
	struct broker_options o = { .home = home, .quiet = true, .exit_idle_s = exit_idle_s };
	/* Another process may start one at the same moment: its broker
	 * then serves, and this start fails on the home's broker lock. */
	*started = broker_main(&o) == 0;
	/* A new broker waits EXIT_IDLE_S for a first client: ample. */
	r = client_open(home, keep, e);
	if (r < 0 && !*started)
		return error_set(e, r, "cannot start a broker for %s (%s/run/broker.log)", home,
				 home);
	return r;
}

/* ---- the pool ----------------------------------------------------------- */

struct client_pool {
	const char *home;
	pthread_mutex_t lock; /* idle, nidle */
	struct client_conn *idle[CLIENT_POOL_KEEP];
	size_t nidle;
};

struct client_pool *client_pool_new(const char *home)
{
	struct client_pool *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->home = home;
	pthread_mutex_init(&p->lock, NULL);
	return p;
}

void client_pool_free(struct client_pool *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nidle; i++)
		client_close(p->idle[i]);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

/* Whether idle C may carry a request: nothing of an earlier one is left
 * unread, and the broker has not hung up (it would be readable). */
static bool sound(struct client_conn *c)
{
	struct pollfd p = { c->fd, POLLIN, 0 };

	return c->len == 0 && poll(&p, 1, 0) == 0;
}

int client_pool_take(struct client_pool *p, struct client_conn **out, struct error *e)
{
	for (;;) {
		pthread_mutex_lock(&p->lock);
		struct client_conn *c = p->nidle ? p->idle[--p->nidle] : NULL;
		pthread_mutex_unlock(&p->lock);
		if (!c)
			return client_open(p->home, out, e);
		if (sound(c)) {
			*out = c;
			return 0;
		}
		client_close(c);
	}
}

void client_pool_give(struct client_pool *p, struct client_conn *c, bool reusable)
{
	pthread_mutex_lock(&p->lock);
	if (reusable && p->nidle < CLIENT_POOL_KEEP) {
		p->idle[p->nidle++] = c;
		c = NULL;
	}
	pthread_mutex_unlock(&p->lock);
	client_close(c);
}

json_t *client_call_events(const char *home, json_t *req,
			   void (*on_event)(void *arg, json_t *event), void *arg, struct error *e)
{
	struct client_conn *c;

	if (client_open(home, &c, e) < 0)
		return NULL;
	json_t *v = client_send(c, req, e) < 0 ? NULL : client_final(c, on_event, arg, e);
	client_close(c);
	return v;
}

json_t *client_call(const char *home, json_t *req, struct error *e)
{
	return client_call_events(home, req, NULL, NULL, e);
}

json_t *client_call_fd(const char *home, json_t *req, int *fd, struct error *e)
{
	struct client_conn *c;
	json_t *v = NULL;

	*fd = -1;
	if (client_open(home, &c, e) < 0)
		return NULL;
	if (client_send(c, req, e) == 0)
		v = final_reply(c, fd, NULL, NULL, e);
	client_close(c);
	if (!v)
		closep(fd);
	return v;
}

json_t *client_call_passing(const char *home, json_t *req, int fd, struct error *e)
{
	struct client_conn *c;

	if (client_open(home, &c, e) < 0)
		return NULL;
	json_t *v = send_line(c, req, fd, e) < 0 ? NULL : client_final(c, NULL, NULL, e);
	client_close(c);
	return v;
}

bool client_ok(json_t *reply)
{
	return json_is_true(json_object_get(reply, "ok"));
}

int client_reply_error(json_t *reply, struct error *e)
{
	json_t *err = json_object_get(reply, "error");
	const char *code = json_string_value(json_object_get(err, "code"));
	const char *message = json_string_value(json_object_get(err, "message"));

	return error_set(e, -EPROTO, "%s: %s", code ? code : "error",
			 message ? message : "the broker gave no reason");
}
