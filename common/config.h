/* config.h - a home's configuration: $SBX_HOME/sbx.conf (INI, parsed
 * with libinih), then defaults for whatever it does not set. This is the
 * one parser of the file; every program of the home reads it here.
 *
 *   store = sqlite               where the home's records are: sqlite, a
 *                                postgresql:// URL or a libpq keyword string
 *                                ($SBX_STORE comes first: store_where())
 *   host = NAME                  this host's id in leases ($SBX_HOST comes
 *                                first, the host name last: lease_config())
 *   lease = 10                   seconds a lease lasts unrenewed, 0.3 to 3600
 *   max-views-per-host = 0       live views this host may hold; 0: no limit
 *   max-views = 0                live views of the deployment; 0: no limit
 *
 *   [broker]
 *   isolation = namespace        namespace (bubblewrap) | host
 *   allow_host_bash = false      host mode is refused unless true
 *   network = off                on | off (namespace mode)
 *   timeout = 600                seconds, a command's default wall clock
 *   idle_timeout = 900           seconds a parked view stays mounted
 *   max_running = 3              subagents running at once
 *   max_shell_sessions = 10      persistent shells per sandbox; >= max_running
 *                                + 1 (raised to it when not set)
 *   max_shell_sessions_total = 1000  persistent shells in all (host ceiling)
 *   bash_max_sessions = 50       one-off commands at once, per sandbox
 *   one_off = launcher           launcher: one-offs of a sandbox are started
 *                                by a launcher resident in a sandbox of
 *                                their own; fresh: a new sandbox each
 *   bwrap = /usr/bin/bwrap       bubblewrap (default: found on /usr/bin:/bin)
 *   sandbox_uid_base = 2000000000  a root broker runs each sandbox as its
 *   sandbox_uid_count = 65536      own host uid (and gid) from this range
 *   env_pass = NAME...           variables of the broker's environment its
 *                                commands get too (env.h has the fixed set);
 *                                a list: each line adds its names
 *
 *   [limits]                     per sandbox (a thread), docs/configuration.md
 *   pids = 1024                  processes and threads; 0: no limit
 *   memory = 2G                  bytes (K, M, G, T: powers of 1024); 0: none
 *   swap = 0                     swap beyond memory
 *   cpu = 0                      CPUs of time (1.5: one and a half); 0: none
 *   cpu_weight = 100             share under contention, 1 to 10000
 *   disk = 20G                   bytes in the thread's directories; 0: none
 *   disk_inodes = 1000000        files and directories there; 0: none
 *   cgroups = auto               auto: a cgroup per sandbox where the host
 *                                allows it; off: rlimits only
 *
 *   [mounts]
 *   NAME = HOSTDIR[:ro]          an extra mount at /mnt/NAME, repeatable
 *
 *   [undo]                       what sbx run undo needs, per thread
 *   max_age_days = 7             an ended run's pre-images are dropped after
 *                                this many days; 0: kept until the budget
 *   budget = 1G                  bytes of pre-images a thread keeps, oldest
 *                                runs' dropped first beyond it; 0: no bound
 *
 *   [serve]                      sbx serve, MCP over HTTP (docs/mcp.md)
 *   listen = 127.0.0.1:8739      ADDR:PORT it listens on ([::1]:PORT for IPv6)
 *   token_file = PATH            the bearer token clients must present
 *                                (absolute); default: HOME/serve.token, made
 *                                when missing, on a loopback address only
 *   max_body = 4M                bytes of a request's body, 1K to 1G
 *   max_sessions = 64            MCP sessions at once, 1 to 10000
 *   idle_timeout = 900           seconds a session with no request and no
 *                                stream open lives on, 1 to 86400
 *   max_connections = 256        HTTP connections at once, 4 to 10000
 *
 * Booleans take true/false, yes/no, on/off, 1/0 (any case). A key given
 * twice keeps its last value, but env_pass's lines add up; a mount NAME
 * may appear once. Lines are at most 197 bytes (libinih's buffer);
 * leading blanks are ignored, so there are no continuation lines; ';' or
 * '#' starts a comment line, and " ;" a comment after a value. A missing
 * file is the defaults. Any other problem (unknown section or key, a bad
 * value, a syntax error, a line too long, a NUL byte) fails config_load()
 * with "FILE:LINE: what is wrong". config_load_top() reads the keys
 * before any section alone, as the programs that need only those do.
 */
#ifndef SBX_CONFIG_H
#define SBX_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CONFIG_MAX_MOUNTS 16
#define CONFIG_MAX_ENV_PASS 64

/* The rules of the values of the keys before any section. */
#define STORE_TARGET_MAX 4160 /* a store's name: a path (PATH_MAX) and more */
#define LEASE_HOST_MAX 65     /* a host id and its NUL */
#define LEASE_TTL_DEFAULT_MS 10000

/* Whether VALUE may be a store's: "sqlite", or a PostgreSQL server. */
bool store_target_ok(const char *value);
/* True if TARGET names a PostgreSQL server: a postgresql:// or
 * postgres:// URI, or a libpq keyword string ("host=/run/pg dbname=sbx"). */
bool store_target_is_postgres(const char *target);
/* 1 to 64 of [A-Za-z0-9._-], not starting with '.' or '-'. */
bool lease_host_ok(const char *host);

enum isolation { ISOLATION_NAMESPACE, ISOLATION_HOST };

struct config_mount {
	char *name;    /* NAME of /mnt/NAME: a valid id (ids.h) */
	char *hostdir; /* absolute */
	bool ro;
};

struct config_limits {
	unsigned pids;	      /* 0: no limit */
	uint64_t memory;      /* bytes; 0: no limit */
	uint64_t swap;	      /* bytes of swap beyond MEMORY */
	unsigned cpu_milli;   /* thousandths of a CPU; 0: no quota */
	unsigned cpu_weight;  /* 1..10000; 100: an equal share */
	uint64_t disk;	      /* bytes; 0: no quota */
	uint64_t disk_inodes; /* 0: no quota */
	bool cgroups;	      /* false: rlimits only */
};

struct config {
	/* The keys before any section. */
	char *store; /* as written (config_load_top() does not check it); NULL: not set */
	char host[LEASE_HOST_MAX];  /* "": not set */
	int64_t lease_ms;	    /* how long a lease lasts unrenewed */
	int64_t max_views_per_host; /* 0: no limit */
	int64_t max_views;	    /* of the deployment; 0: no limit */

	enum isolation isolation;
	bool allow_host_bash;
	bool network;
	unsigned timeout;		   /* seconds, >= 1 */
	unsigned idle_timeout;		   /* seconds, >= 1 */
	unsigned max_running;		   /* >= 1 */
	unsigned max_shell_sessions;	   /* per sandbox, >= max_running + 1 */
	unsigned max_shell_sessions_total; /* >= 1 */
	unsigned bash_max_sessions;	   /* >= 1 */
	bool one_off_fresh;		   /* one_off = fresh: no launcher */
	char *bwrap;			   /* absolute; NULL: found at start */
	uid_t sandbox_uid_base;		   /* >= 1 */
	unsigned sandbox_uid_count;	   /* >= 1, base + count <= 2^31 */
	struct config_limits limits;
	struct config_mount mounts[CONFIG_MAX_MOUNTS];
	size_t nmounts;
	char *env_pass[CONFIG_MAX_ENV_PASS + 1]; /* POSIX names, NULL-ended */
	size_t nenv_pass;
	struct {
		unsigned max_age_days; /* 0: no age limit */
		uint64_t budget;       /* bytes per thread; 0: no bound */
	} undo;
	struct config_serve {
		char *listen;	   /* NULL: CONFIG_SERVE_LISTEN */
		char *token_file;  /* absolute; NULL: not set */
		uint64_t max_body; /* bytes */
		unsigned max_sessions;
		unsigned idle_timeout; /* seconds */
		unsigned max_connections;
		unsigned max_sandboxes; /* the provisioner's, at once */
		uint64_t max_upload;	/* a sandbox API request's body, bytes */
		char *public_url;	/* sandbox_url's start; NULL: from Host */
	} serve;
};

#define CONFIG_SERVE_LISTEN "127.0.0.1:8739"

/* The defaults above. */
/* A size as sbx.conf writes one: "0", "512", "64K", "256M", "2G", "1T"
 * (also "KiB"... and "B"; the unit's letter in either case): bytes,
 * powers of 1024, at most 2^60. 0, -EINVAL, or -ERANGE. */
int config_parse_size(const char *s, uint64_t *out);

void config_defaults(struct config *c);

/* Reads PATH into C (defaults first). Returns 0; -ENOENT (C holds the
 * defaults) if there is no such file; else -EINVAL (or -errno if it
 * cannot be read) with "PATH:LINE: reason" (or "PATH: reason") in ERR,
 * and C holds the defaults: nothing of a bad file is half applied.
 * ERR may be NULL; the first error is the one reported. */
int config_load(const char *path, struct config *c, char *err, size_t errlen);
/* Reads the keys before any section of PATH into C (defaults first),
 * read line by line as config_load() reads them, but passing over
 * whatever else the file holds, right or wrong: that is config_load()'s
 * to refuse. `store` is taken as written, the last one given. Returns 0;
 * -ENOENT or another -errno of reading the file (C holds the defaults);
 * or -EINVAL with "PATH: reason" in ERR for the first bad value of host,
 * lease, max-views-per-host or max-views, and C holds what was read all
 * the same (the store of a file with a bad lease is still its store). */
int config_load_top(const char *path, struct config *c, char *err, size_t errlen);
void config_free(struct config *c);

#endif
