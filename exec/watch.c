/* watch.c - see watch.h. */
#include "watch.h"
#include "common/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *watch_time(int64_t at_ns, char buf[WATCH_TIME_MAX])
{
	time_t sec = (time_t)(at_ns / 1000000000);
	int ms = (int)(at_ns % 1000000000 / 1000000);
	struct tm tm;
	char day[24];

	gmtime_r(&sec, &tm);
	strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, WATCH_TIME_MAX, "%s.%03dZ", day, ms);
	return buf;
}

/* A name from the file system or /proc as JSON (jansson refuses bytes
 * that are not UTF-8). */
static json_t *name_json(const char *s)
{
	if (!s)
		return json_null();
	json_t *j = json_string(s);
	if (j)
		return j;
	char *clean = utf8_clean(s, strlen(s), NULL);
	j = clean ? json_string(clean) : NULL;
	free(clean);
	return j;
}

json_t *watch_event_json(const struct follow_event *e)
{
	char when[WATCH_TIME_MAX];

	return json_pack("{s:I, s:s, s:o, s:o, s:I, s:s, s:i, s:o, s:o}", "cursor",
			 (json_int_t)e->cursor, "op", e->op, "path", name_json(e->path), "path2",
			 name_json(e->path2), "at_ns", (json_int_t)e->at_ns, "time",
			 watch_time(e->at_ns, when), "pid", (int)e->pid, "command",
			 name_json(e->comm), "run",
			 e->run ? json_integer((json_int_t)e->run) : json_null());
}
