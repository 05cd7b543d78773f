/* client.c - see client.h. */
#include "client.h"
#include "broker.h"
#include "fdpass.h"
#include "common/cleanup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

struct client_conn {
	int fd;	  /* the socket: shut down by client_cancel(), closed by in */
	FILE *in; /* the socket, read a line at a time */
};

int client_open(const char *home, struct client_conn **out, struct error *e)
{
	int fd = broker_connect(home);

	if (fd < 0)
		return error_set(e, fd, "no broker serves %s (%s)", home, strerror(-fd));
	struct client_conn *c = calloc(1, sizeof(*c));
	if (c)
		c->in = fdopen(fd, "r");
	if (!c || !c->in) {
		close(fd);
		free(c);
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
	fclose(c->in);
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

json_t *client_next(struct client_conn *c, struct error *e)
{
	_cleanup_(freep) char *line = NULL;
	size_t cap = 0;
	ssize_t n = getline(&line, &cap, c->in);

	if (n <= 0) {
		error_set(e, -ECONNRESET, "the broker closed the connection");
		return NULL;
	}
	json_t *v = json_loadb(line, (size_t)n, 0, NULL);
	if (!json_is_object(v)) {
		json_decref(v);
		error_set(e, -EPROTO, "the broker sent a line that is not a JSON object");
		return NULL;
	}
	return v;
}

json_t *client_final(struct client_conn *c, void (*on_event)(void *arg, json_t *event), void *arg,
		     struct error *e)
{
	json_t *v;

	while ((v = client_next(c, e)) && !json_object_get(v, "ok")) {
		if (on_event)
			on_event(arg, v);
		json_decref(v);
	}
	return v;
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

/* The final reply on SOCK, read with fdpass_recv() (never through a FILE,
 * whose buffer would take bytes past the fds' message): NULL with E. */
static json_t *final_with_fd(int sock, int *fd, struct error *e)
{
	_cleanup_(freep) char *buf = NULL;
	size_t len = 0, cap = 0;
	char *nl;

	for (;;) {
		while (!(nl = len ? memchr(buf, '\n', len) : NULL)) {
			if (cap - len < 4096) {
				char *b = realloc(buf, cap = cap ? 2 * cap : 8192);
				if (!b) {
					error_set(e, -ENOMEM, "out of memory");
					return NULL;
				}
				buf = b;
			}
			ssize_t n = fdpass_recv(sock, buf + len, cap - len, fd);
			if (n <= 0) {
				error_set(e, -ECONNRESET, "the broker closed the connection");
				return NULL;
			}
			len += (size_t)n;
		}
		size_t line = (size_t)(nl - buf) + 1;
		json_t *v = json_loadb(buf, line, 0, NULL);
		memmove(buf, buf + line, len - line);
		len -= line;
		if (!json_is_object(v)) {
			json_decref(v);
			error_set(e, -EPROTO, "the broker sent a line that is not a JSON object");
			return NULL;
		}
		if (json_object_get(v, "ok"))
			return v;
		json_decref(v);
	}
}

json_t *client_call_fd(const char *home, json_t *req, int *fd, struct error *e)
{
	struct client_conn *c;
	json_t *v = NULL;

	*fd = -1;
	if (client_open(home, &c, e) < 0)
		return NULL;
	if (client_send(c, req, e) == 0)
		v = final_with_fd(c->fd, fd, e);
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
