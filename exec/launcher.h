/* launcher.h - one-off commands without a sandbox each: a launcher
 * (sbx-launcher, launcher_main.c) stays in a sandbox of its own, made as
 * a one-off command's would be (the same identity, masks, seccomp
 * filter, no capability, a cgroup leaf of its sandbox), and starts one
 * command at a time in it.
 *
 * A sandbox (a user's thread) has up to LAUNCHERS_PER_SANDBOX of them,
 * one per one-off running at once. The first one-off of a sandbox, and
 * each that finds every launcher busy, runs in a fresh sandbox as before
 * (runner.h); launcher_add() then starts a launcher for the next. A
 * one-off that its timeout, its client, a limit or the broker's stop cuts
 * short kills its launcher with its sandbox, as it would its fresh
 * sandbox; so does a launcher that dies, or says anything but the
 * protocol's words (launcher_proto.h). What one-offs of a launcher share,
 * and what it puts back between them: docs/security-model.md.
 *
 * Launchers bind the view: a sandbox's idle ones are ended before its
 * view is unmounted (launchers_end()). Thread-safe.
 */
#ifndef SBX_LAUNCHER_H
#define SBX_LAUNCHER_H

#include "runner.h"
#include "start.h"

#include <stddef.h>

#define LAUNCHERS_PER_SANDBOX 4

struct launcher_pool;

/* A pool whose launchers run PROGRAM (the path of sbx-launcher). NULL
 * with why in ERR if PROGRAM cannot be opened, or out of memory. */
struct launcher_pool *launchers_new(const char *program, char *err, size_t errlen);
/* Kills every launcher. */
void launchers_free(struct launcher_pool *p);

/* Runs SS's command (a one-off in namespace mode) in an idle launcher
 * of its sandbox (the same user, thread, view, identity, network and
 * mounts), as RUN describes (timeout, idle timeout, output, cancel,
 * stop). Returns 0 with R filled, or -EAGAIN if no launcher was to be
 * had (nothing ran). */
int launcher_run(struct launcher_pool *p, const struct start_spec *ss, const struct run_spec *run,
		 struct run_result *r);

/* Starts a launcher for SS's sandbox unless it has
 * LAUNCHERS_PER_SANDBOX, and waits until it is ready. Returns 1 if it
 * started one, 0 if none was needed, or -errno with why in ERR. */
int launcher_add(struct launcher_pool *p, const struct start_spec *ss, char *err, size_t errlen);

/* Ends the idle launchers of USER's THREAD; returns how many there were
 * (a busy one means a command runs: its view is not idle). */
unsigned launchers_end(struct launcher_pool *p, const char *user, const char *thread);

#endif
