/* report.c - see report.h. */
#include "report.h"

#include <stddef.h>
#include <string.h>

static json_t *sha_or_null(const struct snap_file *f)
{
	char hex[65];

	if (!f || !f->hashed)
		return json_null();
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", f->sha256[i]);
	return json_string(hex);
}

static json_t *size_or_null(const struct snap_file *f)
{
	return f ? json_integer(f->size) : json_null();
}

static json_t *target_or_null(const struct snap_file *f)
{
	return f && f->symlink ? json_string(f->target) : json_null();
}

static bool either(const struct change *c, size_t offset)
{
	const struct snap_file *side[2] = { c->before, c->after };

	for (int i = 0; i < 2; i++)
		if (side[i] && *(const bool *)((const char *)side[i] + offset))
			return true;
	return false;
}

static json_t *file_json(const struct change *c)
{
	return json_pack("{s:s, s:s, s:s, s:b, s:b, s:o, s:o, s:o, s:o, s:s, s:b,"
			 " s:o, s:i, s:i, s:b, s:o, s:o}",
			 "path", c->path, "root", c->root, "status", c->status,
			 "binary", either(c, offsetof(struct snap_file, binary)),
			 "sensitive", either(c, offsetof(struct snap_file, sensitive)),
			 "size_before", size_or_null(c->before),
			 "size_after", size_or_null(c->after),
			 "sha256_before", sha_or_null(c->before),
			 "sha256_after", sha_or_null(c->after),
			 "diff", c->diff ? c->diff : "",
			 "diff_truncated", c->diff_truncated,
			 "diff_unavailable_reason",
			 c->unavailable ? json_string(c->unavailable) : json_null(),
			 "additions", c->additions, "deletions", c->deletions,
			 "symlink", either(c, offsetof(struct snap_file, symlink)),
			 "symlink_target_before", target_or_null(c->before),
			 "symlink_target_after", target_or_null(c->after));
}

json_t *report_summary(const struct summary *s, int64_t run)
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
	return json_pack("{s:i, s:I, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:b}, s:o, s:I,"
			 " s:{s:I, s:I, s:I, s:I}}",
			 "version", 1, "run", (json_int_t)run, "summary",
			 "created", (json_int_t)s->created,
			 "modified", (json_int_t)s->modified,
			 "deleted", (json_int_t)s->deleted,
			 "symlink_created", (json_int_t)s->symlink_created,
			 "additions", (json_int_t)s->additions,
			 "deletions", (json_int_t)s->deletions,
			 "truncated", s->truncated, "files", files,
			 "files_total", (json_int_t)s->n, "limits",
			 "max_files", (json_int_t)s->limits.max_files,
			 "max_scanned_files", (json_int_t)s->limits.max_scanned_files,
			 "max_file_bytes_for_diff", (json_int_t)s->limits.max_file_bytes_for_diff,
			 "max_total_diff_bytes", (json_int_t)s->limits.max_total_diff_bytes);
}

json_t *report_receipt(const struct summary *s, int64_t run, bool pre_truncated)
{
	json_t *outputs = json_array();

	for (size_t i = 0; outputs && i < s->n; i++) {
		const struct change *c = &s->changes[i];
		bool produced = !strcmp(c->root, "outputs") && c->after &&
				!c->after->symlink &&
				(!strcmp(c->status, "created") || !strcmp(c->status, "modified"));
		if (produced && json_array_append_new(outputs, json_string(c->path)) < 0) {
			json_decref(outputs);
			return NULL;
		}
	}
	if (!outputs)
		return NULL;
	if (pre_truncated)
		return json_pack("{s:I, s:o, s:s}", "run", (json_int_t)run,
				 "produced_outputs", outputs,
				 "verification_skipped", "truncated_pre_run_snapshot");
	return json_pack("{s:I, s:o, s:s}", "run", (json_int_t)run,
			 "produced_outputs", outputs, "verdict",
			 json_array_size(outputs) ? "delivered" : "no_outputs");
}

static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

static long long num(const json_t *o, const char *key)
{
	return (long long)json_integer_value(json_object_get(o, key));
}

/* One line of a diff, colored like git's. */
static void print_diff_line(FILE *out, const char *line, size_t len, bool color)
{
	const char *on = !color ? "" : line[0] == '+' ? "\033[32m" : line[0] == '-' ? "\033[31m"
			 : line[0] == '@' ? "\033[36m" : "";
	bool header = len >= 3 && (!strncmp(line, "---", 3) || !strncmp(line, "+++", 3));

	if (color && header)
		on = "\033[1m";
	fprintf(out, "%s%.*s%s\n", on, (int)len, line, *on ? "\033[0m" : "");
}

void report_print(FILE *out, const json_t *p, const char *who, bool color)
{
	const json_t *sum = json_object_get(p, "summary");
	const json_t *files = json_object_get(p, "files"), *f;
	long long total = num(p, "files_total");
	size_t i, width = 0;

	fprintf(out, "run %lld of %s: %lld file%s changed (%lld created, %lld modified, %lld deleted, %lld symlinks), %lld insertion%s(+), %lld deletion%s(-)%s\n",
		num(p, "run"), who, total, total == 1 ? "" : "s", num(sum, "created"),
		num(sum, "modified"), num(sum, "deleted"), num(sum, "symlink_created"),
		num(sum, "additions"), num(sum, "additions") == 1 ? "" : "s",
		num(sum, "deletions"), num(sum, "deletions") == 1 ? "" : "s",
		json_is_true(json_object_get(sum, "truncated"))
			? "\n  (truncated: a limit was reached, see docs/changes.md)" : "");
	json_array_foreach(files, i, f)
		if (strlen(str(f, "path")) > width)
			width = strlen(str(f, "path"));
	json_array_foreach(files, i, f) {
		const char *why = str(f, "diff_unavailable_reason");
		long long add = num(f, "additions"), del = num(f, "deletions");

		fprintf(out, " %-*s | %-15s ", (int)width, str(f, "path"), str(f, "status"));
		if (*why && strcmp(why, "truncated"))
			fprintf(out, "%s: metadata only\n", why);
		else {
			fprintf(out, "%lld ", add + del);
			for (long long k = 0; k < add && k < 40; k++)
				fputs(color ? "\033[32m+\033[0m" : "+", out);
			for (long long k = 0; k < del && k < 40; k++)
				fputs(color ? "\033[31m-\033[0m" : "-", out);
			fputs(*why ? " (diff over the budget)\n" : "\n", out);
		}
	}
	if ((long long)json_array_size(files) < total)
		fprintf(out, " ... and %lld more\n", total - (long long)json_array_size(files));
	json_array_foreach(files, i, f) {
		const char *d = str(f, "diff");

		if (!*d)
			continue;
		fputc('\n', out);
		for (const char *l = d, *e; *l; l = *e ? e + 1 : e) {
			e = strchr(l, '\n');
			if (!e)
				e = l + strlen(l);
			print_diff_line(out, l, (size_t)(e - l), color);
		}
	}
}
