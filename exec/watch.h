/* watch.h - a change of a thread's journal (store/follow.h) as the
 * broker's watch op sends it and `sbx watch` prints it: one definition
 * of its fields (docs/protocol.md, docs/changes.md "Watching changes
 * live").
 */
#ifndef SBX_WATCH_H
#define SBX_WATCH_H

#include "store/follow.h"

#include <jansson.h>
#include <stdint.h>

#define WATCH_TIME_MAX 32

/* AT_NS (CLOCK_REALTIME) as ISO-8601 UTC with milliseconds,
 * "2026-11-30T12:00:00.123Z", in BUF; returns BUF. */
const char *watch_time(int64_t at_ns, char buf[WATCH_TIME_MAX]);

/* E as a JSON object: cursor, op, path, path2 (null unless a rename or
 * an exchange), at_ns, time, pid, command, run (null if none was open).
 * Bytes of a name that are not UTF-8 become U+FFFD, as in the change
 * reports. NULL: out of memory. */
json_t *watch_event_json(const struct follow_event *e);

#endif
