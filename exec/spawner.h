/* spawner.h - a thread of its own that forks sandboxes which must
 * outlive the thread that asks for them.
 *
 * bwrap's --die-with-parent (PR_SET_PDEATHSIG) fires when the forking
 * *thread* ends, and a connection's thread ends with its client, while a
 * session's shell or a one-off launcher must outlive it: they are forked
 * here. Thread-safe.
 */
#ifndef SBX_SPAWNER_H
#define SBX_SPAWNER_H

#include "start.h"

#include <sys/types.h>

struct spawner;

struct spawner *spawner_new(void);
void spawner_free(struct spawner *s);

/* launch_spawn() of START (stdin IN, stdout OUT, stderr ERR; -1: none)
 * on S's thread. Returns the pid or -errno. */
pid_t spawner_spawn(struct spawner *s, const struct start *start, int in, int out, int err);

#endif
