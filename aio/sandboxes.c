/* sandboxes.c - see sandboxes.h.
 *
 * A sandbox being taken is in the list already (not ready), so that a
 * second hold of the same id waits for the first instead of acquiring
 * the lease twice: the broker's leases are per owner, and the second
 * connection's end would give back the first one's.
 */
#include "sandboxes.h"
#include "common/clock.h"
#include "exec/client.h"
#include "http/server.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
	struct aio_sandbox sb; /* first: the public part */
	struct entry *next;
	unsigned refs;		   /* the list's, and each lookup's */
	bool ready;		   /* made: its lease is held */
	struct client_conn *lease; /* "hold": the lease lasts as long as it */
};

struct aio_sandboxes {
	char *home;
	unsigned max, n;
	pthread_mutex_t lock;
	pthread_cond_t made; /* an entry became ready, or went */
	struct entry *list;
};

int aio_sandboxes_new(const char *home, unsigned max, struct aio_sandboxes **out)
{
	struct aio_sandboxes *s = calloc(1, sizeof(*s));

	if (!s || !(s->home = strdup(home))) {
		free(s);
		return -ENOMEM;
	}
	s->max = max;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->made, NULL);
	*out = s;
	return 0;
}

static void entry_unref(struct aio_sandboxes *s, struct entry *en)
{
	pthread_mutex_lock(&s->lock);
	bool last = --en->refs == 0;
	pthread_mutex_unlock(&s->lock);
	if (last) {
		client_close(en->lease);
		free(en);
	}
}

/* Takes EN out of the list (the caller holds the lock): false if it was
 * not there. */
static bool list_remove(struct aio_sandboxes *s, struct entry *en)
{
	for (struct entry **p = &s->list; *p; p = &(*p)->next)
		if (*p == en) {
			*p = en->next;
			s->n--;
			return true;
		}
	return false;
}

void aio_sandboxes_free(struct aio_sandboxes *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	struct entry *all = s->list;
	s->list = NULL;
	s->n = 0;
	pthread_mutex_unlock(&s->lock);
	while (all) {
		struct entry *en = all;
		all = en->next;
		entry_unref(s, en);
	}
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->made);
	free(s->home);
	free(s);
}

static struct entry *find(struct aio_sandboxes *s, const char *id)
{
	for (struct entry *en = s->list; en; en = en->next)
		if (!strcmp(en->sb.id, id))
			return en;
	return NULL;
}

/* EN's lease, through the broker: 0 or -errno (E). */
static int acquire(struct aio_sandboxes *s, struct entry *en, struct error *e)
{
	char owner[8 + THREAD_ID_MAX];
	json_auto_t *reply = NULL;

	snprintf(owner, sizeof(owner), "aio:%s", en->sb.id);
	/* The implicit shell (scope "aio:ID") is started with the view, as a
	 * container's is: the first command finds it, or waits for it. */
	json_auto_t *req = json_pack("{s:s, s:s, s:s, s:s, s:b, s:b}", "op", "acquire", "user",
				     en->sb.user, "thread", en->sb.thread, "owner", owner, "hold",
				     true, "shell", true);
	if (!req)
		return error_set(e, -ENOMEM, "out of memory");
	if (en->sb.max_shell_sessions)
		json_object_set_new(req, "max_shell_sessions",
				    json_integer(en->sb.max_shell_sessions));
	int r = client_open(s->home, &en->lease, e);
	if (r == 0)
		r = client_send(en->lease, req, e);
	if (r == 0 && !(reply = client_final(en->lease, NULL, NULL, e)))
		r = e->code ? e->code : -EPROTO;
	if (r == 0 && !client_ok(reply))
		r = client_reply_error(reply, e);
	if (r < 0) {
		client_close(en->lease);
		en->lease = NULL;
	}
	return r;
}

/* Takes EN out of the list, once ready, and gives its lease back now,
 * not with the last request that uses it (the caller holds the lock, and
 * has the list's reference to drop: entry_unref()). */
static struct client_conn *take_out(struct aio_sandboxes *s, struct entry *en)
{
	struct client_conn *lease = en->lease;

	list_remove(s, en);
	en->lease = NULL;
	return lease;
}

int aio_sandbox_hold(struct aio_sandboxes *s, const struct store_sandbox *rec,
		     const struct aio_sandbox **out, struct error *e)
{
	struct entry *en;

	pthread_mutex_lock(&s->lock);
	while ((en = find(s, rec->id)) && !en->ready)
		pthread_cond_wait(&s->made, &s->lock);
	if (en && !strcmp(en->sb.generation, rec->generation)) {
		en->refs++;
		pthread_mutex_unlock(&s->lock);
		*out = &en->sb;
		return 1;
	}
	if (en) {
		/* Dropped and made again (on another host, perhaps of
		 * another thread): the old one goes first. */
		struct client_conn *lease = take_out(s, en);
		pthread_mutex_unlock(&s->lock);
		client_close(lease);
		entry_unref(s, en);
		return aio_sandbox_hold(s, rec, out, e);
	}
	if (s->n >= s->max) {
		pthread_mutex_unlock(&s->lock);
		return error_set(e, -ENOSPC, "this server holds %u sandboxes at most", s->max);
	}
	if (!(en = calloc(1, sizeof(*en)))) {
		pthread_mutex_unlock(&s->lock);
		return error_set(e, -ENOMEM, "out of memory");
	}
	snprintf(en->sb.id, sizeof(en->sb.id), "%s", rec->id);
	snprintf(en->sb.user, sizeof(en->sb.user), "%s", rec->user);
	snprintf(en->sb.thread, sizeof(en->sb.thread), "%s", rec->thread);
	snprintf(en->sb.key, sizeof(en->sb.key), "%s", rec->key);
	snprintf(en->sb.generation, sizeof(en->sb.generation), "%s", rec->generation);
	en->sb.max_shell_sessions = (unsigned)rec->max_shell_sessions;
	en->sb.created_ns = rec->created_ns;
	en->refs = 1; /* the list's */
	en->next = s->list;
	s->list = en;
	s->n++;
	pthread_mutex_unlock(&s->lock);

	int r = acquire(s, en, e);

	pthread_mutex_lock(&s->lock);
	if (r == 0) {
		en->ready = true;
		en->refs++;
	} else {
		list_remove(s, en);
	}
	pthread_cond_broadcast(&s->made);
	pthread_mutex_unlock(&s->lock);
	if (r < 0) {
		entry_unref(s, en);
		return r;
	}
	*out = &en->sb;
	return 0;
}

const struct aio_sandbox *aio_sandbox_get(struct aio_sandboxes *s, const char *id, const char *key,
					  bool check_key)
{
	pthread_mutex_lock(&s->lock);
	struct entry *en = find(s, id);
	if (en && (!en->ready || (check_key && !(key && http_secret_equal(en->sb.key, key)))))
		en = NULL;
	if (en)
		en->refs++;
	pthread_mutex_unlock(&s->lock);
	return en ? &en->sb : NULL;
}

void aio_sandbox_put(struct aio_sandboxes *s, const struct aio_sandbox *sb)
{
	if (sb)
		entry_unref(s, (struct entry *)sb);
}

int aio_sandbox_let_go(struct aio_sandboxes *s, const char *id, const char *generation)
{
	pthread_mutex_lock(&s->lock);
	struct entry *en = find(s, id);
	bool gone = en && en->ready && (!generation || !strcmp(en->sb.generation, generation));
	struct client_conn *lease = gone ? take_out(s, en) : NULL;
	pthread_mutex_unlock(&s->lock);
	if (!gone)
		return -ENOENT;
	client_close(lease);
	entry_unref(s, en);
	return 0;
}

void aio_sandboxes_each(struct aio_sandboxes *s,
			void (*on_each)(void *arg, const struct aio_sandbox *sb), void *arg)
{
	pthread_mutex_lock(&s->lock);
	for (struct entry *en = s->list; en; en = en->next)
		if (en->ready)
			on_each(arg, &en->sb);
	pthread_mutex_unlock(&s->lock);
}
