/* snapshot.c - see snapshot.h. */
#include "snapshot.h"
#include "secrets.h"
#include "common/array.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/utf8.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const excluded_dirs[] = {
	".git",		 ".hg",		".svn",	 ".cache",
	".mcp",		 ".next",	".venv", ".browser-frames",
	".tool-results", "__pycache__", "build", "dist",
	"node_modules",
};

/* The reference's sensitive patterns, .env .env.* *api_key* *apikey*
 * *.key *.pem *credential* *password* *private_key* *secret* *token*,
 * matched case-insensitively against the path and each of its components,
 * come down to three tests: a word anywhere in the path (no word holds a
 * slash), a component ending in a suffix, and a component that is ".env"
 * or starts with ".env.". No fnmatch: this runs before the view's first
 * change to a file during a run.
 *
 * Beyond the reference (docs/changes.md): *.env (prod.env, which the
 * reference shows), and the names of files that hold nothing but a
 * secret: OpenSSH's default private keys (their .pub is published by
 * design, and stays text), .netrc and curl's _netrc, .pgpass. Content
 * rules (secrets.h) catch keys and tokens under any other name. */
static const char *const sensitive_words[] = {
	"api_key", "apikey", "credential", "password", "private_key", "secret", "token",
};
static const char *const sensitive_suffixes[] = { ".key", ".pem", ".env" };
static const char *const sensitive_names[] = {
	"id_rsa",	 "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk",
	"id_ed25519_sk", ".netrc", "_netrc",   ".pgpass",
};

static const char *const binary_suffixes[] = {
	".7z",	".avif", ".bmp", ".class", ".db",   ".dll",  ".dmg", ".doc",  ".docx", ".exe",
	".gif", ".gz",	 ".ico", ".jar",   ".jpeg", ".jpg",  ".mov", ".mp3",  ".mp4",  ".o",
	".pdf", ".png",	 ".pyc", ".so",	   ".tar",  ".webp", ".xls", ".xlsx", ".zip",
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

bool snapshot_excluded_dir(const char *name)
{
	for (size_t i = 0; i < COUNT(excluded_dirs); i++)
		if (!strcmp(name, excluded_dirs[i]))
			return true;
	return false;
}

bool snapshot_path_excluded(const char *path)
{
	char part[NAME_MAX + 1];

	for (const char *p = path, *slash; (slash = strchr(p, '/')); p = slash + 1) {
		size_t n = (size_t)(slash - p);
		if (n == 0 || n > NAME_MAX)
			continue;
		memcpy(part, p, n);
		part[n] = '\0';
		if (snapshot_excluded_dir(part))
			return true;
	}
	return false;
}

static bool sensitive_part(const char *part, size_t n)
{
	/* ".env" itself ends in the suffix ".env"; fnmatch's ".env.*"
	 * takes ".env." too. */
	if (n >= 5 && !memcmp(part, ".env.", 5))
		return true;
	for (size_t i = 0; i < COUNT(sensitive_names); i++)
		if (n == strlen(sensitive_names[i]) && !memcmp(part, sensitive_names[i], n))
			return true;
	for (size_t i = 0; i < COUNT(sensitive_suffixes); i++) {
		size_t k = strlen(sensitive_suffixes[i]);
		if (n >= k && !memcmp(part + n - k, sensitive_suffixes[i], k))
			return true;
	}
	return false;
}

bool snapshot_sensitive(const char *path)
{
	char lower[PATH_MAX];
	size_t n = strlen(path);

	if (n >= sizeof(lower))
		n = sizeof(lower) - 1;
	for (size_t i = 0; i < n; i++)
		lower[i] = (char)tolower((unsigned char)path[i]);
	lower[n] = '\0';
	for (size_t i = 0; i < COUNT(sensitive_words); i++)
		if (strstr(lower, sensitive_words[i]))
			return true;
	for (const char *part = lower, *end;; part = end + 1) {
		end = strchr(part, '/');
		if (!end)
			end = lower + n;
		if (sensitive_part(part, (size_t)(end - part)))
			return true;
		if (!*end)
			return false;
	}
}

bool snapshot_binary_name(const char *name)
{
	const char *dot = strrchr(name, '.');

	/* A suffix as Python's Path.suffix sees it: not a leading dot. */
	if (!dot || dot == name)
		return false;
	for (size_t i = 0; i < COUNT(binary_suffixes); i++)
		if (!strcasecmp(dot, binary_suffixes[i]))
			return true;
	return false;
}

/* The reference's text rule (deerflow.utils.text_decoding): UTF-16 when
 * a byte order mark says so, else UTF-8 with or without a BOM; nothing
 * else is guessed. One decoder serves the 4 KiB sample (FINAL false: a
 * character cut by the sample's end may go on beyond it, as Python's
 * incremental decoders allow) and a whole file (FINAL true). OUT, if not
 * NULL, receives the text as UTF-8 without the BOM (TEXT_ROOM(N) bytes
 * at most). Returns its length, or -EILSEQ if it is not text. */
#define TEXT_ROOM(n) ((n) + (n) / 2 + 1)

static bool utf16_bom(const uint8_t *s, size_t n)
{
	return n >= 2 && ((s[0] == 0xff && s[1] == 0xfe) || (s[0] == 0xfe && s[1] == 0xff));
}

static size_t put_utf8(char *out, uint32_t u)
{
	size_t len = u < 0x80 ? 1 : u < 0x800 ? 2 : u < 0x10000 ? 3 : 4;

	if (out) {
		static const uint8_t lead[] = { 0, 0, 0xc0, 0xe0, 0xf0 };
		for (size_t k = len - 1; k > 0; k--, u >>= 6)
			out[k] = (char)(0x80 | (u & 0x3f));
		out[0] = (char)(lead[len] | u);
	}
	return len;
}

static ssize_t utf16_decode(const uint8_t *s, size_t n, bool final, char *out)
{
	bool le = s[0] == 0xff;
	size_t i = 2, o = 0;

#define UNIT(p) (le ? (uint32_t)((p)[0] | (p)[1] << 8) : (uint32_t)((p)[0] << 8 | (p)[1]))
	for (; i + 1 < n; i += 2) {
		uint32_t u = UNIT(s + i);

		if (u >= 0xdc00 && u <= 0xdfff)
			return -EILSEQ; /* a low surrogate alone */
		if (u >= 0xd800 && u <= 0xdbff) {
			if (i + 3 >= n)
				break; /* its pair is cut off */
			uint32_t low = UNIT(s + i + 2);
			if (low < 0xdc00 || low > 0xdfff)
				return -EILSEQ;
			u = 0x10000 + ((u - 0xd800) << 10) + (low - 0xdc00);
			i += 2;
		}
		o += put_utf8(out ? out + o : NULL, u);
	}
#undef UNIT
	return final && i < n ? -EILSEQ : (ssize_t)o;
}

static ssize_t utf8_decode(const uint8_t *s, size_t n, bool final, char *out)
{
	size_t skip = n >= 3 && !memcmp(s, "\xef\xbb\xbf", 3) ? 3 : 0, i;

	for (i = skip; i < n;) {
		int len = utf8_seq(s + i, n - i);
		if (len < 0 && !final)
			break;
		if (len <= 0)
			return -EILSEQ;
		i += (size_t)len;
	}
	if (out)
		memcpy(out, s + skip, i - skip);
	return (ssize_t)(i - skip);
}

static ssize_t text_decode(const uint8_t *s, size_t n, bool final, char *out)
{
	return utf16_bom(s, n) ? utf16_decode(s, n, final, out) : utf8_decode(s, n, final, out);
}

bool snapshot_text_sample(const uint8_t *sample, size_t n)
{
	/* _looks_binary: a UTF-16 BOM that decodes, else no NUL and UTF-8. */
	if (utf16_bom(sample, n) && utf16_decode(sample, n, false, NULL) >= 0)
		return true;
	if (memchr(sample, 0, n))
		return false;
	return utf8_decode(sample, n, false, NULL) >= 0;
}

int snapshot_text_decode(const char *data, size_t len, char **text, size_t *text_len)
{
	char *out = malloc(TEXT_ROOM(len));
	ssize_t n;

	if (!out)
		return -ENOMEM;
	n = text_decode((const uint8_t *)data, len, true, out);
	if (n < 0) {
		free(out);
		return (int)n;
	}
	out[n] = '\0';
	*text = out;
	*text_len = (size_t)n;
	return 0;
}

/* ---- one file ----------------------------------------------------------- */

/* Whether text content BUF (N bytes; FINAL: the whole file, else its
 * sample) holds a credential (secrets.h). A UTF-16 text is searched
 * decoded: its bytes hide every token. Returns 1, 0, or -ENOMEM. */
static int holds_secret(const uint8_t *buf, size_t n, bool final)
{
	if (!utf16_bom(buf, n))
		return secrets_find((const char *)buf, n) != NULL;
	_cleanup_(freep) char *text = malloc(TEXT_ROOM(n));
	if (!text)
		return -ENOMEM;
	ssize_t len = utf16_decode(buf, n, final, text);
	return len >= 0 && secrets_find(text, (size_t)len) != NULL;
}

bool snapshot_text_secret(const char *data, size_t len)
{
	/* Out of memory: the file is hidden, not shown. */
	return holds_secret((const uint8_t *)data, len, true) != 0;
}

/* Reads regular file FD into F: a sample decides text or binary, and a
 * file up to SNAPSHOT_HASH_MAX is hashed (its text handed to KEEP). A text
 * holding a credential becomes the stub a sensitive name gets. */
static int read_content(int fd, const char *name, struct snap_file *f, snapshot_keep keep,
			void *arg)
{
	/* Sized to the file, not to the limit (a 256 KiB buffer would be an
	 * mmap and munmap per file), with a byte more to see it grow. */
	static const size_t cap = SNAPSHOT_HASH_MAX + 1;
	bool small = f->size <= SNAPSHOT_HASH_MAX;
	size_t want = small ? (size_t)f->size + 1 : SNAPSHOT_SAMPLE, got = 0;
	_cleanup_(freep) uint8_t *buf = malloc(want);
	ssize_t n;
	int r;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		while (got < want && (n = pread(fd, buf + got, want - got, (off_t)got)) != 0) {
			if (n < 0) {
				if (errno == EINTR)
					continue;
				return -errno;
			}
			got += (size_t)n;
			/* At the size its stat gave, short of the byte more, the
			 * file ends (it reads short only there): no read is made
			 * just to be told so. */
			if (small && got == (size_t)f->size)
				break;
		}
		if (got < want || !small || want == cap)
			break;
		/* It grew since its stat: read on, up to the limit. */
		uint8_t *more = realloc(buf, cap);
		if (!more)
			return -ENOMEM;
		buf = more;
		want = cap;
	}
	bool whole = small && got <= SNAPSHOT_HASH_MAX;
	size_t sample = got < SNAPSHOT_SAMPLE ? got : SNAPSHOT_SAMPLE;
	f->binary = snapshot_binary_name(name) || !snapshot_text_sample(buf, sample);
	/* The reference decodes a file it may diff whole, and calls it binary
	 * if that fails: cut in a character, say, where the sample only
	 * showed a character going on. */
	if (whole)
		f->binary = f->binary || text_decode(buf, got, true, NULL) < 0;
	/* Binary content is never shown, so only text is searched: all of
	 * what was read, the sample of a large file. */
	if (!f->binary) {
		r = holds_secret(buf, whole ? got : sample, whole);
		if (r != 0) {
			f->sensitive = r > 0;
			return r < 0 ? r : 0;
		}
	}
	if (whole) {
		if (EVP_Digest(buf, got, f->sha256, NULL, EVP_sha256(), NULL) != 1)
			return -EIO;
		f->hashed = true;
		f->size = (int64_t)got;
		if (keep && !f->binary)
			return keep(arg, f, buf, got);
	} else {
		f->large = true;
	}
	return 0;
}

/* A file's root, and whether it looks secret, by its virtual path: the
 * roots' own names are not part of the test. */
static const char *root_of(const char *path)
{
	return !strncmp(path, "/mnt/user-data/outputs/", 23) ? "outputs" : "workspace";
}

bool snapshot_path_sensitive(const char *path)
{
	return snapshot_sensitive(!strncmp(path, "/mnt/user-data/", 15) ? path + 15 : path);
}

int snapshot_describe(int fd, const struct stat *st, const char *path, const char *target,
		      snapshot_keep keep, void *arg, struct snap_file *f)
{
	const char *slash = strrchr(path, '/');
	int r = 0;

	memset(f, 0, sizeof(*f));
	if (!S_ISREG(st->st_mode) && !(S_ISLNK(st->st_mode) && target))
		return -ENOENT;
	f->path = strdup(path);
	if (!f->path)
		return -ENOMEM;
	f->root = root_of(path);
	f->size = st->st_size;
	f->mtime_ns = timespec_ns(&st->st_mtim);
	f->ino = (uint64_t)st->st_ino;
	f->ctime_ns = timespec_ns(&st->st_ctim);
	f->sensitive = snapshot_path_sensitive(path);
	if (S_ISLNK(st->st_mode)) {
		f->symlink = true;
		f->target = strdup(target);
		r = f->target ? 0 : -ENOMEM;
	} else if (!f->sensitive) {
		r = read_content(fd, slash ? slash + 1 : path, f, keep, arg);
	}
	if (r != 0)
		snap_file_free(f);
	return r;
}

void snap_file_free(struct snap_file *f)
{
	free(f->path);
	free(f->target);
	f->path = f->target = NULL;
}

int snapshot_file_at(int dfd, const char *name, const struct stat *known, const char *path,
		     snapshot_keep keep, void *arg, struct snap_file *f)
{
	_cleanup_(closep) int fd = -1;
	char target[PATH_MAX];
	struct stat st;
	ssize_t n;

	memset(f, 0, sizeof(*f));
	if (known)
		st = *known;
	else if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (S_ISLNK(st.st_mode)) {
		n = readlinkat(dfd, name, target, sizeof(target) - 1);
		if (n < 0)
			return -errno;
		target[n] = '\0';
		return snapshot_describe(-1, &st, path, target, keep, arg, f);
	}
	if (!S_ISREG(st.st_mode))
		return -ENOENT;
	if (!snapshot_path_sensitive(path)) {
		/* Opened without following, and checked again: the name may
		 * have been swapped since the stat. */
		fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		if (fd < 0 || fstat(fd, &st) < 0)
			return -errno;
		if (!S_ISREG(st.st_mode))
			return -ENOENT;
	}
	return snapshot_describe(fd, &st, path, NULL, keep, arg, f);
}

/* ---- the walk ----------------------------------------------------------- */

struct walk {
	struct snapshot *s;
	const struct snap_file **known; /* an earlier scan's files, by path */
	size_t nknown;
	int64_t settled_before; /* a ctime before it is settled (realtime ns) */
	size_t max;
	snapshot_progress progress;
	snapshot_keep keep;
	void *arg;
	int error;	     /* from KEEP */
	char path[PATH_MAX]; /* virtual path of the current directory */
	bool stop;
};

struct name {
	char *name;
	struct stat st;
};

static int name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct name *)a)->name, ((const struct name *)b)->name);
}

/* The walk's KEEP: its failure stops the walk. */
static int walk_keep(void *arg, const struct snap_file *f, const uint8_t *data, size_t len)
{
	struct walk *w = arg;

	w->error = w->keep(w->arg, f, data, len);
	return w->error;
}

static int known_cmp(const void *a, const void *b)
{
	return strcmp((*(const struct snap_file *const *)a)->path,
		      (*(const struct snap_file *const *)b)->path);
}

/* The file W's earlier scan recorded at PATH, if ST shows it unchanged
 * since (see snapshot.h), else NULL. */
static const struct snap_file *known_unchanged(const struct walk *w, const char *path,
					       const struct stat *st)
{
	struct snap_file key = { .path = (char *)path };
	const struct snap_file *pk = &key, **at;

	if (!w->nknown || !S_ISREG(st->st_mode))
		return NULL;
	at = bsearch(&pk, w->known, w->nknown, sizeof(*w->known), known_cmp);
	if (!at)
		return NULL;
	const struct snap_file *k = *at;
	return k->settled && !k->symlink && k->ino == (uint64_t)st->st_ino &&
			       k->ctime_ns == timespec_ns(&st->st_ctim) &&
			       k->mtime_ns == timespec_ns(&st->st_mtim) && k->size == st->st_size
		       ? k
		       : NULL;
}

/* Describes F as KNOWN was described: the same content. */
static int describe_as_known(struct snap_file *f, const struct snap_file *known)
{
	*f = *known;
	f->target = NULL;
	f->path = strdup(known->path);
	return f->path ? 0 : -ENOMEM;
}

/* Records NAME (attributes ST) of directory DFD, or stops the walk at the
 * limit. */
static void visit_file(struct walk *w, int dfd, const struct name *e)
{
	struct snapshot *s = w->s;
	char path[PATH_MAX];
	int r;

	if (s->n >= w->max) {
		s->truncated = true;
		w->stop = true;
		return;
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", w->path, e->name) >= sizeof(path))
		return;
	struct snap_file *f = snapshot_append(s);
	const struct snap_file *k = f ? known_unchanged(w, path, &e->st) : NULL;
	r = !f	? -ENOMEM
	    : k ? describe_as_known(f, k)
		: snapshot_file_at(dfd, e->name, &e->st, path, w->keep ? walk_keep : NULL, w, f);
	if (r < 0 || w->error) {
		/* Left out: it vanished while scanned or is unreadable; or the
		 * walk stops (KEEP failed; out of memory: what we have,
		 * truncated). */
		s->n -= f != NULL;
		w->stop |= w->error != 0 || r == -ENOMEM;
		s->truncated |= r == -ENOMEM;
		return;
	}
	/* Changed too near the scan, it is read again the next time. */
	f->settled = f->ctime_ns < w->settled_before;
	if (f->hashed && !k)
		s->bytes_hashed += (uint64_t)f->size;
	if (w->progress && s->n % 256 == 0)
		w->progress(w->arg, s->n);
}

static int walk_dir(struct walk *w, int dfd);

static void visit_dir(struct walk *w, int dfd, const char *name)
{
	size_t len = strlen(w->path);
	int fd;

	if (snapshot_excluded_dir(name))
		return;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return; /* vanished, or not ours to read */
	if ((size_t)snprintf(w->path + len, sizeof(w->path) - len, "/%s", name) <
	    sizeof(w->path) - len)
		walk_dir(w, fd);
	w->path[len] = '\0';
	close(fd);
}

/* Files of DFD by name, then its subdirectories by name. */
static int walk_dir(struct walk *w, int dfd)
{
	_cleanup_(closedirp) DIR *d = NULL;
	struct name *names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int fd, r = 0;

	fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd))) {
		r = -errno;
		if (fd >= 0)
			close(fd);
		return r;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if ((r = array_grow(names, n, cap)) < 0)
			break;
		if (fstatat(dirfd(d), de->d_name, &names[n].st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* vanished */
		names[n].name = strdup(de->d_name);
		if (!names[n].name) {
			r = -ENOMEM;
			break;
		}
		n++;
	}
	if (n)
		qsort(names, n, sizeof(*names), name_cmp);
	for (size_t i = 0; i < n && !w->stop; i++)
		if (S_ISREG(names[i].st.st_mode) || S_ISLNK(names[i].st.st_mode))
			visit_file(w, dirfd(d), &names[i]);
	for (size_t i = 0; i < n && !w->stop; i++)
		if (S_ISDIR(names[i].st.st_mode))
			visit_dir(w, dirfd(d), names[i].name);
	for (size_t i = 0; i < n; i++)
		free(names[i].name);
	free(names);
	if (r == -ENOMEM)
		w->s->truncated = w->stop = true;
	return r == -ENOMEM ? 0 : r;
}

int snapshot_take(int workspace_fd, int outputs_fd, size_t max_files, const struct snapshot *known,
		  snapshot_progress progress, snapshot_keep keep, void *arg, struct snapshot *out)
{
	const struct {
		int fd;
		const char *name;
	} roots[] = {
		{ workspace_fd, "workspace" },
		{ outputs_fd, "outputs" },
	};
	struct walk w = {
		.s = out, .max = max_files, .progress = progress, .keep = keep, .arg = arg
	};
	w.settled_before = realtime_ns() - SNAPSHOT_SETTLE_NS;
	memset(out, 0, sizeof(*out));
	out->max_files = max_files;
	_cleanup_(freep) const struct snap_file **index = NULL;
	if (known && known->n) {
		if (!(index = malloc(known->n * sizeof(*index))))
			return -ENOMEM;
		for (size_t i = 0; i < known->n; i++)
			if (!known->files[i].absent)
				index[w.nknown++] = &known->files[i];
		qsort(index, w.nknown, sizeof(*index), known_cmp);
		w.known = index;
	}
	for (size_t i = 0; i < COUNT(roots) && !w.stop; i++) {
		if (roots[i].fd < 0)
			continue;
		snprintf(w.path, sizeof(w.path), "/mnt/user-data/%s", roots[i].name);
		int r = walk_dir(&w, roots[i].fd);
		if (r == 0 && w.error)
			r = w.error < 0 ? w.error : -EIO;
		if (r < 0) {
			snapshot_free(out);
			return r;
		}
	}
	return 0;
}

struct snap_file *snapshot_append(struct snapshot *s)
{
	if (array_grow(s->files, s->n, s->cap) < 0)
		return NULL;
	memset(&s->files[s->n], 0, sizeof(s->files[0]));
	return &s->files[s->n++];
}

void snapshot_free(struct snapshot *s)
{
	for (size_t i = 0; i < s->n; i++)
		snap_file_free(&s->files[i]);
	free(s->files);
	memset(s, 0, sizeof(*s));
}
