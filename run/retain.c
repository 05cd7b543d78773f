/* retain.c - the retention of kept files (retain.h). */
#include "retain.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/log.h"
#include "run/undo_plan.h"
#include "common/config.h"
#include "common/home.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

void run_retain(struct store *s, const char *home, const char *user, const char *thread,
		const char *command)
{
	char path[PATH_MAX], err[PATH_MAX + 256];
	struct config c;
	int r;

	snprintf(path, sizeof(path), "%s/%s", home, HOME_CONFIG);
	if ((r = config_load(path, &c, err, sizeof(err))) < 0 && r != -ENOENT) {
		log_warn("%s: %s: pre-images kept as they are", command, err);
		return;
	}
	_cleanup_(closep) int homefd = open(home, O_PATH | O_DIRECTORY | O_CLOEXEC);
	r = homefd < 0 ? -errno
		       : kept_retain(s, homefd, user, thread,
				     (int64_t)c.undo.max_age_days * 86400 * 1000000000,
				     (int64_t)c.undo.budget, realtime_ns(), command);
	if (r < 0)
		log_warn("%s: cannot drop old pre-images: %s", command, strerror(-r));
	config_free(&c);
}
