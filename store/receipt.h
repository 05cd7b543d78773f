/* receipt.h - delivery receipts' rules (docs/changes.md, "Delivery
 * receipts"): which paths may be presented, how they are recorded, and
 * which produced output a presented path covers. Nothing here builds
 * JSON: sbx and the broker share it, and so does the view's store code.
 */
#ifndef SBX_RECEIPT_H
#define SBX_RECEIPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

#define RECEIPT_OUTPUTS "/mnt/user-data/outputs"
/* The reference's present_files tool: only its paths are verified. */
#define RECEIPT_TOOL_DEFAULT "present_files"
#define RECEIPT_TOOL_MAX 128
/* Paths in one presentation, at most (a bound for the broker's lines). */
#define RECEIPT_PATHS_MAX 1000
/* The reference's refusal, with the path as given. */
#define RECEIPT_REFUSED_FMT "Only files in " RECEIPT_OUTPUTS " can be presented: %s"
/* The run error of an output produced and none presented (reference). */
#define RECEIPT_INCOMPLETE "Artifact delivery incomplete: no produced output artifact was presented"

/* 0 if NAME (1..RECEIPT_TOOL_MAX of [A-Za-z0-9_.:-]) may name a tool,
 * else -EINVAL with *WHY a static phrase. */
int receipt_tool_check(const char *name, const char **why);

/* PATH as recorded: a virtual path under /mnt/user-data/outputs (also
 * without its leading '/', as the reference takes it) or the same under
 * HOST_OUTPUTS (the thread's outputs directory on the host), made
 * "/mnt/user-data/outputs/REST" with "//", "." and a trailing '/'
 * dropped; the outputs directory itself is "/mnt/user-data/outputs/.",
 * as the reference records it. Returns 0, or -EINVAL for anything else
 * (outside outputs, a ".." component, not UTF-8, empty), -ENAMETOOLONG. */
int receipt_path(const char *path, const char *host_outputs, char *out, size_t size);

/* True if PRESENTED (trailing '/' ignored) is PRODUCED or a directory
 * above it: the reference's match. */
bool receipt_covers(const char *presented, const char *produced);

/* Records PATHS (N of them, as given) as presented by TOOL during the
 * open run RUN of the store S under HOME, now. Either all are recorded
 * or none. Returns 0; -ENOENT (no run RUN), -EALREADY (it has ended),
 * -EBUSY (another host holds the run's thread: lease.h), -EINVAL
 * (PATHS[*BAD] may not be presented, or TOOL is no tool name: *BAD = N),
 * or -errno. Once they are recorded, EACH (if not NULL) is called with
 * every path as recorded. */
int receipt_present(struct store *s, const char *home, int64_t run, const char *tool,
		    const char *const *paths, size_t n, size_t *bad,
		    void (*each)(void *arg, const char *path), void *arg);

#endif
