/* The broker's request parsing: any line is a request or an error reply,
 * never a crash; what passes has valid ids and fields. */
#include "fuzz.h"
#include "common/ids.h"
#include "exec/request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct request q;
	const char *code, *why;
	char err[512];

	int r = request_parse((const char *)data, size, &q, &code, err, sizeof(err));

	if (r == 0 && q.op != REQ_PING && q.op != REQ_STATUS && q.op != REQ_SHUTDOWN &&
	    q.op != REQ_PRESENT && q.op != REQ_RUN_END &&
	    (user_id_check(q.user, &why) < 0 || thread_id_check(q.thread, &why) < 0))
		abort();
	if (r == 0 && q.op == REQ_EXEC && (!q.command || !*q.command))
		abort();
	if (r == 0 && q.op == REQ_PRESENT && (q.run < 1 || !q.tool || !*q.tool || !q.npaths))
		abort();
	if (r == 0 && q.op == REQ_RUN_END && q.run < 1)
		abort();
	if (r == 0 && q.op == REQ_RUN_BEGIN && (q.max_files < 0 || q.max_files > REQUEST_MAX_FILES))
		abort();
	if (r == 0 && (q.op == REQ_SESSION_OPEN || q.op == REQ_SESSION_CLOSE) &&
	    (!q.scope || !*q.scope))
		abort();
	if (r == 0 && q.op == REQ_EXEC && q.existing && (!q.scope || q.nenv))
		abort();
	if (r == 0 && q.max_shell_sessions > REQUEST_MAX_SHELL_SESSIONS)
		abort();
	if (r < 0 && (!code || !*err))
		abort();
	request_free(&q);
	return 0;
}
