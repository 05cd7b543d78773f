/* hold.c - see hold.h. */
#include "hold.h"
#include "exec/client.h"

#include <stdbool.h>
#include <stdio.h>

int hold_broker(const char *command, const char *home, struct client_conn **keep)
{
	struct error e;
	bool started;

	if (client_hold_broker(home, HOLD_BROKER_IDLE_S, keep, &started, &e) < 0) {
		fprintf(stderr, "sbx: %s: %s\n", command, e.text);
		return 1;
	}
	if (started)
		fprintf(stderr,
			"sbx: %s: started a broker for %s; it stops %d s after its last client "
			"leaves\n",
			command, home, HOLD_BROKER_IDLE_S);
	else
		fprintf(stderr, "sbx: %s: using the broker that serves %s\n", command, home);
	return 0;
}
