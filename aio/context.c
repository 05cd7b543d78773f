/* context.c - GET /v1/sandbox (aio_int.h): what the sandbox is. The
 * framework polls it until it answers 200 (readiness) and may read
 * home_dir; every required field of the API's description is there. */
#include "aio_int.h"
#include "reply.h"
#include "exec/identity.h"

#include <sys/utsname.h>
#include <unistd.h>

#define WORKSPACE "/mnt/user-data/workspace"

/* The interpreters of RUNTIME found in the sandbox's /usr/bin. */
static json_t *runtimes(const char *const *names)
{
	json_t *list = json_array();
	char bin[64];

	for (size_t i = 0; list && names[i]; i++) {
		snprintf(bin, sizeof(bin), "/usr/bin/%s", names[i]);
		if (access(bin, X_OK) == 0)
			json_array_append_new(list, json_pack("{s:s, s:[s]}", "bin", bin, "alias",
							      names[i]));
	}
	return list;
}

enum MHD_Result aio_context(struct aio_call *c)
{
	static const char *const python[] = { "python3", NULL }, *const node[] = { "node", NULL };
	struct utsname u;

	if (uname(&u) < 0)
		return aio_fail(c->rq->conn, MHD_HTTP_OK, "uname: %m");
	json_t *system = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:[]}", "os", "linux",
				   "os_version", u.release, "arch", u.machine, "user", SANDBOX_USER,
				   "home_dir", SANDBOX_HOME, "workspace", WORKSPACE, "timezone",
				   "UTC", "occupied_ports");
	json_t *body = json_pack("{s:b, s:s, s:n, s:n, s:s, s:s, s:s, s:{s:o, s:{s:o, s:o}, s:[]}}",
				 "success", true, "message", "Operation successful", "data", "hint",
				 "home_dir", SANDBOX_HOME, "workspace", WORKSPACE, "version",
				 SBX_VERSION, "detail", "system", system, "runtime", "python",
				 runtimes(python), "nodejs", runtimes(node), "utils");
	return body ? aio_json(c->rq->conn, MHD_HTTP_OK, body) : MHD_NO;
}
