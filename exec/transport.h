/* transport.h - the broker's side of a connection: what it sends a
 * client, one JSON object per line (docs/protocol.md), through the
 * client's outbox.
 *
 * A reply waits for what is ahead of it, but at most SEND_STALL_S for a
 * client that takes nothing. An output event never waits: what the
 * socket does not take waits in the outbox, and is dropped once that
 * holds OUTBOX_MAX (c->dropped says so). A client whose send fails or
 * stalls is gone: its connection is shut down, which ends its command
 * and its thread, and every send after returns -EPIPE. Each send takes
 * its object (consumed, even on failure) and returns 0 or -errno.
 */
#ifndef SBX_TRANSPORT_H
#define SBX_TRANSPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct broker;

struct client {
	struct broker *b;
	int fd;
	uid_t uid;
	int64_t accepted_ms; /* CLOCK_MONOTONIC */
	/* What the client has not taken yet: a command's output events
	 * never wait for a client that reads slowly (its timeout would
	 * wait with them); beyond OUTBOX_MAX they are dropped. */
	char *outbox;
	size_t outbox_len;
	bool dropped; /* output events were dropped */
	bool gone;    /* a send failed or stalled */
	/* The fd the client passed with its request's line (SCM_RIGHTS: a
	 * tool's arguments_fd), taken by that request, closed after it;
	 * -1: none. */
	int passed_fd;
	/* The lease an acquire with "hold" took: given back, and its
	 * scope's shell ended, when the connection ends. */
	char *held_user, *held_thread, *held_owner;
};

/* Output events not yet taken by the client, at most. */
#define OUTBOX_MAX (1u << 20)
/* A reply waits this long for a client that takes nothing (SO_SNDTIMEO);
 * then the client is taken for gone. */
#define SEND_STALL_S 10

/* Sends what C's outbox holds; unless WAIT, only what the socket takes
 * now. Returns 0 once it is empty, -EAGAIN if some is left, or -EPIPE:
 * the client is gone (or took nothing for SEND_STALL_S), and its
 * connection is shut down, which ends its command and its thread. */
int flush_outbox(struct client *c, bool wait);

/* Sends O as one line. An output EVENT never waits: what the socket
 * does not take waits in the outbox, or is dropped once that holds
 * OUTBOX_MAX. Anything else waits for what is ahead of it. */
int send_json(struct client *c, json_t *o, bool event);

/* Sends O as one line without waiting and without dropping it: the
 * caller keeps the outbox bounded (a watch reads no more of the journal
 * while it is full). -EPIPE: the client is gone. */
int send_queued(struct client *c, json_t *o);

/* {"ok": true, "id": ID} plus FIELDS (consumed; NULL: none). */
int send_ok(struct client *c, json_t *id, json_t *fields);

/* {"ok": false, "id": ID, "error": {"code": CODE, "message": ...}}, the
 * message made from FMT. ID may be NULL (none is echoed). */
int send_error(struct client *c, json_t *id, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Sends O (a final reply) as one line with FD passed along (SCM_RIGHTS,
 * on the line's first byte: the client's recvmsg() of it gets the fd).
 * FD stays the caller's: it has been passed once this returns 0. */
int send_with_fd(struct client *c, json_t *o, int fd);

/* The error of a request the broker will not do because it stops. */
int send_shutting_down(struct client *c, json_t *id);

#endif
