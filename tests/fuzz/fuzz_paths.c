/* Path handling: the snapshot's exclusion and sensitivity rules, and host
 * mode's path guard, rewriting and masking of paths. */
#include "fuzz.h"
#include "exec/guard.h"
#include "exec/hostpath.h"
#include "store/snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_string(data, size);
	const char *extra[] = { "data", NULL };
	const struct hostpath_mask mask[] = {
		{ "/h/run/views/u/t", "/mnt" },
		{ "/h/users/u/threads/t", "/mnt" },
		{ NULL, NULL },
	};
	char why[512];

	(void)snapshot_path_excluded(s);
	(void)snapshot_sensitive(s);
	(void)snapshot_binary_name(s);
	(void)guard_check(s, extra, why, sizeof(why));
	char *r = hostpath_rewrite(s, "/M", extra);
	/* A rewritten command names no virtual root any more. */
	if (r && strstr(s, "/mnt/user-data") == NULL && strcmp(r, s))
		if (!strstr(s, "/mnt/skills") && !strstr(s, "/mnt/acp-workspace") &&
		    !strstr(s, "/mnt/data"))
			abort();
	free(r);
	free(hostpath_mask(s, mask));
	free(s);
	return 0;
}
