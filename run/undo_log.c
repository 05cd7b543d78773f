/* undo_log.c - the undo's crash log: every step is logged before it is
 * taken, and a second attempt reads what the first logged. */
#include "undo_plan_int.h"
#include "common/array.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/fileops.h"
#include "common/home.h"
#include "common/quote.h"
#include "common/units.h"
#include "common/walk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char *const step_words[STEP_KINDS] = {
	[STEP_RESTORE] = "restore",    [STEP_PUT] = "put",	   [STEP_TAKE] = "take",
	[STEP_RMDIR] = "rmdir",	       [STEP_MOVE] = "move",	   [STEP_EXCHANGE] = "exchange",
	[STEP_ATTR] = "attr",	       [STEP_MKDIR] = "mkdir",	   [STEP_SWAP] = "swap",
	[STEP_SWAP_KEEP] = "swapkeep", [STEP_INPLACE] = "inplace", [STEP_DIR] = "dir",
	[STEP_FAIL] = "fail",	       [STEP_OVER] = "over",	   [STEP_MOVE_KEPT] = "movekept",
	[STEP_SHADOW] = "shadow",      [STEP_PUBLISH] = "publish",
};

/* ---- the log -------------------------------------------------------------- */

static void hex(char *out, const uint8_t *data, size_t len)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[data[i] >> 4];
		out[2 * i + 1] = digits[data[i] & 15];
	}
	out[2 * len] = '\0';
}

static int unhex(const char *in, size_t len, uint8_t *out)
{
	for (size_t i = 0; i < len / 2; i++) {
		int v = 0;
		for (int k = 0; k < 2; k++) {
			char c = in[2 * i + k];
			int d = c >= '0' && c <= '9'   ? c - '0'
				: c >= 'a' && c <= 'f' ? c - 'a' + 10
						       : -1;
			if (d < 0)
				return -EINVAL;
			v = v * 16 + d;
		}
		out[i] = (uint8_t)v;
	}
	return len % 2 ? -EINVAL : 0;
}

/* Appends L to the log LOG_FD in one write, and to RW's steps. L and
 * its strings may lie in RW's steps (a path or link a step names is
 * often an earlier step's object): all is read before they grow. */
int log_step(struct undo_plan *rw, int log_fd, const struct logged *l)
{
	size_t plen = l->path ? strlen(l->path) : 0, llen = l->link ? strlen(l->link) : 0;
	size_t cap = 128 + sizeof(l->object) + 2 * l->meta_len + 2 * plen + 2 * llen;
	_cleanup_(freep) char *line = malloc(cap), *meta = malloc(2 * l->meta_len + 2),
			      *path = malloc(2 * plen + 2), *link = malloc(2 * llen + 2);
	struct logged kept = *l;

	kept.meta = NULL;
	kept.path = kept.link = NULL;
	if (!line || !meta || !path || !link ||
	    (l->meta && !(kept.meta = malloc(l->meta_len ? l->meta_len : 1))) ||
	    (l->path && !(kept.path = strdup(l->path))) ||
	    (l->link && !(kept.link = strdup(l->link))))
		goto nomem;
	if (l->meta) {
		memcpy(kept.meta, l->meta, l->meta_len);
		hex(meta, l->meta, l->meta_len);
	}
	if (l->path)
		hex(path, (const uint8_t *)l->path, plen);
	if (l->link)
		hex(link, (const uint8_t *)l->link, llen);
	int n = snprintf(line, cap, "%zu %s %lld %s %llu %s %d %s %s\n", kept.seq,
			 step_words[kept.kind], (long long)kept.at_ns,
			 kept.object[0] ? kept.object : "-", (unsigned long long)kept.ino,
			 kept.meta ? meta : "-", kept.err, kept.path ? path : "-",
			 kept.link ? link : "-");
	/* From here on L may be gone. */
	if (array_grow(rw->steps, rw->nsteps, rw->scap) < 0)
		goto nomem;
	if (write(log_fd, line, (size_t)n) != n) {
		int r = errno ? -errno : -EIO;
		free(kept.meta);
		free(kept.path);
		free(kept.link);
		return r;
	}
	rw->steps[rw->nsteps++] = kept;
	return 0;
nomem:
	free(kept.meta);
	free(kept.path);
	free(kept.link);
	return -ENOMEM;
}

/* Decodes hex field F ("-": none) into *OUT (malloc'd, NUL ended, *LEN
 * bytes). */
static int field_unhex(const char *f, uint8_t **out, size_t *len)
{
	size_t n = strlen(f);

	*out = NULL;
	*len = 0;
	if (!strcmp(f, "-"))
		return 0;
	if (!(*out = malloc(n / 2 + 1)))
		return -ENOMEM;
	int r = unhex(f, n, *out);
	if (r < 0) {
		free(*out);
		*out = NULL;
		return r;
	}
	(*out)[n / 2] = '\0';
	*len = n / 2;
	return 0;
}

/* Parses one log line LINE (its fields separated by blanks) into L. */
static int log_parse(const struct undo_plan *rw, char *line, struct logged *l)
{
	char *field[9], *save = NULL;
	size_t n = 0, plen;
	int r;

	memset(l, 0, sizeof(*l));
	for (char *t = strtok_r(line, " \n", &save); t && n < 9; t = strtok_r(NULL, " \n", &save))
		field[n++] = t;
	if (n != 8 && n != 9) /* 8: a log of before the link field */
		return -EINVAL;
	l->seq = strtoull(field[0], NULL, 10);
	for (l->kind = 0; l->kind < STEP_KINDS && strcmp(field[1], step_words[l->kind]); l->kind++)
		;
	if (l->seq >= rw->log->n || l->kind == STEP_KINDS || strlen(field[3]) >= sizeof(l->object))
		return -EINVAL;
	l->at_ns = strtoll(field[2], NULL, 10);
	if (strcmp(field[3], "-"))
		memcpy(l->object, field[3], strlen(field[3]) + 1);
	l->ino = strtoull(field[4], NULL, 10);
	l->err = atoi(field[6]);
	if ((r = field_unhex(field[5], &l->meta, &l->meta_len)) < 0)
		return r;
	if ((r = field_unhex(field[7], (uint8_t **)&l->path, &plen)) < 0 ||
	    (n == 9 && (r = field_unhex(field[8], (uint8_t **)&l->link, &plen)) < 0)) {
		free(l->meta);
		free(l->path);
		return r;
	}
	return 0;
}

/* Reads what a first attempt logged into RW's steps. A line cut short
 * (a crash in its write) never had its step taken: it is cut off, so
 * that what is logged next starts a line of its own. */
int log_read(struct undo_plan *rw, int log_fd)
{
	_cleanup_(fclosep) FILE *f = fdopen(dup(log_fd), "r");
	char *line = NULL;
	size_t cap = 0;
	off_t whole = 0; /* the bytes of complete lines */
	ssize_t n;
	int r = 0;

	if (!f)
		return -errno;
	while (r == 0 && (n = getline(&line, &cap, f)) > 0) {
		struct logged l;
		if (line[n - 1] != '\n')
			break;
		whole += n;
		if ((r = log_parse(rw, line, &l)) == 0 &&
		    (r = array_grow(rw->steps, rw->nsteps, rw->scap)) < 0) {
			free(l.meta);
			free(l.path);
			free(l.link);
		}
		if (r == 0)
			rw->steps[rw->nsteps++] = l;
	}
	free(line);
	struct stat st;
	if (r == 0 && fstat(log_fd, &st) == 0 && st.st_size > whole && ftruncate(log_fd, whole) < 0)
		r = -errno;
	return r;
}

/* True if step I of the log failed (its next line says so). */
bool step_failed(const struct undo_plan *rw, size_t i)
{
	return i + 1 < rw->nsteps && rw->steps[i + 1].kind == STEP_FAIL &&
	       rw->steps[i + 1].seq == rw->steps[i].seq;
}
