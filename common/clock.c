/* clock.c - times as people write them (clock.h). */
#include "clock.h"

#include <errno.h>
#include <string.h>

int time_parse(const char *s, int64_t *ns)
{
	struct tm tm = { 0 };
	const char *rest = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	int64_t frac = 0, scale = 1000000000;

	if (!rest)
		return -EINVAL;
	if (*rest == '.')
		for (rest++; *rest >= '0' && *rest <= '9'; rest++)
			if (scale > 1) {
				scale /= 10;
				frac += (*rest - '0') * scale;
			}
	if (strcmp(rest, "Z"))
		return -EINVAL;
	time_t sec = timegm(&tm);
	if (sec == (time_t)-1 || sec < 0)
		return -EINVAL;
	*ns = (int64_t)sec * 1000000000 + frac;
	return 0;
}
