/* spawner.c - see spawner.h. */
#include "spawner.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

/* One fork asked for. */
struct spawn {
	const struct start *start;
	int in, out, err; /* the child's ends */
	pid_t pid;	  /* result: > 0, or -errno */
	bool done;
};

struct spawner {
	pthread_mutex_t lock;
	pthread_cond_t wake, spawned;
	pthread_t thread;
	struct spawn *request; /* under lock */
	bool stopping;
};

static void *spawner_main(void *arg)
{
	struct spawner *s = arg;

	pthread_mutex_lock(&s->lock);
	while (!s->stopping) {
		if (!s->request) {
			pthread_cond_wait(&s->wake, &s->lock);
			continue;
		}
		struct spawn *sp = s->request;
		sp->pid = launch_spawn(sp->start->argv, sp->start->envp, sp->start->cwd, sp->in,
				       sp->out, sp->err, sp->start->launch);
		sp->done = true;
		s->request = NULL;
		pthread_cond_broadcast(&s->spawned);
	}
	/* A request that came too late is refused, not left waiting. */
	if (s->request) {
		s->request->pid = -ESHUTDOWN;
		s->request->done = true;
		s->request = NULL;
		pthread_cond_broadcast(&s->spawned);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

struct spawner *spawner_new(void)
{
	struct spawner *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->wake, NULL);
	pthread_cond_init(&s->spawned, NULL);
	if (pthread_create(&s->thread, NULL, spawner_main, s) != 0) {
		pthread_cond_destroy(&s->wake);
		pthread_cond_destroy(&s->spawned);
		pthread_mutex_destroy(&s->lock);
		free(s);
		return NULL;
	}
	return s;
}

void spawner_free(struct spawner *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	pthread_cond_destroy(&s->wake);
	pthread_cond_destroy(&s->spawned);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

pid_t spawner_spawn(struct spawner *s, const struct start *start, int in, int out, int err)
{
	struct spawn sp = { start, in, out, err, -ESHUTDOWN, false };

	pthread_mutex_lock(&s->lock);
	while (s->request && !s->stopping)
		pthread_cond_wait(&s->spawned, &s->lock);
	if (s->stopping) {
		pthread_mutex_unlock(&s->lock);
		return -ESHUTDOWN;
	}
	s->request = &sp;
	pthread_cond_signal(&s->wake);
	while (!sp.done)
		pthread_cond_wait(&s->spawned, &s->lock);
	pthread_mutex_unlock(&s->lock);
	return sp.pid;
}
