/* check_main.c - runs every suite; "make check" calls it via run-tests.
 * With arguments, runs only the suites whose names contain one of them;
 * --list prints every suite's name, one a line, in this order. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name;
	Suite *(*make)(void);
} suites[] = {
	{ "unit_names", suite_unit_names },
	{ "unit_ids", suite_unit_ids },
	{ "unit_cleanup", suite_unit_cleanup },
	{ "unit_lockcheck", suite_unit_lockcheck },
	{ "unit_quote", suite_unit_quote },
	{ "unit_page", suite_unit_page },
	{ "unit_log", suite_unit_log },
	{ "unit_paths", suite_unit_paths },
	{ "unit_inode", suite_unit_inode },
	{ "unit_store", suite_unit_store },
	{ "unit_gate", suite_unit_gate },
	{ "unit_snapshot", suite_unit_snapshot },
	{ "unit_diff", suite_unit_diff },
	{ "unit_summary", suite_unit_summary },
	{ "unit_runlog", suite_unit_runlog },
	{ "unit_config", suite_unit_config },
	{ "unit_exec", suite_unit_exec },
	{ "unit_filetool", suite_unit_filetool },
	{ "unit_aiotool", suite_unit_aiotool },
	{ "view_layout", suite_view_layout },
	{ "view_posix", suite_view_posix },
	{ "view_confine", suite_view_confine },
	{ "view_lifecycle", suite_view_lifecycle },
	{ "view_tools", suite_view_tools },
	{ "view_gate", suite_view_gate },
	{ "view_stage", suite_view_stage },
	{ "view_quota", suite_view_quota },
	{ "view_snapshot", suite_view_snapshot },
	{ "view_runs", suite_view_runs },
	{ "view_undo", suite_view_undo },
	{ "view_undo_crash", suite_view_undo_crash },
	{ "view_differential", suite_view_differential },
	{ "view_faults", suite_view_faults },
	{ "view_escape", suite_view_escape },
	{ "view_skills", suite_view_skills },
	{ "view_try", suite_view_try },
	{ "view_try_review", suite_view_try_review },
	{ "view_broker", suite_view_broker },
	{ "mcp_protocol", suite_mcp_protocol },
	{ "view_watch", suite_view_watch },
	{ "view_hosts", suite_view_hosts },
	{ "view_filetool", suite_view_filetool },
	{ "cli", suite_cli },
	{ "serve", suite_serve },
	{ "aio", suite_aio },
	{ "sandbox", suite_sandbox },
	{ "mcp", suite_mcp },
	{ "valgrind", suite_valgrind },
	{ "sanitizers", suite_sanitizers }, /* last: sees every daemon's exit */
};

int main(int argc, char **argv)
{
	SRunner *sr = NULL;
	int failed;

	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (size_t i = 0; i < sizeof(suites) / sizeof(suites[0]); i++)
			puts(suites[i].name);
		return EXIT_SUCCESS;
	}
	for (size_t i = 0; i < sizeof(suites) / sizeof(suites[0]); i++) {
		bool wanted = argc < 2;

		for (int a = 1; a < argc; a++)
			wanted |= strstr(suites[i].name, argv[a]) != NULL;
		if (!wanted)
			continue;
		if (!sr)
			sr = srunner_create(suites[i].make());
		else
			srunner_add_suite(sr, suites[i].make());
	}
	if (!sr)
		return 2;
	/* The store's suites again on PostgreSQL: one server for them all. */
	if (pg_mode() && pg_server_start() < 0) {
		fputs("check_sbxfs: cannot start a PostgreSQL server (SBX_TEST_STORE=postgresql)\n",
		      stderr);
		return EXIT_FAILURE;
	}
	srunner_run_all(sr, CK_NORMAL);
	if (pg_mode())
		pg_server_down();
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
