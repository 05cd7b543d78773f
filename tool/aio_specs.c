/* aio_specs.c - the AIO set's tools as a client lists them (tool.h,
 * tool_aio_specs[]): the "All-in-One" sandbox API's file endpoints, their
 * request bodies and answers' data written as JSON Schema (aio.h,
 * docs/tools.md). */
#include "aio.h"
#include "tool_int.h"

#define OBJECT(props, required) \
	"{\"type\": \"object\", \"properties\": {" props "}, \"required\": [" required "]}"
#define STRING "{\"type\": \"string\"}"
#define STRINGS "{\"type\": \"array\", \"items\": {\"type\": \"string\"}}"
#define BOOLEAN "{\"type\": \"boolean\"}"
#define INTEGER "{\"type\": \"integer\"}"
#define OR_NULL(type) "{\"type\": [\"" type "\", \"null\"]}"

static const char read_in[] = OBJECT("\"file\": " STRING ", \"start_line\": " INTEGER
				     ", \"end_line\": " INTEGER ", \"sudo\": " BOOLEAN,
				     "\"file\"");
static const char read_out[] = OBJECT("\"content\": " STRING ", \"file\": " STRING,
				      "\"content\", \"file\"");

static const char write_in[] =
	OBJECT("\"file\": " STRING ", \"content\": " STRING ","
	       "\"encoding\": {\"type\": \"string\", \"enum\": [\"utf-8\", \"base64\", \"raw\"], "
	       "\"default\": \"utf-8\"},"
	       "\"append\": " BOOLEAN ", \"leading_newline\": " BOOLEAN
	       ", \"trailing_newline\": " BOOLEAN ", \"sudo\": " BOOLEAN,
	       "\"file\", \"content\"");
static const char write_out[] = OBJECT("\"file\": " STRING ", \"bytes_written\": " INTEGER,
				       "\"file\", \"bytes_written\"");

static const char find_in[] = OBJECT("\"path\": " STRING ", \"glob\": " STRING,
				     "\"path\", \"glob\"");
static const char find_out[] = OBJECT("\"path\": " STRING ", \"files\": " STRINGS,
				      "\"path\", \"files\"");

static const char list_in[] = OBJECT(
	"\"path\": " STRING ", \"recursive\": " BOOLEAN
	", \"show_hidden\": {\"type\": \"boolean\", \"default\": true}, \"file_types\": " STRINGS
	", \"max_depth\": {\"type\": \"integer\", \"minimum\": 1},"
	"\"include_size\": {\"type\": \"boolean\", \"default\": true}, "
	"\"include_permissions\": " BOOLEAN ","
	"\"sort_by\": {\"type\": \"string\", \"enum\": [\"name\", \"size\", \"modified\", "
	"\"type\"], \"default\": \"name\"}, \"sort_desc\": " BOOLEAN,
	"\"path\"");
static const char list_out[] = OBJECT(
	"\"path\": " STRING ", \"files\": {\"type\": \"array\", \"items\": " OBJECT(
		"\"name\": " STRING ", \"path\": " STRING ", \"is_directory\": " BOOLEAN
		", \"size\": " OR_NULL("integer") ", \"modified_time\": " OR_NULL(
			"string") ", \"permissions\": " OR_NULL("string") ", \"extension\": " OR_NULL("string"),
		"\"name\", \"path\", \"is_directory\"") "},"
							"\"total_count\": " INTEGER
							", \"directory_count\": " INTEGER
							", \"file_count\": " INTEGER,
	"\"path\", \"files\", \"total_count\", \"directory_count\", \"file_count\"");

static const char grep_in[] = OBJECT(
	"\"path\": " STRING ", \"pattern\": " STRING ", \"include\": " STRINGS
	", \"exclude\": " STRINGS ", \"case_insensitive\": " BOOLEAN ", \"fixed_strings\": " BOOLEAN
	", \"context_before\": {\"type\": \"integer\", \"minimum\": 0, \"maximum\": 20}"
	", \"context_after\": {\"type\": \"integer\", \"minimum\": 0, \"maximum\": 20}"
	", \"max_results\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 10000, "
	"\"default\": 500}"
	", \"max_file_size\": {\"type\": \"string\", \"default\": \"1M\"}, \"multiline\": " BOOLEAN
	", \"offset\": {\"type\": \"integer\", \"minimum\": 0}"
	", \"recursive\": {\"type\": \"boolean\", \"default\": true}",
	"\"path\", \"pattern\"");
static const char grep_out[] = OBJECT(
	"\"path\": " STRING ", \"pattern\": " STRING
	", \"matches\": {\"type\": \"array\", \"items\": " OBJECT(
		"\"file\": " STRING ", \"line_number\": " INTEGER ", \"line_content\": " STRING
		", \"context_before\": " STRINGS ", \"context_after\": " STRINGS,
		"\"file\", \"line_number\", \"line_content\"") "},"
							       "\"match_count\": " INTEGER
							       ", \"files_searched\": " INTEGER
							       ", \"files_matched\": " INTEGER
							       ", \"truncated\": " BOOLEAN,
	"\"path\", \"pattern\", \"matches\", \"match_count\", \"files_searched\", "
	"\"files_matched\", \"truncated\"");

/* name, description, in, out, read_only, destructive, idempotent, run,
 * title */
const struct tool_spec tool_aio_specs[] = {
	{ "file_read",
	  "Read a file (POST /v1/file/read): its text, or the lines [start_line, end_line) "
	  "(0-based, end exclusive, negative from the end).",
	  read_in, read_out, true, false, true, tool_aio_file_read, NULL },
	{ "file_write",
	  "Write a file (POST /v1/file/write): text (utf-8, raw) or base64-decoded bytes, "
	  "replacing it or appended. An existing file must have been read in its current "
	  "version first (read-before-write).",
	  write_in, write_out, false, true, false, tool_aio_file_write, NULL },
	{ "file_find", "Find the files under a directory whose path matches a glob.", find_in,
	  find_out, true, false, true, tool_aio_file_find, NULL },
	{ "file_list", "List a directory, or (recursive) what is below it.", list_in, list_out,
	  true, false, true, tool_aio_file_list, NULL },
	{ "file_grep",
	  "Search the files under a directory (or a file) for the lines that match a pattern.",
	  grep_in, grep_out, true, false, true, tool_aio_file_grep, NULL },
};

const size_t tool_aio_nspecs = sizeof(tool_aio_specs) / sizeof(tool_aio_specs[0]);
