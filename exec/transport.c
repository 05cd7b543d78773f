/* transport.c - see transport.h. */
#include "transport.h"
#include "fdpass.h"
#include "common/log.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

int flush_outbox(struct client *c, bool wait)
{
	while (c->outbox_len && !c->gone) {
		ssize_t n = send(c->fd, c->outbox, c->outbox_len,
				 MSG_NOSIGNAL | (wait ? 0 : MSG_DONTWAIT));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN && !wait)
			return -EAGAIN;
		if (n <= 0) {
			if (errno == EAGAIN)
				log_warn(
					"a client took no reply for %d s: its connection is closed",
					SEND_STALL_S);
			c->gone = true;
			shutdown(c->fd, SHUT_RDWR);
			break;
		}
		memmove(c->outbox, c->outbox + n, c->outbox_len - (size_t)n);
		c->outbox_len -= (size_t)n;
	}
	return c->gone ? -EPIPE : 0;
}

/* O (consumed) as one line of text (malloc'd), its length in *LEN. */
static char *json_line(json_t *o, size_t *len)
{
	char *text = json_dumps(o, JSON_COMPACT);

	json_decref(o);
	if (!text)
		return NULL;
	*len = strlen(text);
	text[(*len)++] = '\n'; /* json_dumps leaves room: the NUL */
	return text;
}

/* Appends TEXT (LEN bytes, freed) to C's outbox: 0, or -errno. */
static int outbox_put(struct client *c, char *text, size_t len)
{
	char *box = c->gone ? NULL : realloc(c->outbox, c->outbox_len + len);

	if (box) {
		c->outbox = box;
		memcpy(box + c->outbox_len, text, len);
		c->outbox_len += len;
	}
	free(text);
	return box ? 0 : c->gone ? -EPIPE : -ENOMEM;
}

int send_json(struct client *c, json_t *o, bool event)
{
	size_t len;
	char *text = json_line(o, &len);

	if (!text)
		return -ENOMEM;
	if (event && c->outbox_len + len > OUTBOX_MAX && flush_outbox(c, false) == -EAGAIN &&
	    c->outbox_len + len > OUTBOX_MAX) {
		c->dropped = true;
		free(text);
		return 0;
	}
	int r = outbox_put(c, text, len);
	if (r < 0)
		return r;
	r = flush_outbox(c, !event);
	return r == -EAGAIN ? 0 : r;
}

int send_with_fd(struct client *c, json_t *o, int fd)
{
	size_t len;
	char *text = json_line(o, &len);
	struct iovec iov = { text, len };
	ssize_t n;

	if (!text)
		return -ENOMEM;
	/* What is ahead of it first: the fd goes with this line's bytes. */
	int r = flush_outbox(c, true);
	n = r < 0 ? r : fdpass_send(c->fd, &iov, 1, fd);
	if (n < 0) {
		free(text);
		if (r == 0) {
			c->gone = true;
			shutdown(c->fd, SHUT_RDWR);
		}
		return -EPIPE;
	}
	if ((size_t)n == len) {
		free(text);
		return 0;
	}
	/* The rest of a line the socket did not take whole, as any reply. */
	memmove(text, text + n, len - (size_t)n);
	r = outbox_put(c, text, len - (size_t)n);
	return r < 0 ? r : flush_outbox(c, true);
}

int send_queued(struct client *c, json_t *o)
{
	size_t len;
	char *text = json_line(o, &len);
	int r = text ? outbox_put(c, text, len) : -ENOMEM;

	if (r == 0)
		r = flush_outbox(c, false);
	return r == -EAGAIN ? 0 : r;
}

int send_error(struct client *c, json_t *id, const char *code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_t *o = json_pack("{s:b, s:{s:s, s:s}}", "ok", 0, "error", "code", code, "message",
			      msg);
	if (o && id)
		json_object_set(o, "id", id);
	return o ? send_json(c, o, false) : -ENOMEM;
}

int send_ok(struct client *c, json_t *id, json_t *fields)
{
	json_t *o = fields ? fields : json_object();

	if (!o)
		return -ENOMEM;
	json_object_set_new(o, "ok", json_true());
	if (id)
		json_object_set(o, "id", id);
	return send_json(c, o, false);
}

int send_shutting_down(struct client *c, json_t *id)
{
	return send_error(c, id, "shutting_down",
			  "the broker is shutting down: send the"
			  " request again once a broker serves again");
}
