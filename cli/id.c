/* id.c - sbx id: the reference's id rules for clients. */
#include "args.h"
#include "cli.h"
#include "common/ids.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char id_usage[] =
	"Usage: sbx id user [--] RAW\n"
	"       sbx id check user|thread ID\n"
	"\n"
	"user RAW     print the user id the reference's make_safe_user_id makes of\n"
	"             RAW: each character outside [A-Za-z0-9_-] becomes '-', and if\n"
	"             any did, '-' and 16 hex digits of RAW's SHA-256 follow; a RAW\n"
	"             that begins with '-' goes after --\n"
	"check KIND ID\n"
	"             exit 0 if ID is a valid user id (1 to 255 of [A-Za-z0-9_-]) or\n"
	"             thread id (1 to 64 of [A-Za-z0-9_-]); else say why, exit 1\n";

int cmd_id(int argc, char **argv, const char *home)
{
	char safe[USER_ID_MAX + 1];
	const char *why, *word[3];
	bool words_only = false;
	int n = 0, h;

	/* Options anywhere, as every command takes them; after "--" only
	 * words (a raw id may begin with '-'). */
	for (int i = 1; i < argc; i++) {
		if (words_only || argv[i][0] != '-' || !argv[i][1]) {
			if (n < 3)
				word[n] = argv[i];
			n++;
		} else if (!strcmp(argv[i], "--")) {
			words_only = true;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(id_usage, stdout);
			return 0;
		} else if ((h = take_home(argc, argv, &i, &home)) < 0) {
			return usage_error("id", "--home needs a directory");
		} else if (!h) {
			return usage_error("id", "unrecognized option '%s'", argv[i]);
		}
	}
	(void)home; /* ids need none */
	if (n == 2 && !strcmp(word[0], "user")) {
		int r = user_id_make_safe(word[1], safe);
		if (r < 0) {
			fprintf(stderr, "sbx: id: %s\n",
				r == -EINVAL ? "the raw id is empty"
					     : "the id would be longer than 255 characters");
			return 1;
		}
		puts(safe);
		return 0;
	}
	if (n == 3 && !strcmp(word[0], "check") &&
	    (!strcmp(word[1], "user") || !strcmp(word[1], "thread"))) {
		bool user = !strcmp(word[1], "user");
		if ((user ? user_id_check : thread_id_check)(word[2], &why) == 0)
			return 0;
		fprintf(stderr, "sbx: id: invalid %s id: %s\n", word[1], why);
		return 1;
	}
	return usage_error("id", "expected 'user RAW' or 'check user|thread ID'");
}
