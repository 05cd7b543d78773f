/* cgroup.h - what one sandbox may take of the host: processes, memory
 * and CPU, per [limits] of sbx.conf (docs/configuration.md).
 *
 * Where the host lets the broker create cgroups, every sandbox (a user's
 * thread) is a group of its own,
 *   <the broker's cgroup>/sbx-<home>/u-<user>/t-<thread>
 * holding the limits (pids.max, memory.max, memory.swap.max, cpu.max,
 * cpu.weight, or their cgroup v1 names), and every command and shell
 * session in it is a leaf below (c-N): its processes join it before they
 * are executed, and a leaf that reaches a limit is killed as one, nothing
 * of it left running. Each controller comes from the hierarchy that has
 * it: the unified one (v2) where the broker may enable it there, else
 * its own v1 hierarchy.
 *
 * Where a controller is not available (no delegation, a container), its
 * limit falls back to the process's own: RLIMIT_NPROC for processes,
 * which counts the sandbox's uid (its own only under a root broker; the
 * limit is not set for a broker's own uid), RLIMIT_DATA for memory, a
 * nice value for the CPU weight (no quota). A limit is never silently
 * absent: cgroups_describe() says what holds and why, for the log and sbx
 * doctor.
 *
 * Everything is thread-safe.
 */
#ifndef SBX_CGROUP_H
#define SBX_CGROUP_H

#include "launch.h"
#include "common/config.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum limit_hit { LIMIT_NONE, LIMIT_PIDS, LIMIT_MEMORY };

struct cgroups;
struct cgroup_leaf;

/* The limits of C (copied) for the sandboxes of HOME. Never NULL but for
 * lack of memory: what the host does not allow falls back, and says so.
 * With PROBE (sbx doctor), it only finds out what would hold: nothing is
 * made, moved or removed. */
struct cgroups *cgroups_new(const struct config_limits *c, const char *home, bool probe);
/* Kills what is left in its groups and removes them. */
void cgroups_free(struct cgroups *l);

/* NULL if the unified (v2) hierarchy is used, else why not. */
const char *cgroups_v2_why(const struct cgroups *l);

/* Calls FN once per limit (processes, memory, CPU) with what enforces it
 * ("cgroup v2", "cgroup v1", "rlimit", "none"), and a sentence saying
 * what holds, or why nothing does. */
void cgroups_describe(const struct cgroups *l,
		      void (*fn)(void *arg, const char *limit, const char *how, const char *text),
		      void *arg);

/* A leaf for one command or shell of USER's THREAD, which runs as host
 * uid UID (SEPARATE: a uid of its own). Returns 0 with *LEAF set, or
 * -errno with a reason in ERR. */
int cgroup_leaf_new(struct cgroups *l, const char *user, const char *thread, uid_t uid,
		    bool separate, struct cgroup_leaf **leaf, char *err, size_t errlen);
/* Adds to LAUNCH what its process must do to live under the limits. The
 * descriptors stay LEAF's. */
void cgroup_launch(const struct cgroup_leaf *leaf, struct launch *launch);
/* Whether LEAF reached a limit since the last call (cheap: a few small
 * reads). */
enum limit_hit cgroup_check(struct cgroup_leaf *leaf);
/* The same for a command that ended, KILLED if by SIGKILL (or exit status
 * 137 from its shell): the OOM killer sends its SIGKILL before it counts
 * the kill (and writes to the console in between), so the count gets up
 * to 100 ms to appear. */
enum limit_hit cgroup_check_ended(struct cgroup_leaf *leaf, bool killed);
/* Kills every process of LEAF (under the rlimit fallback: of its uid). */
void cgroup_kill(struct cgroup_leaf *leaf);
/* Kills what is left and removes the leaf (once its processes are
 * gone: if they are not yet, cgroups_tick() removes it). NULL is fine. */
void cgroup_leaf_free(struct cgroup_leaf *leaf);
/* Removes the leaves that were still busy when freed (the broker's main
 * loop calls it about once a second). */
void cgroups_tick(struct cgroups *l);

/* The line a killed command's output ends with: "killed: out of memory
 * (limit 256 MiB)", "killed: process limit 64 reached". */
char *cgroups_notice(const struct cgroups *l, enum limit_hit hit, char *buf, size_t size);

#endif
