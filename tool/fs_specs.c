/* fs_specs.c - the filesystem profile's tools as a client lists them
 * (tool.h, tool_fs_specs[]): @modelcontextprotocol/server-filesystem's
 * names, titles, descriptions, arguments and annotations, its zod
 * schemas written as JSON Schema, what this server does otherwise said
 * in the description (read-before-write). read_media_file is not among
 * them: docs/tools.md says why. */
#include "fs.h"
#include "tool_int.h"

#define OBJECT(props, required) \
	"{\"type\": \"object\", \"properties\": {" props "}, \"required\": [" required "]}"
#define STRING "{\"type\": \"string\"}"
#define STRINGS "{\"type\": \"array\", \"items\": {\"type\": \"string\"}}"
#define PATH_ONLY OBJECT("\"path\": " STRING, "\"path\"")

/* Every tool returns {"content": its text}. */
static const char text_out[] = OBJECT("\"content\": " STRING, "\"content\"");

static const char read_in[] = OBJECT(
	"\"path\": " STRING ","
	"\"tail\": {\"type\": \"number\", \"description\": \"If provided, returns only the last N "
	"lines of the file\"},"
	"\"head\": {\"type\": \"number\", \"description\": \"If provided, returns only the first N "
	"lines of the file\"}",
	"\"path\"");

static const char read_many_in[] =
	OBJECT("\"paths\": {\"type\": \"array\", \"items\": " STRING ", \"minItems\": 1, "
	       "\"description\": \"Array of file paths to read. Each path must be a string "
	       "pointing to a valid file within allowed directories.\"}",
	       "\"paths\"");

static const char write_in[] = OBJECT("\"path\": " STRING ", \"content\": " STRING,
				      "\"path\", \"content\"");

static const char edit_in[] = OBJECT(
	"\"path\": " STRING ","
	"\"edits\": {\"type\": \"array\", \"items\": " OBJECT(
		"\"oldText\": {\"type\": \"string\", \"description\": \"Text to search for - must "
		"match exactly\"},"
		"\"newText\": {\"type\": \"string\", \"description\": \"Text to replace with\"}",
		"\"oldText\", \"newText\"") "},"
					    "\"dryRun\": {\"type\": \"boolean\", \"default\": false, "
					    "\"description\": \"Preview changes using git-style diff "
					    "format\"}",
	"\"path\", \"edits\"");

static const char sized_in[] =
	OBJECT("\"path\": " STRING ","
	       "\"sortBy\": {\"type\": \"string\", \"enum\": [\"name\", \"size\"], \"default\": "
	       "\"name\", \"description\": \"Sort entries by name or size\"}",
	       "\"path\"");

static const char tree_in[] = OBJECT("\"path\": " STRING ", \"excludePatterns\": " STRINGS,
				     "\"path\"");

static const char move_in[] = OBJECT("\"source\": " STRING ", \"destination\": " STRING,
				     "\"source\", \"destination\"");

static const char search_in[] = OBJECT("\"path\": " STRING ", \"pattern\": " STRING
				       ", \"excludePatterns\": " STRINGS,
				       "\"path\", \"pattern\"");

static const char none_in[] = "{\"type\": \"object\", \"properties\": {}}";

#define WITHIN " Only works within allowed directories."
#define GATED                                                                                   \
	" An existing file must have been read (read_text_file) in its current version first: " \
	"a write that fails this check is refused with what changed."

#define READ_TEXT_DESCRIPTION                                                                  \
	"Read the complete contents of a file from the file system as text. Handles various "  \
	"text encodings and provides detailed error messages if the file cannot be read. Use " \
	"this tool when you need to examine the contents of a single file. Use the 'head' "    \
	"parameter to read only the first N lines of a file, or the 'tail' parameter to read " \
	"only the last N lines of a file. Operates on the file as text regardless of extension." WITHIN

/* name, description, in, out, read_only, destructive, idempotent, run,
 * title */
const struct tool_spec tool_fs_specs[] = {
	{ "read_file",
	  "Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead.",
	  read_in, text_out, true, false, true, fs_read_text_file, "Read File (Deprecated)" },
	{ "read_text_file", READ_TEXT_DESCRIPTION, read_in, text_out, true, false, true,
	  fs_read_text_file, "Read Text File" },
	{ "read_multiple_files",
	  "Read the contents of multiple files simultaneously. This is more efficient than "
	  "reading files one by one when you need to analyze or compare multiple files. Each "
	  "file's content is returned with its path as a reference. Failed reads for individual "
	  "files won't stop the entire operation." WITHIN,
	  read_many_in, text_out, true, false, true, fs_read_multiple_files,
	  "Read Multiple Files" },
	{ "write_file",
	  "Create a new file or completely overwrite an existing file with new content. Use "
	  "with caution as it will overwrite existing files without warning. Handles text "
	  "content with proper encoding." WITHIN GATED,
	  write_in, text_out, false, true, true, fs_write_file, "Write File" },
	{ "edit_file",
	  "Make line-based edits to a text file. Each edit replaces exact line sequences with "
	  "new content. Returns a git-style diff showing the changes made." WITHIN GATED,
	  edit_in, text_out, false, true, false, fs_edit_file, "Edit File" },
	{ "create_directory",
	  "Create a new directory or ensure a directory exists. Can create multiple nested "
	  "directories in one operation. If the directory already exists, this operation will "
	  "succeed silently. Perfect for setting up directory structures for projects or "
	  "ensuring required paths exist." WITHIN,
	  PATH_ONLY, text_out, false, false, true, fs_create_directory, "Create Directory" },
	{ "list_directory",
	  "Get a detailed listing of all files and directories in a specified path. Results "
	  "clearly distinguish between files and directories with [FILE] and [DIR] prefixes. "
	  "This tool is essential for understanding directory structure and finding specific "
	  "files within a directory." WITHIN,
	  PATH_ONLY, text_out, true, false, true, fs_list_directory, "List Directory" },
	{ "list_directory_with_sizes",
	  "Get a detailed listing of all files and directories in a specified path, including "
	  "sizes. Results clearly distinguish between files and directories with [FILE] and "
	  "[DIR] prefixes. This tool is useful for understanding directory structure and "
	  "finding specific files within a directory." WITHIN,
	  sized_in, text_out, true, false, true, fs_list_directory_with_sizes,
	  "List Directory with Sizes" },
	{ "directory_tree",
	  "Get a recursive tree view of files and directories as a JSON structure. Each entry "
	  "includes 'name', 'type' (file/directory), and 'children' for directories. Files have "
	  "no children array, while directories always have a children array (which may be "
	  "empty). The output is formatted with 2-space indentation for readability." WITHIN,
	  tree_in, text_out, true, false, true, fs_directory_tree, "Directory Tree" },
	{ "move_file",
	  "Move or rename files and directories. Can move files between directories and rename "
	  "them in a single operation. If the destination exists, the operation will fail. "
	  "Works across different directories and can be used for simple renaming within the "
	  "same directory. Both source and destination must be within allowed directories.",
	  move_in, text_out, false, true, false, fs_move_file, "Move File" },
	{ "search_files",
	  "Recursively search for files and directories matching a pattern. The patterns "
	  "should be glob-style patterns that match paths relative to the working directory. "
	  "Use pattern like '*.ext' to match files in current directory, and '**/*.ext' to "
	  "match files in all subdirectories. Returns full paths to all matching items. Great "
	  "for finding files when you don't know their exact location. Only searches within "
	  "allowed directories.",
	  search_in, text_out, true, false, true, fs_search_files, "Search Files" },
	{ "get_file_info",
	  "Retrieve detailed metadata about a file or directory. Returns comprehensive "
	  "information including size, creation time, last modified time, permissions, and "
	  "type. This tool is perfect for understanding file characteristics without reading "
	  "the actual content." WITHIN,
	  PATH_ONLY, text_out, true, false, true, fs_get_file_info, "Get File Info" },
	{ "list_allowed_directories",
	  "Returns the list of directories that this server is allowed to access. "
	  "Subdirectories within these allowed directories are also accessible. Use this to "
	  "understand which directories and their nested paths are available before trying to "
	  "access files.",
	  none_in, text_out, true, false, true, fs_list_allowed_directories,
	  "List Allowed Directories" },
};

const size_t tool_fs_nspecs = sizeof(tool_fs_specs) / sizeof(tool_fs_specs[0]);
