/* units.c - see units.h. */
#include "units.h"

#include <stdio.h>

char *size_text(uint64_t bytes, char *buf, size_t size)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	int u = -1;
	uint64_t whole = bytes, rest = 0;

	while (whole >= 1024 && u < 5) {
		rest = whole % 1024;
		whole /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, size, "%llu bytes", (unsigned long long)bytes);
	else if (rest == 0)
		snprintf(buf, size, "%llu %s", (unsigned long long)whole, units[u]);
	else
		snprintf(buf, size, "%.1f %s", (double)whole + (double)rest / 1024, units[u]);
	return buf;
}
