/* error.c - errors as values (error.h). */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>

int error_set(struct error *e, int code, const char *fmt, ...)
{
	va_list ap;

	if (e) {
		e->code = code;
		va_start(ap, fmt);
		vsnprintf(e->text, sizeof(e->text), fmt, ap);
		va_end(ap);
	}
	return code;
}
