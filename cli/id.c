/* id.c - sbx id: the reference's id rules for clients. */
#include "args.h"
#include "cli.h"
#include "common/ids.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char id_usage[] =
	"Usage: sbx id user RAW\n"
	"       sbx id check user|thread ID\n"
	"\n"
	"user RAW     print the user id the reference's make_safe_user_id makes of\n"
	"             RAW: each character outside [A-Za-z0-9_-] becomes '-', and if\n"
	"             any did, '-' and 16 hex digits of RAW's SHA-256 follow\n"
	"check KIND ID\n"
	"             exit 0 if ID is a valid user id ([A-Za-z0-9_-], 1 to 255) or\n"
	"             thread id ([A-Za-z0-9_-], 1 to 64); else say why, exit 1\n";

int cmd_id(int argc, char **argv, const char *home)
{
	char safe[USER_ID_MAX + 1];
	const char *why;

	int r = take_leading_home("id", &argc, &argv, &home);

	if (r >= 0)
		return r;
	(void)home; /* ids need none */
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(id_usage, stdout);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "user")) {
		int r = user_id_make_safe(argv[2], safe);
		if (r < 0) {
			fprintf(stderr, "sbx: id: %s\n",
				r == -EINVAL ? "the raw id is empty"
					     : "the id would be longer than 255 characters");
			return 1;
		}
		puts(safe);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "check") &&
	    (!strcmp(argv[2], "user") || !strcmp(argv[2], "thread"))) {
		bool user = !strcmp(argv[2], "user");
		if ((user ? user_id_check : thread_id_check)(argv[3], &why) == 0)
			return 0;
		fprintf(stderr, "sbx: id: invalid %s id: %s\n", argv[2], why);
		return 1;
	}
	if (argc >= 2 && argv[1][0] == '-')
		return usage_error("id", "unrecognized option '%s'", argv[1]);
	return usage_error("id", "expected 'user RAW' or 'check user|thread ID'");
}
