/* fs.h - the filesystem profile's tools (@modelcontextprotocol/
 * server-filesystem's names, arguments, texts and data: docs/tools.md),
 * over the same view and with the same access as tool_specs[]'s.
 *
 * Paths are virtual, as server-filesystem's are host paths: absolute,
 * or relative to the first allowed directory (/mnt/user-data/workspace),
 * normalised as Node's path.resolve() does, then required to lie in an
 * allowed directory (FS_ALLOWED) before the reference policy
 * (tool/path.h) and the resolution beneath the view (tool/target.h)
 * apply. A path outside is server-filesystem's "Access denied - path
 * outside allowed directories: ..." text. Errors are its texts as well:
 * no "Error: " lead (the SDK puts error.message there).
 */
#ifndef SBX_TOOL_FS_H
#define SBX_TOOL_FS_H

#include "target.h"
#include "tool.h"

/* The allowed directories, as list_allowed_directories lists them. */
extern const char *const fs_allowed[];
extern const size_t fs_nallowed;

/* VPATH made absolute (relative to the first allowed directory) and
 * normalised as path.resolve() does: malloc'd, or NULL. */
char *fs_absolute(const char *vpath);

/* VPATH made absolute and normalised, checked, resolved: 0 with T set
 * (target_free() it); 1 with the tool error in OUT; -ENOMEM. */
int fs_target(const struct tool_view *v, const char *vpath, bool write, bool follow,
	      struct target *t, struct tool_result *out);

/* A tool error for -ERR about VPATH, as Node words it ("ENOENT: no
 * such file or directory, open 'P'"). */
int fs_fail(int err, const char *syscall, const char *vpath, struct tool_result *out);

/* A success: TEXT (taken) as the text and as {"content": TEXT}. */
int fs_ok(struct tool_result *out, char *text);

/* Whether REL (a '/'-separated relative path) matches PATTERN as
 * minimatch(REL, PATTERN, {dot: true}) does for the patterns the tools
 * take: "*", "?", "[...]" within a component, "**" any components. */
bool fs_glob(const char *pattern, const char *rel);

int fs_read_text_file(const struct tool_view *v, json_t *args, struct tool_result *out);
int fs_read_multiple_files(const struct tool_view *v, json_t *args, struct tool_result *out);
int fs_list_directory(const struct tool_view *v, json_t *args, struct tool_result *out);
int fs_list_directory_with_sizes(const struct tool_view *v, json_t *args, struct tool_result *out);
int fs_directory_tree(const struct tool_view *v, json_t *args, struct tool_result *out);
int fs_search_files(const struct tool_view *v, json_t *args, struct tool_result *out);
int fs_get_file_info(const struct tool_view *v, json_t *args, struct tool_result *out);
int fs_list_allowed_directories(const struct tool_view *v, json_t *args, struct tool_result *out);
int fs_write_file(const struct tool_view *v, json_t *args, struct tool_result *out);
int fs_edit_file(const struct tool_view *v, json_t *args, struct tool_result *out);
int fs_create_directory(const struct tool_view *v, json_t *args, struct tool_result *out);
int fs_move_file(const struct tool_view *v, json_t *args, struct tool_result *out);

#endif
