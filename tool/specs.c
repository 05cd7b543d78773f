/* specs.c - the tools as a client lists them (tool.h, struct tool_spec):
 * the reference's descriptions and arguments (its docstrings, in
 * sandbox/tools.py), as JSON Schema, with what this engine adds said
 * where it says it (str_replace's unique match). */
#include "tool_int.h"

#define DESCRIPTION_ARG                                                              \
	"\"description\": {\"type\": \"string\", \"description\": \"Optional short " \
	"explanation of this call shown in the UI.\"}"

#define PATH_ARG(what)                                                                       \
	"\"path\": {\"type\": \"string\", \"description\": \"The **absolute** path to " what \
	" (under /mnt/user-data/, /mnt/skills/, /mnt/acp-workspace/ or a configured mount).\"}"

#define OBJECT(props, required) \
	"{\"type\": \"object\", \"properties\": {" props "}, \"required\": [" required "]}"

static const char ls_in[] = OBJECT(PATH_ARG("the directory to list") "," DESCRIPTION_ARG,
				   "\"path\"");

static const char ls_out[] =
	OBJECT("\"entries\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}},"
	       "\"truncated\": {\"type\": \"boolean\"}",
	       "\"entries\", \"truncated\"");

static const char read_in[] = OBJECT(
	PATH_ARG(
		"the file to read") "," DESCRIPTION_ARG ","
				    "\"start_line\": {\"type\": \"integer\", \"description\": \"Optional starting line number "
				    "(1-indexed, inclusive). Omit to start at the first line.\"},"
				    "\"end_line\": {\"type\": \"integer\", \"description\": \"Optional ending line number "
				    "(1-indexed, inclusive). Omit to read through the last line.\"}",
	"\"path\"");

static const char read_out[] = OBJECT(
	"\"content\": {\"type\": \"string\"},"
	"\"start_line\": {\"type\": \"integer\", \"description\": \"The first line in content "
	"(0: none).\"},"
	"\"end_line\": {\"type\": \"integer\", \"description\": \"The last line read (0: none); "
	"when truncated, content stops before its end.\"},"
	"\"truncated\": {\"type\": \"boolean\"}",
	"\"content\", \"start_line\", \"end_line\", \"truncated\"");

static const char write_in[] = OBJECT(
	PATH_ARG(
		"the file to write to") ","
					"\"content\": {\"type\": \"string\", \"description\": \"The content to write to the "
					"file.\"}," DESCRIPTION_ARG ","
					"\"append\": {\"type\": \"boolean\", \"default\": false, \"description\": \"Whether to "
					"append content to the end of the file instead of overwriting it. Defaults to false.\"}",
	"\"path\", \"content\"");

static const char replace_in[] = OBJECT(
	PATH_ARG(
		"the file to replace the substring in") ","
							"\"old_str\": {\"type\": \"string\", \"description\": \"The substring to replace.\"},"
							"\"new_str\": {\"type\": \"string\", \"description\": \"The new substring.\"}," DESCRIPTION_ARG
							","
							"\"replace_all\": {\"type\": \"boolean\", \"default\": false, \"description\": \"Whether "
							"to replace all occurrences of the substring. If false, it must occur exactly once. "
							"Default is false.\"}",
	"\"path\", \"old_str\", \"new_str\"");

static const char glob_in[] = OBJECT(
	"\"pattern\": {\"type\": \"string\", \"description\": \"The glob pattern to match "
	"relative to the root path, for example `**/*.py`.\"}," PATH_ARG(
		"root directory to search "
		"under") "," DESCRIPTION_ARG ","
			 "\"include_dirs\": {\"type\": \"boolean\", \"default\": false, \"description\": \"Whether "
			 "matching directories should also be returned. Default is false.\"},"
			 "\"max_results\": {\"type\": \"integer\", \"default\": 200, \"description\": \"Maximum "
			 "number of paths to return (at most 1000). Default is 200.\"}",
	"\"pattern\", \"path\"");

static const char glob_out[] =
	OBJECT("\"root\": {\"type\": \"string\"},"
	       "\"paths\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}},"
	       "\"truncated\": {\"type\": \"boolean\"}",
	       "\"root\", \"paths\", \"truncated\"");

static const char grep_in[] = OBJECT(
	"\"pattern\": {\"type\": \"string\", \"description\": \"The string or regex pattern to "
	"search for.\"}," PATH_ARG(
		"file or root directory to search") "," DESCRIPTION_ARG ","
						    "\"glob\": {\"type\": [\"string\", \"null\"], \"description\": \"Optional glob filter for "
						    "candidate files, for example `**/*.py`.\"},"
						    "\"literal\": {\"type\": \"boolean\", \"default\": false, \"description\": \"Whether to "
						    "treat `pattern` as a plain string. Default is false.\"},"
						    "\"case_sensitive\": {\"type\": \"boolean\", \"default\": false, \"description\": "
						    "\"Whether matching is case-sensitive. Default is false.\"},"
						    "\"max_results\": {\"type\": \"integer\", \"default\": 100, \"description\": \"Maximum "
						    "number of matching lines to return (at most 500). Default is 100.\"}",
	"\"pattern\", \"path\"");

static const char grep_out[] =
	OBJECT("\"root\": {\"type\": \"string\"},"
	       "\"matches\": {\"type\": \"array\", \"items\": " OBJECT(
		       "\"path\": {\"type\": \"string\"}, \"line\": {\"type\": \"integer\"},"
		       "\"text\": {\"type\": \"string\"}",
		       "\"path\", \"line\", \"text\"") "},"
						       "\"truncated\": {\"type\": \"boolean\"}",
	       "\"root\", \"matches\", \"truncated\"");

#define READ_BEFORE_WRITE                                                                        \
	"READ-BEFORE-WRITE: if the target file already exists, you must have read its CURRENT "  \
	"version with read_file first. Any write invalidates earlier reads, so re-read between " \
	"consecutive modifications - a ranged read of the relevant section is enough. Writes "   \
	"that fail this check are rejected with an error that says what changed."

const struct tool_spec tool_specs[] = {
	{ "ls",
	  "List the contents of a directory up to 2 levels deep in tree format: one absolute path "
	  "a line, directories ending in \"/\".",
	  ls_in, ls_out, true, false, true, tool_ls, NULL },
	{ "read_file",
	  "Read the contents of a text file. Use this to examine source code, configuration "
	  "files, logs, or any text-based file. Long files are cut: use start_line/end_line to "
	  "read a specific range.",
	  read_in, read_out, true, false, true, tool_read_file, NULL },
	{ "write_file",
	  "Write text content to a file. By default this overwrites the target file; set "
	  "append=true to add content to the end without replacing existing content. Missing "
	  "parent directories are made.\n\n" READ_BEFORE_WRITE
	  "\n\nSIZE POLICY: a single non-append write_file call must not exceed 80 KB of UTF-8 "
	  "content. For larger documents, write the first section, then either use `str_replace` "
	  "for further edits or call write_file again with append=true for the next section (the "
	  "cap does not apply to appends).",
	  write_in, NULL, false, true, false, tool_write_file, NULL },
	{ "str_replace",
	  "Replace a substring in a file with another substring. If `replace_all` is false "
	  "(default), the substring to replace must appear exactly once in the file: when it "
	  "appears more than once the call fails with an error naming the count and the file is "
	  "left as it was (add surrounding text to old_str, or set replace_all). An empty old_str "
	  "changes nothing.\n\n" READ_BEFORE_WRITE,
	  replace_in, NULL, false, true, false, tool_str_replace, NULL },
	{ "glob", "Find files or directories that match a glob pattern under a root directory.",
	  glob_in, glob_out, true, false, true, tool_glob, NULL },
	{ "grep",
	  "Search for matching lines inside a text file or files under a root directory. Binary "
	  "files, files over 1 MB and lines over 2,000 characters are skipped.",
	  grep_in, grep_out, true, false, true, tool_grep, NULL },
};

const size_t tool_nspecs = sizeof(tool_specs) / sizeof(tool_specs[0]);
