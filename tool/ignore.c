/* ignore.c - see ignore.h. */
#include "ignore.h"
#include "match.h"

#include <string.h>

/* In the reference's order (its list mixes the two kinds). */
static const char *const exact[] = {
	".git",		 ".svn",	  ".hg",	 ".bzr",      "node_modules", "__pycache__",
	".venv",	 "venv",	  ".env",	 "env",	      ".tox",	      ".nox",
	".eggs",	 "site-packages", "dist",	 "build",     ".next",	      ".nuxt",
	".output",	 ".turbo",	  "target",	 "out",	      ".idea",	      ".vscode",
	".project",	 ".classpath",	  ".settings",	 ".DS_Store", "Thumbs.db",    "desktop.ini",
	".cache",	 "logs",	  ".coverage",	 "coverage",  ".nyc_output",  "htmlcov",
	".pytest_cache", ".mypy_cache",	  ".ruff_cache",
};

static const char *const globs[] = {
	"*.egg-info", "*.swp",	"*.swo",	  "*~",	   "*.lnk",   "*.log",
	"*.tmp",      "*.temp", ".upload-*.part", "*.bak", "*.cache",
};

bool ignore_name(const char *name)
{
	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (!strcmp(name, exact[i]))
			return true;
	for (size_t i = 0; i < sizeof(globs) / sizeof(globs[0]); i++)
		if (match_fnmatch(globs[i], name))
			return true;
	return false;
}
