/* owner.c - see owner.h. */
#include "owner.h"
#include "common/clock.h"
#include "common/log.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct owner {
	char *home, *user, *thread;
	char host[LEASE_HOST_MAX];
	int64_t token, ttl_ms;
	struct store *store; /* the heartbeat's, from owner_start() */
	pthread_t heartbeat, watchdog;
	bool started;
	int64_t deadline; /* monotonic ms when the lease expires unrenewed */
	bool shared;	  /* a store other hosts use (PostgreSQL): fail closed */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stopping;
	char lost[300];	     /* why the lease was lost; "" while it holds */
	struct lease before; /* the lease before this view took it */
	void (*on_lost)(void *arg, const char *why);
	void *arg;
};

/* Waits on O's condition until monotonic UNTIL_MS, owner_free() or a
 * renewal (the waiter looks again): true if owner_free() came. Called
 * with O's lock held. */
static bool wait_until(struct owner *o, int64_t until_ms)
{
	int64_t left = until_ms - now_ms();

	if (left > 0) {
		struct timespec ts = deadline_in(CLOCK_MONOTONIC, left * 1000000);
		pthread_cond_timedwait(&o->wake, &o->lock, &ts);
	}
	return o->stopping;
}

void owner_lose(void *arg, const char *why)
{
	struct owner *o = arg;

	pthread_mutex_lock(&o->lock);
	bool first = !o->lost[0];
	if (first)
		snprintf(o->lost, sizeof(o->lost), "%s", why);
	pthread_mutex_unlock(&o->lock);
	if (!first)
		return;
	log_error("lost the lease of %s/%s: %s; unmounting", o->user, o->thread, why);
	o->on_lost(o->arg, why);
}

/* Why a renewal was refused: who holds the lease now. */
static void taken_over(struct owner *o, char *why, size_t size)
{
	struct lease l;

	if (store_lease_get(o->store, o->user, o->thread, &l) == 0 && l.token != o->token)
		snprintf(why, size, "host %s took it over (token %lld; this view's was %lld)",
			 l.host, (long long)l.token, (long long)o->token);
	else
		snprintf(why, size, "it is no longer this view's (token %lld)",
			 (long long)o->token);
}

static void block_signals(void)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL); /* SIGTERM is for the loop's threads */
}

/* Renews the lease a third of its time apart (a ninth while renewals
 * fail); a refusal means another host took it over. */
static void *heartbeat_main(void *arg)
{
	struct owner *o = arg;
	char why[256];
	int64_t every = o->ttl_ms / 3;
	bool failing = false;

	block_signals();
	pthread_setname_np(pthread_self(), "sbxfs-lease");
	pthread_mutex_lock(&o->lock);
	while (!wait_until(o, now_ms() + (failing ? every / 3 : every))) {
		pthread_mutex_unlock(&o->lock);
		int64_t start = now_ms();
		int r = store_lease_renew(o->store, o->user, o->thread, o->host, o->token, getpid(),
					  o->ttl_ms);
		if (r == -ESTALE) {
			taken_over(o, why, sizeof(why));
			owner_lose(o, why);
			return NULL;
		}
		if (r < 0 && !failing)
			log_warn("cannot renew the lease of %s/%s: %s; retrying (the view ends if"
				 " it cannot within %.1f s)",
				 o->user, o->thread, strerror(-r), (double)o->ttl_ms * 0.9 / 1000);
		else if (r == 0 && failing)
			log_info("lease of %s/%s renewed again", o->user, o->thread);
		failing = r < 0;
		pthread_mutex_lock(&o->lock);
		if (r == 0) {
			o->deadline = start + o->ttl_ms;
			pthread_cond_broadcast(&o->wake);
		}
	}
	pthread_mutex_unlock(&o->lock);
	return NULL;
}

/* Ends the view a tenth of the lease's time before it would expire
 * unrenewed, so that it has ended before another host can take the
 * thread over. It runs apart from the heartbeat, which a store that does
 * not answer at all (a stopped server, a network that drops everything)
 * keeps waiting in a request. */
static void *watchdog_main(void *arg)
{
	struct owner *o = arg;
	char why[256];
	int64_t margin = o->ttl_ms / 10;

	block_signals();
	pthread_setname_np(pthread_self(), "sbxfs-leasedog");
	pthread_mutex_lock(&o->lock);
	while (!o->stopping) {
		int64_t until = o->deadline - margin, renewed = o->deadline - o->ttl_ms;
		if (now_ms() < until) {
			wait_until(o, until);
			continue;
		}
		pthread_mutex_unlock(&o->lock);
		snprintf(why, sizeof(why), "the store has not renewed it for %.1f s",
			 (double)(now_ms() - renewed) / 1000);
		owner_lose(o, why);
		return NULL;
	}
	pthread_mutex_unlock(&o->lock);
	return NULL;
}

static void owner_free_fields(struct owner *o)
{
	store_close(o->store);
	free(o->home);
	free(o->user);
	free(o->thread);
	pthread_mutex_destroy(&o->lock);
	pthread_cond_destroy(&o->wake);
	free(o);
}

int owner_acquire(const char *home, const char *user, const char *thread, const char *host,
		  int64_t wait_ms, struct owner **out, char *err, size_t errlen)
{
	struct lease_config lc;
	struct store *s;
	int r = lease_config(home, &lc, err, errlen);

	*out = NULL;
	if (r < 0)
		return r;
	if (host)
		snprintf(lc.host, sizeof(lc.host), "%s", host);
	struct owner *o = calloc(1, sizeof(*o));
	pthread_condattr_t ca;
	if (!o)
		return -ENOMEM;
	pthread_mutex_init(&o->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&o->wake, &ca);
	pthread_condattr_destroy(&ca);
	snprintf(o->host, sizeof(o->host), "%s", lc.host);
	o->ttl_ms = lc.ttl_ms;
	if (!(o->home = strdup(home)) || !(o->user = strdup(user)) ||
	    !(o->thread = strdup(thread))) {
		owner_free_fields(o);
		return -ENOMEM;
	}
	char target[STORE_TARGET_MAX];
	o->shared = store_where(home, target, sizeof(target), err, errlen) == 0 &&
		    store_target_is_postgres(target);
	if ((r = store_open(home, &s, err, errlen)) < 0) {
		char why[PATH_MAX + 256];
		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "cannot take the lease of %s/%s: %s", user, thread, why);
		owner_free_fields(o);
		return r;
	}
	int64_t give_up = now_ms() + wait_ms;
	while ((r = store_lease_acquire(s, user, thread, o->host, getpid(), o->ttl_ms, &lc.lim,
					&o->token, &o->before, err, errlen)) == -EBUSY &&
	       now_ms() < give_up) {
		/* Until the holder's lease would expire, or a release: look
		 * again every 100 ms. */
		struct timespec nap = { 0, 100 * 1000000 };
		nanosleep(&nap, NULL);
	}
	store_close(s);
	if (r < 0) {
		owner_free_fields(o);
		return r;
	}
	*out = o;
	return 0;
}

/* Stops the heartbeat (and, with WATCHDOG, the watchdog): false if the
 * heartbeat is still in a request to a store that does not answer
 * after a second (it is left to the process's exit). */
static bool stop_threads(struct owner *o, bool watchdog)
{
	pthread_mutex_lock(&o->lock);
	o->stopping = true;
	pthread_cond_broadcast(&o->wake);
	pthread_mutex_unlock(&o->lock);
	if (watchdog && o->shared)
		pthread_join(o->watchdog, NULL);
	struct timespec until = deadline_in(CLOCK_REALTIME, 1000000000);
	if (pthread_timedjoin_np(o->heartbeat, NULL, &until) != 0) {
		log_warn("the lease's heartbeat still waits on the store; leaving it");
		return false;
	}
	return true;
}

int owner_start(struct owner *o, void (*on_lost)(void *arg, const char *why), void *arg, char *err,
		size_t errlen)
{
	int64_t start = now_ms();
	int r = store_open(o->home, &o->store, err, errlen);

	if (r < 0)
		return r;
	/* At once, as this process (the lease names the daemon's pid): the
	 * parent that took it may have waited long for the mount. */
	if ((r = store_lease_renew(o->store, o->user, o->thread, o->host, o->token, getpid(),
				   o->ttl_ms)) < 0) {
		snprintf(err, errlen, "cannot renew the lease of %s/%s: %s", o->user, o->thread,
			 r == -ESTALE ? "another host took it over" : strerror(-r));
		return r;
	}
	o->on_lost = on_lost;
	o->arg = arg;
	o->deadline = start + o->ttl_ms;
	if ((r = pthread_create(&o->heartbeat, NULL, heartbeat_main, o)) != 0) {
		snprintf(err, errlen, "cannot start the lease's heartbeat: %s", strerror(r));
		return -r;
	}
	/* An SQLite store is one host's: no other host can take the thread
	 * over, and a renewal that waits on its lock (hundreds of views
	 * writing at once) is no reason to end the view. */
	if (o->shared && (r = pthread_create(&o->watchdog, NULL, watchdog_main, o)) != 0) {
		stop_threads(o, false);
		snprintf(err, errlen, "cannot start the lease's watchdog: %s", strerror(r));
		return -r;
	}
	o->started = true;
	log_info("lease of %s/%s held by host %s (token %lld, %.1f s, renewed every %.1f s)",
		 o->user, o->thread, o->host, (long long)o->token, (double)o->ttl_ms / 1000,
		 (double)o->ttl_ms / 3000);
	const struct lease *b = &o->before;
	if (b->token && b->token != o->token && strcmp(b->host, o->host) &&
	    b->expires_ns > b->renewed_ns) /* not given back: expired */
		log_info(
			"lease of %s/%s taken over from host %s (token %lld, expired %.1f s before)",
			o->user, o->thread, b->host, (long long)b->token,
			(double)(b->now_ns - b->expires_ns) / 1e9);
	return 0;
}

int owner_fence(struct owner *o, struct store *s)
{
	return store_fence(s, o->user, o->thread, o->host, o->token);
}

const char *owner_lost(struct owner *o)
{
	pthread_mutex_lock(&o->lock);
	const char *why = o->lost[0] ? o->lost : NULL;
	pthread_mutex_unlock(&o->lock);
	return why;
}

int64_t owner_lease_ms(const struct owner *o)
{
	return o->ttl_ms;
}

void owner_free(struct owner *o, bool release)
{
	char err[PATH_MAX + 256];

	if (!o)
		return;
	if (o->started && !stop_threads(o, true))
		return; /* a renewal still waits on the store: O stays theirs */
	if (release && !owner_lost(o) &&
	    (o->store || store_open(o->home, &o->store, err, sizeof(err)) == 0)) {
		int r = store_lease_release(o->store, o->user, o->thread, o->host, o->token);
		if (r < 0)
			log_warn("cannot give the lease of %s/%s back (it expires by itself): %s",
				 o->user, o->thread, strerror(-r));
	}
	owner_free_fields(o);
}
