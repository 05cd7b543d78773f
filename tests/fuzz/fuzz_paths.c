/* Path handling: the snapshot's exclusion and sensitivity rules, and host
 * mode's rewriting and masking of paths. */
#include "fuzz.h"
#include "sandbox.h"
#include "snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_string(data, size);
	const char *extra[] = { "data", NULL };
	const char *mask[] = { "/h/run/views/u/abcd1234", "/h/users/u/threads/t", NULL };

	(void)snapshot_path_excluded(s);
	(void)snapshot_sensitive(s);
	(void)snapshot_binary_name(s);
	char *r = sandbox_rewrite(s, "/M", extra);
	/* A rewritten command names no virtual root any more. */
	if (r && strstr(s, "/mnt/user-data") == NULL && strcmp(r, s))
		if (!strstr(s, "/mnt/skills") && !strstr(s, "/mnt/acp-workspace") &&
		    !strstr(s, "/mnt/data"))
			abort();
	free(r);
	free(sandbox_mask(s, mask));
	free(s);
	return 0;
}
