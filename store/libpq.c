/* libpq.c - libpq, loaded on first use (libpq.h). */
#include "libpq.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

/* The library's symbols, resolved once: as immutable after the load as
 * a linked library's would be, hence process-wide. */
static struct libpq table;
static char failure[256];
static pthread_once_t loaded = PTHREAD_ONCE_INIT;

static void load(void)
{
	void *lib = dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL);

	if (!lib) {
		snprintf(failure, sizeof(failure),
			 "cannot load libpq, which a PostgreSQL store needs (Debian: apt-get "
			 "install libpq5): %s",
			 dlerror());
		return;
	}
#define LIBPQ_RESOLVE(f)                                                                         \
	if (!(table.f = (typeof(f) *)dlsym(lib, #f))) {                                          \
		snprintf(failure, sizeof(failure), "libpq.so.5 has no %s: too old a libpq", #f); \
		return;                                                                          \
	}
	LIBPQ_FUNCTIONS(LIBPQ_RESOLVE)
#undef LIBPQ_RESOLVE
}

const struct libpq *libpq_load(char *err, size_t errlen)
{
	pthread_once(&loaded, load);
	if (failure[0]) {
		snprintf(err, errlen, "%s", failure);
		return NULL;
	}
	return &table;
}
