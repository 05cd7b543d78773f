/* sbx.conf parsing: any file is either read or refused with a message
 * naming where, never a crash. */
#include "fuzz.h"
#include "common/config.h"

#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("sbx.conf", MFD_CLOEXEC);
	char path[64], err[512];
	struct config c;

	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	int r = config_load(path, &c, err, sizeof(err));
	if (r < 0 && !strstr(err, path))
		abort();
	if (r == 0 && c.max_shell_sessions < c.max_running + 1)
		abort();
	config_free(&c);
	close(fd);
	return 0;
}
