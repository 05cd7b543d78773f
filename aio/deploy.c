/* deploy.c - see deploy.h: the store's records, the holder of each, this
 * host's URL, and the loop that lets go of what is no longer this
 * host's. */
#include "deploy.h"
#include "common/clock.h"
#include "common/config.h"
#include "store/lease.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

struct aio_deploy {
	struct store *store;
	pthread_mutex_t lock; /* the store's connection, a statement at a time */
	char host[LEASE_HOST_MAX];
	char *url; /* this host's, as recorded; NULL: none */
	pid_t pid;
	struct aio_sandboxes *held;
	/* The reconcile loop. */
	pthread_mutex_t loop_lock;
	pthread_cond_t wake;
	bool stopping, started;
	pthread_t loop;
};

static int store_error(struct error *e, int r, const char *what)
{
	return error_set(e, r, "cannot %s: the store: %s", what, strerror(-r));
}

static void random_hex(char *out, size_t hex)
{
	unsigned char rnd[32];

	if (getrandom(rnd, hex / 2, 0) != (ssize_t)(hex / 2))
		abort(); /* the kernel's entropy: never fails once booted */
	for (size_t i = 0; i < hex / 2; i++)
		snprintf(out + 2 * i, 3, "%02x", rnd[i]);
}

int aio_deploy_make(struct aio_deploy *d, struct store_sandbox *r, struct error *e)
{
	struct store_sandbox want = *r;

	random_hex(want.key, AIO_KEY_HEX);
	random_hex(want.generation, AIO_GENERATION_HEX);
	want.created_ns = realtime_ns();
	pthread_mutex_lock(&d->lock);
	int made = store_sandbox_add(d->store, &want, r);
	pthread_mutex_unlock(&d->lock);
	if (made < 0)
		return store_error(e, made, "record the sandbox");
	if (strcmp(r->user, want.user) || strcmp(r->thread, want.thread))
		return error_set(e, -EEXIST, "sandbox %s is %s/%s's", r->id, r->user, r->thread);
	return made ? 0 : 1;
}

int aio_deploy_find(struct aio_deploy *d, const char *id, struct store_sandbox *r, struct error *e)
{
	pthread_mutex_lock(&d->lock);
	int rc = store_sandbox_get(d->store, id, r);
	pthread_mutex_unlock(&d->lock);
	return rc < 0 && rc != -ENOENT ? store_error(e, rc, "read the sandbox") : rc;
}

int aio_deploy_drop(struct aio_deploy *d, const char *id, const char *generation, struct error *e)
{
	pthread_mutex_lock(&d->lock);
	int r = store_sandbox_drop(d->store, id, generation);
	pthread_mutex_unlock(&d->lock);
	if (r < 0)
		return r == -ENOENT ? r : store_error(e, r, "drop the sandbox");
	aio_sandbox_let_go(d->held, id, generation);
	return 0;
}

struct each_ctx {
	void (*fn)(void *arg, const struct store_sandbox *r);
	void *arg;
};

static int each_one(void *arg, const struct store_sandbox *r)
{
	struct each_ctx *c = arg;

	c->fn(c->arg, r);
	return 0;
}

int aio_deploy_each(struct aio_deploy *d, void (*fn)(void *arg, const struct store_sandbox *r),
		    void *arg, struct error *e)
{
	struct each_ctx c = { fn, arg };

	pthread_mutex_lock(&d->lock);
	int r = store_sandboxes_each(d->store, each_one, &c);
	pthread_mutex_unlock(&d->lock);
	return r < 0 ? store_error(e, r, "read the sandboxes") : 0;
}

static bool held_elsewhere(const struct aio_deploy *d, const struct store_sandbox *r)
{
	return r->holder[0] && strcmp(r->holder, d->host);
}

const char *aio_deploy_url_of(const struct aio_deploy *d, const struct store_sandbox *r)
{
	return held_elsewhere(d, r) && r->holder_url[0] ? r->holder_url : NULL;
}

/* R is served by its holder, another host: its URL into OUT, and 1 (the
 * lease not taken here), or -EHOSTUNREACH (E). */
static int there(const struct store_sandbox *r, struct aio_place *out, struct error *e)
{
	if (!r->holder_url[0])
		return error_set(e, -EHOSTUNREACH,
				 "sandbox %s's thread %s/%s is held by host %s, whose sbx serve "
				 "records no URL ([serve] public_url), or has stopped",
				 r->id, r->user, r->thread, r->holder);
	out->here = NULL;
	snprintf(out->there, sizeof(out->there), "%s", r->holder_url);
	return 1;
}

int aio_deploy_place(struct aio_deploy *d, const struct store_sandbox *r, struct aio_place *out,
		     struct error *e)
{
	struct store_sandbox now;
	struct error why = { 0 };

	if (held_elsewhere(d, r))
		return there(r, out, e);
	int rc = aio_sandbox_hold(d->held, r, &out->here, &why);
	if (rc >= 0)
		return rc;
	/* The broker is refused a thread another host holds live: one may
	 * have taken it since R was read. */
	if (rc != -ENOSPC && rc != -ENOMEM && aio_deploy_find(d, r->id, &now, NULL) == 0 &&
	    held_elsewhere(d, &now))
		return there(&now, out, e);
	return error_set(e, rc, "%s", why.text);
}

/* ---- the reconcile loop ------------------------------------------------------ */

/* A sandbox held here, and whether the store still has it as this
 * host's. */
struct held {
	char id[THREAD_ID_MAX + 1];
	char generation[STORE_SANDBOX_SECRET_MAX + 1];
	const char *why; /* NULL: kept; else why it is let go */
	char by[LEASE_HOST_MAX];
};

struct held_list {
	struct held *v;
	size_t n, cap;
	bool failed;
};

static void collect_held(void *arg, const struct aio_sandbox *sb)
{
	struct held_list *l = arg;

	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		struct held *v = realloc(l->v, cap * sizeof(*v));
		if (!v) {
			l->failed = true;
			return;
		}
		l->v = v;
		l->cap = cap;
	}
	struct held *h = &l->v[l->n++];
	snprintf(h->id, sizeof(h->id), "%s", sb->id);
	snprintf(h->generation, sizeof(h->generation), "%s", sb->generation);
	h->why = "dropped on another host";
	h->by[0] = '\0';
}

static int by_id(const void *a, const void *b)
{
	return strcmp(((const struct held *)a)->id, ((const struct held *)b)->id);
}

struct reconcile_ctx {
	struct aio_deploy *d;
	struct held_list *l;
};

/* A record: the held sandbox of its id is kept if it is of its
 * generation and no other host holds its thread live. */
static int reconcile_one(void *arg, const struct store_sandbox *r)
{
	struct reconcile_ctx *c = arg;
	struct held key, *h;

	snprintf(key.id, sizeof(key.id), "%s", r->id);
	if (!(h = bsearch(&key, c->l->v, c->l->n, sizeof(*h), by_id)))
		return 0;
	if (strcmp(h->generation, r->generation))
		h->why = "dropped and made again";
	else if (held_elsewhere(c->d, r)) {
		h->why = "taken over by host";
		snprintf(h->by, sizeof(h->by), "%s", r->holder);
	} else {
		h->why = NULL;
	}
	return 0;
}

/* Lets go of the sandboxes held here that the store no longer has as
 * this host's. A store that cannot be read lets nothing go. */
static void reconcile(struct aio_deploy *d)
{
	struct held_list l = { 0 };

	aio_sandboxes_each(d->held, collect_held, &l);
	if (l.failed || !l.n) {
		free(l.v);
		return;
	}
	qsort(l.v, l.n, sizeof(*l.v), by_id);
	struct reconcile_ctx c = { d, &l };
	pthread_mutex_lock(&d->lock);
	int r = store_sandboxes_each(d->store, reconcile_one, &c);
	pthread_mutex_unlock(&d->lock);
	for (size_t i = 0; r == 0 && i < l.n; i++) {
		struct held *h = &l.v[i];
		if (h->why && aio_sandbox_let_go(d->held, h->id, h->generation) == 0)
			fprintf(stderr, "sbx: serve: sandbox %s %s%s%s: its lease given back\n",
				h->id, h->why, h->by[0] ? " " : "", h->by);
	}
	free(l.v);
}

static void *reconcile_loop(void *arg)
{
	struct aio_deploy *d = arg;

	pthread_mutex_lock(&d->loop_lock);
	while (!d->stopping) {
		struct timespec until = deadline_in(CLOCK_MONOTONIC, AIO_RECONCILE_MS * 1000000ll);
		pthread_cond_timedwait(&d->wake, &d->loop_lock, &until);
		if (d->stopping)
			break;
		pthread_mutex_unlock(&d->loop_lock);
		reconcile(d);
		pthread_mutex_lock(&d->loop_lock);
	}
	pthread_mutex_unlock(&d->loop_lock);
	return NULL;
}

/* ---- life -------------------------------------------------------------------- */

/* Records this host's URL, or drops a stale one; says when other hosts
 * could not send this host's clients here. */
static int record_url(struct aio_deploy *d, const char *home, struct error *e)
{
	char target[PATH_MAX + 256], err[512];
	int r;

	if (d->url)
		r = store_serve_url_put(d->store, d->host, d->url, d->pid);
	else
		r = store_serve_url_drop(d->store, d->host, 0);
	if (r < 0)
		return store_error(e, r, "record this host's URL");
	if (!d->url && store_where(home, target, sizeof(target), err, sizeof(err)) == 0 &&
	    store_target_is_postgres(target))
		fprintf(stderr,
			"sbx: serve: warning: no [serve] public_url: another host of the store "
			"cannot send the clients of the sandboxes this one (%s) holds here "
			"(docs/aio.md, \"Across hosts\")\n",
			d->host);
	return 0;
}

static void deploy_close(struct aio_deploy *d)
{
	store_close(d->store);
	pthread_mutex_destroy(&d->lock);
	pthread_mutex_destroy(&d->loop_lock);
	pthread_cond_destroy(&d->wake);
	free(d->url);
	free(d);
}

int aio_deploy_new(const char *home, const char *url, struct aio_sandboxes *held,
		   struct aio_deploy **out, struct error *e)
{
	struct aio_deploy *d = calloc(1, sizeof(*d));
	struct lease_config lc;
	char err[1024];
	int r;

	if (!d)
		return error_set(e, -ENOMEM, "out of memory");
	pthread_mutex_init(&d->lock, NULL);
	pthread_mutex_init(&d->loop_lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->wake, &ca);
	pthread_condattr_destroy(&ca);
	d->held = held;
	d->pid = getpid();
	if (url && !(d->url = strdup(url))) {
		deploy_close(d);
		return error_set(e, -ENOMEM, "out of memory");
	}
	if ((r = lease_config(home, &lc, err, sizeof(err))) < 0 ||
	    (r = store_open(home, &d->store, err, sizeof(err))) < 0) {
		deploy_close(d);
		return error_set(e, r, "%s", err);
	}
	snprintf(d->host, sizeof(d->host), "%s", lc.host);
	if ((r = record_url(d, home, e)) < 0) {
		deploy_close(d);
		return r;
	}
	if ((r = pthread_create(&d->loop, NULL, reconcile_loop, d)) != 0) {
		aio_deploy_free(d);
		return error_set(e, -r, "cannot start a thread: %s", strerror(r));
	}
	d->started = true;
	*out = d;
	return 0;
}

void aio_deploy_free(struct aio_deploy *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->loop_lock);
	d->stopping = true;
	pthread_cond_broadcast(&d->wake);
	pthread_mutex_unlock(&d->loop_lock);
	if (d->started)
		pthread_join(d->loop, NULL);
	/* Another host asked for this one's sandboxes now finds no URL, not
	 * a server that is gone. */
	if (d->url)
		store_serve_url_drop(d->store, d->host, d->pid);
	deploy_close(d);
}
