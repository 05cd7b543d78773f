/* documents.c - a run's summary and receipt as documents (documents.h). */
#include "documents.h"
#include "common/hash.h"
#include "common/utf8.h"
#include "store/receipt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A string from the file system (a name, a link's target, a diff naming
 * a file, a command name) as JSON: bytes that are not UTF-8 become U+FFFD,
 * since JSON cannot carry them (jansson refuses them outright). */
static json_t *text_json(const char *s, size_t n)
{
	json_t *j = json_stringn(s, n);
	char *clean;

	if (j)
		return j;
	clean = utf8_clean(s, n, NULL);
	j = clean ? json_string(clean) : NULL;
	free(clean);
	return j;
}

static json_t *str_json(const char *s)
{
	return s ? text_json(s, strlen(s)) : json_null();
}

static json_t *sha_or_null(const struct snap_file *f)
{
	char hex[65];

	if (!f || !f->hashed)
		return json_null();
	return json_string(sha256_hex(f->sha256, hex));
}

static json_t *size_or_null(const struct snap_file *f)
{
	return f ? json_integer(f->size) : json_null();
}

static json_t *target_or_null(const struct snap_file *f)
{
	return f && f->symlink ? str_json(f->target) : json_null();
}

static json_t *reason_or_null(const struct summary_diff *d)
{
	return d->unavailable ? json_string(d->unavailable) : json_null();
}

static json_t *changed_by(const struct change *c)
{
	return c->by_pid ? json_pack("{s:i, s:o}", "pid", (int)c->by_pid, "command",
				     str_json(c->by_comm))
			 : json_null();
}

/* What is ours about a change: who made it, the rename it is half of
 * (with the diff from the old content, on the created half), a content
 * that could not be read back. */
static json_t *file_sbx(const struct change *c)
{
	json_t *o = json_pack("{s:o}", "changed_by", changed_by(c));
	const struct summary_diff *m = &c->moved;
	int r = o ? 0 : -1;

	if (r == 0 && c->renamed_to)
		r = json_object_set_new(o, "renamed_to", str_json(c->renamed_to));
	if (r == 0 && c->renamed_from)
		r = json_object_set_new(o, "renamed_from", str_json(c->renamed_from));
	if (r == 0 && c->renamed_from)
		r = json_object_set_new(o, "rename",
					json_pack("{s:o, s:b, s:o, s:i, s:i, s:b}", "diff",
						  text_json(m->text, m->len), "diff_truncated",
						  m->truncated, "diff_unavailable_reason",
						  reason_or_null(m), "additions", m->additions,
						  "deletions", m->deletions, "content_unavailable",
						  m->content_missing));
	if (r == 0 && c->diff.content_missing)
		r = json_object_set_new(o, "content_unavailable", json_true());
	if (r < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* The reference's entry (its flags from the version after, else the one
 * before, as it takes them), then "sbx". */
static json_t *file_json(const struct change *c)
{
	const struct snap_file *f = c->after ? c->after : c->before;

	return json_pack("{s:o, s:s, s:s, s:b, s:b, s:o, s:o, s:o, s:o, s:o, s:b,"
			 " s:o, s:i, s:i, s:b, s:o, s:o, s:o}",
			 "path", str_json(c->path), "root", c->root, "status", c->status, "binary",
			 f->binary, "sensitive", f->sensitive, "size_before",
			 size_or_null(c->before), "size_after", size_or_null(c->after),
			 "sha256_before", sha_or_null(c->before), "sha256_after",
			 sha_or_null(c->after), "diff", text_json(c->diff.text, c->diff.len),
			 "diff_truncated", c->diff.truncated, "diff_unavailable_reason",
			 reason_or_null(&c->diff), "additions", c->diff.additions, "deletions",
			 c->diff.deletions, "symlink", f->symlink, "symlink_target_before",
			 target_or_null(c->before), "symlink_target_after",
			 target_or_null(c->after), "sbx", file_sbx(c));
}

/* The changes past the listed ones, each [path, status, additions,
 * deletions, command or null], for the page (run/page.h) to name: at
 * most RUN_UNLISTED_MAX. NULL without memory. */
static json_t *unlisted_json(const struct summary *s)
{
	json_t *a = json_array();

	for (size_t i = s->listed; a && i < s->n && i - s->listed < RUN_UNLISTED_MAX; i++) {
		const struct change *c = &s->changes[i];
		json_t *e = json_pack("[o, s, i, i, o]", str_json(c->path), c->status,
				      c->diff.additions, c->diff.deletions,
				      c->by_pid ? str_json(c->by_comm) : json_null());
		if (!e || json_array_append_new(a, e) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

json_t *report_summary(const struct summary *s, int64_t run, size_t end_scan_limit)
{
	json_t *files = json_array();

	for (size_t i = 0; files && i < s->listed; i++) {
		json_t *f = file_json(&s->changes[i]);
		if (!f || json_array_append_new(files, f) < 0) {
			json_decref(files);
			return NULL;
		}
	}
	if (!files)
		return NULL;
	json_t *doc =
		json_pack("{s:i, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:b}, s:o,"
			  " s:{s:I, s:I, s:I, s:I}, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:I}}",
			  "version", 1, "summary", "created", (json_int_t)s->created, "modified",
			  (json_int_t)s->modified, "deleted", (json_int_t)s->deleted,
			  "symlink_created", (json_int_t)s->symlink_created, "additions",
			  (json_int_t)s->additions, "deletions", (json_int_t)s->deletions,
			  "truncated", s->truncated, "files", files, "limits", "max_files",
			  (json_int_t)s->limits.max_files, "max_scanned_files",
			  (json_int_t)s->limits.max_scanned_files, "max_file_bytes_for_diff",
			  (json_int_t)s->limits.max_file_bytes_for_diff, "max_total_diff_bytes",
			  (json_int_t)s->limits.max_total_diff_bytes, "sbx", "run", (json_int_t)run,
			  "files_total", (json_int_t)s->n, "renamed", (json_int_t)s->renamed,
			  "renamed_replaced", (json_int_t)s->renamed_replaced, "renamed_modified",
			  (json_int_t)s->renamed_modified, "renamed_symlink_created",
			  (json_int_t)s->renamed_symlink_created, "complete", s->complete,
			  "end_scan_limit", (json_int_t)end_scan_limit);
	if (doc && s->n > s->listed &&
	    json_object_set_new(json_object_get(doc, "sbx"), RUN_UNLISTED, unlisted_json(s)) < 0) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

json_t *report_receipt_new(void)
{
	return json_pack("{s:i, s:[], s:{}}", "presented", 0, "paths", "by_tool");
}

bool report_has_path(const json_t *a, const char *s)
{
	size_t i;
	const json_t *v;

	json_array_foreach (a, i, v)
		if (!strcmp(json_string_value(v), s))
			return true;
	return false;
}

/* Appends PATH to the array A unless it is there already (order of
 * first presentation, as the reference's artifact list merges): 1 if it
 * was added. */
static int append_once(json_t *a, const char *path)
{
	if (report_has_path(a, path))
		return 0;
	return json_array_append_new(a, json_string(path)) < 0 ? -ENOMEM : 1;
}

int report_receipt_add(void *arg, const char *tool, const char *path)
{
	json_t *r = arg, *paths = json_object_get(r, "paths");
	json_t *by_tool = json_object_get(r, "by_tool"), *mine = json_object_get(by_tool, tool);
	int added;

	if (!mine && json_object_set_new(by_tool, tool, mine = json_array()) < 0)
		return -ENOMEM;
	if (append_once(mine, path) < 0 || (added = append_once(paths, path)) < 0)
		return -ENOMEM;
	if (added && json_object_set_new(r, "presented",
					 json_integer((json_int_t)json_array_size(paths))) < 0)
		return -ENOMEM;
	return 0;
}

/* Created or modified regular files under outputs, in path order. */
static json_t *produced_outputs(const struct summary *s)
{
	json_t *out = json_array();

	for (size_t i = 0; out && i < s->n; i++) {
		const struct change *c = &s->changes[i];
		bool produced = !strcmp(c->root, "outputs") && c->after && !c->after->symlink &&
				(!strcmp(c->status, "created") || !strcmp(c->status, "modified"));
		if (produced && json_array_append_new(out, str_json(c->path)) < 0) {
			json_decref(out);
			return NULL;
		}
	}
	return out;
}

int report_receipt_verify(json_t *r, const struct summary *s, bool pre_truncated)
{
	/* Outputs the pre-run scan did not see cannot be told from new ones:
	 * a verdict either way could be false (docs/changes.md). */
	if (pre_truncated)
		return json_object_set_new(r, "verification_skipped",
					   json_string("truncated_pre_run_snapshot")) < 0
			       ? -ENOMEM
			       : 0;
	json_t *produced = produced_outputs(s);
	if (!produced)
		return -ENOMEM;
	if (json_array_size(produced) == 0) {
		json_decref(produced);
		return 0;
	}
	/* Only the reference's tool counts: other tools' paths are listed,
	 * never verified. */
	json_t *presented = json_object_get(json_object_get(r, "by_tool"), RECEIPT_TOOL_DEFAULT);
	json_t *matched = json_array(), *p, *q;
	size_t i, k;

	json_array_foreach (produced, i, p) {
		bool covered = false;
		json_array_foreach (presented, k, q)
			covered = covered ||
				  receipt_covers(json_string_value(q), json_string_value(p));
		if (covered && matched)
			json_array_append(matched, p);
	}
	bool satisfied = json_array_size(matched) > 0;
	json_t *v = json_pack("{s:s, s:s}", "source", "outputs_changed", "requirement",
			      "present_files_matches_produced_output");
	int rc = json_object_set_new(r, "verification", v);
	rc |= json_object_set_new(r, "produced_paths", produced);
	rc |= json_object_set_new(r, "presented_paths",
				  presented ? json_copy(presented) : json_array());
	rc |= json_object_set_new(r, "matched_paths", matched);
	rc |= json_object_set_new(r, "stage",
				  json_string(satisfied			   ? "presented"
					      : json_array_size(presented) ? "mismatched"
									   : "not_started"));
	rc |= json_object_set_new(r, "satisfied", json_boolean(satisfied));
	return rc ? -ENOMEM : 0;
}

bool report_receipt_incomplete(const json_t *r)
{
	return json_array_size(json_object_get(r, "produced_paths")) > 0 &&
	       !json_is_true(json_object_get(r, "satisfied"));
}

json_t *run_document(const struct store_run *r, json_t *p)
{
	/* What is recorded for the page only is not the reference's. */
	json_object_del(json_object_get(p, "sbx"), RUN_UNLISTED);
	if (p)
		return json_object_set_new(p, "available", json_true()) ? NULL : json_incref(p);
	return json_pack("{s:b, s:i, s:{s:i, s:i, s:i, s:i, s:i, s:i, s:b}, s:[], s:{}, s:{s:I}}",
			 "available", 0, "version", 1, "summary", "created", 0, "modified", 0,
			 "deleted", 0, "symlink_created", 0, "additions", 0, "deletions", 0,
			 "truncated", 0, "files", "limits", "sbx", "run", (json_int_t)r->id);
}
