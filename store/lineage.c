/* lineage.c - see lineage.h. A tree of the names the changes reached: a
 * node per file or directory, found by its parent's node and its name in
 * one hash table (open addressing, at most half full, never an entry
 * removed). A change of a name points an entry at another node: a
 * directory renamed takes what is below it along without a look at any of
 * it. */
#include "lineage.h"
#include "common/array.h"
#include "common/cleanup.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct node {
	char *origin;  /* its name when the run began; NULL: made during it */
	bool implicit; /* the names below it that no change reached are
			* their origin's (a directory as it was) */
};

struct slot {
	char *name; /* NULL: free */
	size_t parent, node;
};

struct lineage {
	struct node *nodes; /* [0]: the root, "" */
	size_t n, cap;
	struct slot *slots;
	size_t nslots, used;
	lineage_exists exists;
	void *arg;
};

static size_t slot_hash(size_t parent, const char *name, size_t len)
{
	uint64_t h = 14695981039346656037ull ^ parent;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)name[i]) * 1099511628211ull;
	return (size_t)h;
}

/* The slot of PARENT's entry NAME (LEN bytes), or the free one it would
 * take. */
static struct slot *slot_of(const struct lineage *l, size_t parent, const char *name, size_t len)
{
	for (size_t k = slot_hash(parent, name, len) & (l->nslots - 1);;
	     k = (k + 1) & (l->nslots - 1)) {
		struct slot *s = &l->slots[k];
		if (!s->name ||
		    (s->parent == parent && !strncmp(s->name, name, len) && !s->name[len]))
			return s;
	}
}

static int add_node(struct lineage *l, char *origin, bool implicit, size_t *at)
{
	if (array_grow(l->nodes, l->n, l->cap) < 0) {
		free(origin);
		return -ENOMEM;
	}
	l->nodes[l->n] = (struct node){ origin, implicit };
	*at = l->n++;
	return 0;
}

static int grow_slots(struct lineage *l)
{
	size_t n = l->nslots ? 2 * l->nslots : 64;
	struct slot *old = l->slots, *v = calloc(n, sizeof(*v));

	if (!v)
		return -ENOMEM;
	l->slots = v;
	l->nslots = n;
	for (size_t k = 0; k < n / 2 && old; k++)
		if (old[k].name)
			*slot_of(l, old[k].parent, old[k].name, strlen(old[k].name)) = old[k];
	free(old);
	return 0;
}

/* The node of PARENT's entry NAME (LEN bytes), made as the changes left
 * it if there is none yet: what it was when the run began, below a
 * directory as it was, else new. */
static int child(struct lineage *l, size_t parent, const char *name, size_t len, size_t *at)
{
	if (2 * (l->used + 1) > l->nslots && grow_slots(l) < 0)
		return -ENOMEM;
	struct slot *s = slot_of(l, parent, name, len);
	if (s->name) {
		*at = s->node;
		return 0;
	}
	const struct node *p = &l->nodes[parent];
	char *origin = NULL;
	if (p->implicit && asprintf(&origin, "%s/%.*s", p->origin, (int)len, name) < 0)
		return -ENOMEM;
	if (!(s->name = strndup(name, len))) {
		free(origin);
		return -ENOMEM;
	}
	s->parent = parent;
	l->used++;
	int r = add_node(l, origin, p->implicit, &s->node);
	*at = s->node;
	return r;
}

/* Makes the entries that name PATH and the directories above it. */
static int make_path(struct lineage *l, const char *path)
{
	size_t at = 0;

	for (const char *p = path + strspn(path, "/"); *p; p += strspn(p, "/")) {
		size_t len = strcspn(p, "/");
		int r = child(l, at, p, len, &at);
		if (r < 0)
			return r;
		p += len;
	}
	return 0;
}

/* The entry that names PATH, made already (make_path()); NULL for the
 * root. */
static struct slot *entry(const struct lineage *l, const char *path)
{
	struct slot *s = NULL;
	size_t at = 0;

	for (const char *p = path + strspn(path, "/"); *p; p += strspn(p, "/")) {
		size_t len = strcspn(p, "/");
		s = slot_of(l, at, p, len);
		at = s->node;
		p += len;
	}
	return s;
}

struct lineage *lineage_new(lineage_exists exists, void *arg)
{
	struct lineage *l = calloc(1, sizeof(*l));
	size_t root;
	char *origin = strdup("");

	if (l) {
		l->exists = exists;
		l->arg = arg;
	}
	if (l && origin && add_node(l, origin, true, &root) == 0)
		return l;
	if (!l)
		free(origin);
	lineage_free(l);
	return NULL;
}

void lineage_free(struct lineage *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		free(l->nodes[i].origin);
	for (size_t k = 0; k < l->nslots; k++)
		free(l->slots[k].name);
	free(l->nodes);
	free(l->slots);
	free(l);
}

/* Whether N is what a name held when the run began: one that no change
 * reached below a directory as it was may have held nothing. */
static bool began_with(const struct lineage *l, const struct node *n)
{
	return n->origin && (!l->exists || l->exists(l->arg, n->origin));
}

int lineage_rename(struct lineage *l, const char *from, const char *to)
{
	size_t freed;
	int r;

	if (!strcmp(from, to))
		return 0;
	if ((r = make_path(l, to)) < 0 || (r = make_path(l, from)) < 0 ||
	    (r = add_node(l, NULL, false, &freed)) < 0)
		return r;
	struct slot *s = entry(l, from), *t = entry(l, to);
	if (!s || !t)
		return 0; /* the root: not a rename the view makes */
	struct node *moved = &l->nodes[s->node], *old = &l->nodes[t->node];
	if (!began_with(l, moved) && began_with(l, old)) {
		/* A save: the file made goes on as the one it replaces. */
		free(moved->origin);
		moved->origin = TAKE_PTR(old->origin);
	}
	t->node = s->node;
	s->node = freed;
	return 0;
}

int lineage_exchange(struct lineage *l, const char *a, const char *b)
{
	int r;

	if ((r = make_path(l, a)) < 0 || (r = make_path(l, b)) < 0)
		return r;
	struct slot *s = entry(l, a), *t = entry(l, b);
	if (s && t) {
		size_t x = s->node;
		s->node = t->node;
		t->node = x;
	}
	return 0;
}

int lineage_new_at(struct lineage *l, const char *path)
{
	size_t made;
	int r;

	if ((r = make_path(l, path)) < 0 || (r = add_node(l, NULL, false, &made)) < 0)
		return r;
	struct slot *s = entry(l, path);
	if (s)
		s->node = made;
	return 0;
}

int lineage_origin(const struct lineage *l, const char *path, char out[PATH_MAX])
{
	const char *rest = path + strspn(path, "/");
	size_t at = 0;

	/* Down the entries the changes made; REST: the names below AT. */
	while (*rest && l->nslots) {
		size_t len = strcspn(rest, "/");
		const struct slot *s = slot_of(l, at, rest, len);
		if (!s->name)
			break; /* no change reached it: below AT as AT is */
		at = s->node;
		rest += len;
		rest += strspn(rest, "/");
	}
	const struct node *n = &l->nodes[at];
	if (!n->origin || (*rest && !n->implicit))
		return 0;
	return snprintf(out, PATH_MAX, "%s%s%s", n->origin, *rest ? "/" : "", rest) < PATH_MAX
		       ? 1
		       : -ENAMETOOLONG;
}
