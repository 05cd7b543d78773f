/* skills.c - see skills.h. */
#include "skills.h"
#include "common/cleanup.h"
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A state file bigger than this is taken as unreadable (fails closed). */
#define STATE_MAX_BYTES (4 << 20)

/* What one file said, and which version of it that was. */
struct scope_state {
	int dirfd;
	const char *file;
	const char *key; /* the key of the object of names; NULL: the root */
	pthread_mutex_t lock;
	bool known;	  /* parsed at least once */
	bool present;	  /* the file was there */
	struct stat seen; /* its identity then */
	bool all;	  /* unreadable: everything disabled */
	char **names;	  /* disabled, sorted */
	size_t n;
};

struct skills {
	struct scope_state scope[SKILL_NSCOPES];
};

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static bool same_version(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* The disabled names in the object OBJ, into NAMES (N of them): entries
 * whose "enabled" is false, as the reference's entry.get("enabled", True). */
static int collect_disabled(json_t *obj, char ***names, size_t *n)
{
	const char *name;
	json_t *entry;
	char **out = calloc(json_object_size(obj) + 1, sizeof(*out));
	size_t k = 0;

	if (!out)
		return -ENOMEM;
	json_object_foreach (obj, name, entry) {
		if (!json_is_object(entry) || !json_is_false(json_object_get(entry, "enabled")))
			continue;
		if (!(out[k] = strdup(name))) {
			names_free(out, k);
			return -ENOMEM;
		}
		k++;
	}
	qsort(out, k, sizeof(*out), cmp_names);
	*names = out;
	*n = k;
	return 0;
}

/* Parses FD, the file of SC, into its state. Returns 0, or -errno with
 * WHY saying what is wrong with the file. Lock held. */
static int parse(struct scope_state *sc, int fd, char *why, size_t whylen)
{
	json_error_t jerr;
	struct stat st;

	if (fstat(fd, &st) < 0)
		return neg_errno();
	sc->seen = st;
	if (st.st_size > STATE_MAX_BYTES) {
		snprintf(why, whylen, "larger than %d bytes", STATE_MAX_BYTES);
		return -EFBIG;
	}
	_cleanup_(freep) char *buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return -ENOMEM;
	size_t len = 0;
	for (ssize_t got; len < (size_t)st.st_size; len += (size_t)got) {
		got = read(fd, buf + len, (size_t)st.st_size - len);
		if (got < 0)
			return neg_errno();
		if (got == 0)
			break;
	}
	json_auto_t *root = json_loadb(buf, len, 0, &jerr);
	if (!root) {
		snprintf(why, whylen, "not JSON: %s (line %d)", jerr.text, jerr.line);
		return -EINVAL;
	}
	json_t *obj = sc->key ? json_object_get(root, sc->key) : root;
	if (sc->key && json_is_object(root) && !obj)
		obj = json_object(); /* no skills key: none disabled */
	else
		json_incref(obj);
	json_auto_t *held = obj;
	if (!json_is_object(obj)) {
		snprintf(why, whylen, "%s is not a JSON object",
			 sc->key ? "\"skills\"" : "the file");
		return -EINVAL;
	}
	names_free(sc->names, sc->n);
	sc->names = NULL;
	sc->n = 0;
	return collect_disabled(obj, &sc->names, &sc->n);
}

/* Brings SC up to date with its file. Lock held. */
static void refresh(struct scope_state *sc)
{
	struct stat st;
	char why[256] = "";
	int r;

	if (fstatat(sc->dirfd, sc->file, &st, 0) < 0) {
		if (errno == ENOENT) {
			/* No file: every skill of the scope is enabled. */
			names_free(sc->names, sc->n);
			sc->names = NULL;
			sc->n = 0;
			sc->all = false;
			sc->present = false;
			sc->known = true;
			return;
		}
	} else if (sc->known && sc->present && same_version(&st, &sc->seen)) {
		return;
	}
	_cleanup_(closep) int fd = openat(sc->dirfd, sc->file, O_RDONLY | O_NOCTTY | O_CLOEXEC);
	r = fd < 0 ? neg_errno() : parse(sc, fd, why, sizeof(why));
	if (r == -ENOENT)
		return refresh(sc); /* removed meanwhile */
	if (r < 0 && (!sc->known || !sc->all))
		log_warn(
			"skills: cannot use %s (%s): every skill it governs is disabled until it can be read",
			sc->file, *why ? why : strerror(-r));
	sc->all = r < 0;
	sc->present = true;
	sc->known = true;
	if (r < 0 && fd >= 0)
		fstat(fd, &sc->seen); /* not again until it changes */
	else if (r < 0)
		sc->present = false; /* retried at every question */
}

bool skills_disabled(struct skills *s, enum skill_scope scope, const char *name)
{
	struct scope_state *sc = &s->scope[scope];
	bool found;

	pthread_mutex_lock(&sc->lock);
	refresh(sc);
	found = sc->all ||
		(sc->n && bsearch(&name, sc->names, sc->n, sizeof(*sc->names), cmp_names));
	pthread_mutex_unlock(&sc->lock);
	return found;
}

int skills_state_dir(const struct skills *s, enum skill_scope scope, const char **file)
{
	*file = s->scope[scope].file;
	return s->scope[scope].dirfd;
}

struct skills *skills_new(int homefd, int user_skills_fd)
{
	static const char *const files[SKILL_NSCOPES] = {
		[SKILL_SCOPE_PUBLIC] = "extensions_config.json",
		[SKILL_SCOPE_USER] = "_skill_states.json",
	};
	const int dirs[SKILL_NSCOPES] = {
		[SKILL_SCOPE_PUBLIC] = homefd,
		[SKILL_SCOPE_USER] = user_skills_fd,
	};
	struct skills *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	for (int i = 0; i < SKILL_NSCOPES; i++) {
		struct scope_state *sc = &s->scope[i];

		pthread_mutex_init(&sc->lock, NULL);
		sc->file = files[i];
		sc->key = i == SKILL_SCOPE_PUBLIC ? "skills" : NULL;
		sc->dirfd = fcntl(dirs[i], F_DUPFD_CLOEXEC, 0);
	}
	for (int i = 0; i < SKILL_NSCOPES; i++) {
		if (s->scope[i].dirfd < 0) {
			skills_free(s);
			return NULL;
		}
	}
	return s;
}

void skills_free(struct skills *s)
{
	if (!s)
		return;
	for (int i = 0; i < SKILL_NSCOPES; i++) {
		struct scope_state *sc = &s->scope[i];

		closep(&sc->dirfd);
		names_free(sc->names, sc->n);
		pthread_mutex_destroy(&sc->lock);
	}
	free(s);
}
