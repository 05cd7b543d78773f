/* serve.c - sbx serve: MCP's Streamable HTTP for every thread of a home
 * (mcp/http_transport.h), through the home's broker: its address, its
 * token, its certificate; it runs in the foreground until a signal. */
#include "args.h"
#include "cli.h"
#include "hold.h"
#include "aio/aio.h"
#include "common/cleanup.h"
#include "common/proc.h"
#include "common/config.h"
#include "common/home.h"
#include "exec/client.h"
#include "http/server.h"
#include "mcp/http_transport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* A token shorter than this is refused: it must not be guessable. */
#define TOKEN_MIN 16
#define TOKEN_MAX 4096
#define PEM_MAX (1 << 20)
/* inotify instances left to the user's other programs (the broker, ...). */
#define INOTIFY_SPARE 16

static const char serve_usage[] =
	"Usage: sbx serve [--listen ADDR:PORT | --socket PATH] [--token-file FILE]\n"
	"                 [--tls-cert FILE --tls-key FILE] [--home DIR]\n"
	"\n"
	"An HTTP server for every thread of the home, through the home's broker:\n"
	"  /mcp/USER/THREAD  MCP's Streamable HTTP transport (protocol versions\n"
	"                    2025-11-25 and 2025-06-18), each MCP session a session\n"
	"                    of sbx mcp (the same tools, a run per session);\n"
	"  /api/sandboxes    the reference framework's provisioner API (X-API-Key:\n"
	"                    the token), whose sandbox_url serves the reference's\n"
	"                    sandbox API for the sandbox's thread (docs/aio.md); the\n"
	"                    sandboxes are the store's, each served by the host\n"
	"                    that holds its thread.\n"
	"It runs in the foreground, logs to standard error, and at SIGTERM or\n"
	"SIGINT ends every session and sandbox (runs ended, views given back).\n"
	"\n"
	"Every request needs the token (\"Authorization: Bearer TOKEN\"; for the\n"
	"provisioner \"X-API-Key: TOKEN\"; a sandbox_url carries a key of its own)\n"
	"but on a Unix socket, where only this uid and root may connect, and\n"
	"none is needed. The token is the content of\n"
	"--token-file, else of [serve] token_file in sbx.conf, else of\n"
	"HOME/serve.token (made at the first start): the last only on a loopback\n"
	"address. A browser page of another origin is refused (403).\n"
	"  --listen ADDR:PORT   the address ([serve] listen; default 127.0.0.1:8739);\n"
	"                       [::1]:PORT for IPv6, port 0 for any free one\n"
	"  --socket PATH        a Unix socket instead (made 0600; no token)\n"
	"  --token-file FILE    the bearer token (a line of 16 or more visible\n"
	"                       characters; the file readable by its owner only)\n"
	"  --tls-cert FILE      HTTPS with this certificate (PEM) ...\n"
	"  --tls-key FILE       ... and its key (PEM)\n"
	"Limits ([serve] in sbx.conf): max_body (4M: 413 beyond), max_sessions (64:\n"
	"503 beyond), idle_timeout (900 s: a session with no request nor stream\n"
	"open ends), max_connections (256), max_sandboxes (256), max_upload (64M),\n"
	"public_url (sandbox_url's start; on a store several hosts share, recorded\n"
	"there: the others answer it for the sandboxes this host serves).\n"
	"docs/mcp.md and docs/aio.md have the endpoints' contracts.\n";

struct listen_addr {
	struct sockaddr_storage ss;
	socklen_t len;
	bool loopback;
};

/* ADDR:PORT ("127.0.0.1:8739", "[::1]:0", "localhost:8739") into A: 0,
 * or -EINVAL. */
static int parse_listen(const char *text, struct listen_addr *a)
{
	char host[64];
	const char *colon = strrchr(text, ':');
	char *end;

	if (!colon || colon == text || (size_t)(colon - text) >= sizeof(host))
		return -EINVAL;
	memcpy(host, text, (size_t)(colon - text));
	host[colon - text] = '\0';
	errno = 0;
	unsigned long port = strtoul(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || port > 65535 || colon[1] == '-' || colon[1] == '+')
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	size_t n = strlen(host);
	if (host[0] == '[' && n > 2 && host[n - 1] == ']') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&a->ss;
		host[n - 1] = '\0';
		if (inet_pton(AF_INET6, host + 1, &s6->sin6_addr) != 1)
			return -EINVAL;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		a->len = sizeof(*s6);
		a->loopback = IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr);
		return 0;
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)&a->ss;
	if (!strcmp(host, "localhost"))
		strcpy(host, "127.0.0.1");
	if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
		return -EINVAL;
	s4->sin_family = AF_INET;
	s4->sin_port = htons((uint16_t)port);
	a->len = sizeof(*s4);
	a->loopback = (ntohl(s4->sin_addr.s_addr) >> 24) == 127;
	return 0;
}

/* FILE's content, at most MAX bytes, into *OUT (NUL-ended, *LEN bytes).
 * With PRIVATE, a file others may read or write is refused. 0, or 1
 * once said why not. */
static int read_small(const char *file, size_t max, bool private, char **out, size_t *len)
{
	_cleanup_(closep) int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "sbx: serve: cannot read %s: %s\n", file, strerror(errno));
		return 1;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > (off_t)max) {
		fprintf(stderr, "sbx: serve: %s: not a regular file of at most %zu bytes\n", file,
			max);
		return 1;
	}
	if (private && (st.st_mode & 077)) {
		fprintf(stderr,
			"sbx: serve: %s may be read or written by others (mode %04o): chmod 600 "
			"it\n",
			file, (unsigned)(st.st_mode & 07777));
		return 1;
	}
	char *buf = malloc((size_t)st.st_size + 1);
	ssize_t n = buf ? read(fd, buf, (size_t)st.st_size) : -1;
	if (n < 0) {
		fprintf(stderr, "sbx: serve: cannot read %s: %s\n", file,
			buf ? strerror(errno) : "out of memory");
		free(buf);
		return 1;
	}
	buf[n] = '\0';
	*out = buf;
	*len = (size_t)n;
	return 0;
}

/* The token of FILE into *OUT: 0, or 1 once said why not. */
static int read_token(const char *file, char **out)
{
	char *t;
	size_t n;

	if (read_small(file, TOKEN_MAX, true, &t, &n))
		return 1;
	while (n && strchr(" \t\r\n", t[n - 1]))
		t[--n] = '\0';
	bool visible = strlen(t) == n;
	for (size_t i = 0; i < n && visible; i++)
		visible = t[i] > 0x20 && t[i] < 0x7f;
	if (!visible || n < TOKEN_MIN) {
		fprintf(stderr,
			"sbx: serve: %s: the token must be one line of %d or more visible ASCII "
			"characters\n",
			file, TOKEN_MIN);
		free(t);
		return 1;
	}
	*out = t;
	return 0;
}

/* HOME/serve.token, made with a fresh token if it is not there, into
 * PATH: 0, or 1 once said why not. */
static int home_token(const char *home, char *path, size_t size)
{
	_cleanup_(closep) int h = home_open(home);
	unsigned char rnd[32];
	char text[sizeof(rnd) * 2 + 2];

	snprintf(path, size, "%s/" HOME_SERVE_TOKEN, home);
	if (h < 0) {
		fprintf(stderr, "sbx: serve: cannot open %s: %s\n", home, strerror(-h));
		return 1;
	}
	_cleanup_(closep) int fd = openat(h, HOME_SERVE_TOKEN,
					  O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
					  0600);
	if (fd < 0 && errno == EEXIST)
		return 0;
	if (fd < 0 || getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
		fprintf(stderr, "sbx: serve: cannot make %s: %s\n", path, strerror(errno));
		return 1;
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(text + 2 * i, 3, "%02x", rnd[i]);
	strcat(text, "\n");
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		fprintf(stderr, "sbx: serve: cannot write %s: %s\n", path, strerror(errno));
		unlinkat(h, HOME_SERVE_TOKEN, 0);
		return 1;
	}
	fprintf(stderr, "sbx: serve: made a bearer token in %s\n", path);
	return 0;
}

/* Runs the server of O, with the MCP service of M and the sandbox and
 * provisioner APIs of A, until a signal. WHERE is what it listens on, as
 * given; URL the address it serves, before its port. */
/* Each sandbox's view takes one of its user's inotify instances: past
 * the host's limit, POST /api/sandboxes fails (saying why). Said at the
 * start, where the limit is below what the configuration promises. */
static void warn_capacity(unsigned max_sandboxes)
{
	long limit = proc_sys_long("fs/inotify/max_user_instances");

	if (limit > 0 && (long)max_sandboxes + INOTIFY_SPARE > limit)
		fprintf(stderr,
			"sbx: serve: warning: max_sandboxes is %u, but each sandbox's view takes"
			" one of the user's %ld inotify instances (fs.inotify.max_user_instances,"
			" shared with every other program of the user): sandboxes past about %ld"
			" are refused; raise it (sysctl fs.inotify.max_user_instances=%u) or lower"
			" max_sandboxes\n",
			max_sandboxes, limit, limit - INOTIFY_SPARE, max_sandboxes * 2);
}

static int serve(const struct http_options *o, const struct mcp_http_options *m,
		 const struct aio_options *ao, const char *where, const char *url,
		 const char *token_from)
{
	struct mcp_http *mcp = NULL;
	struct aio *aio = NULL;
	struct http_server *srv;
	struct error e;
	sigset_t stop;
	int sig;

	/* Blocked in every thread the server starts; waited for here. */
	stop_signals_block(&stop);
	if (mcp_http_new(m, &mcp, &e) < 0 || aio_new(ao, &aio, &e) < 0) {
		fprintf(stderr, "sbx: serve: %s\n", e.text);
		mcp_http_free(mcp);
		return 1;
	}
	struct http_service services[1 + AIO_NSERVICES] = { mcp_http_service(mcp) };
	aio_services(aio, services + 1);
	struct http_options ho = *o;
	ho.services = services;
	ho.nservices = sizeof(services) / sizeof(services[0]);
	if (http_start(&ho, &srv, &e) < 0) {
		fprintf(stderr, "sbx: serve: %s: %s\n", where, e.text);
		mcp_http_free(mcp);
		aio_free(aio);
		return 1;
	}
	warn_capacity(ao->max_sandboxes);
	if (o->socket_path)
		fprintf(stderr,
			"sbx: serve: listening on %s (unix; MCP at /mcp/USER/THREAD, the "
			"provisioner at /api/sandboxes)\n",
			where);
	else
		fprintf(stderr,
			"sbx: serve: listening on %s%u/ (MCP at /mcp/USER/THREAD, the provisioner at "
			"/api/sandboxes; token: %s)\n",
			url, http_port(srv), token_from);
	sigwait(&stop, &sig);
	fprintf(stderr, "sbx: serve: %s: ending every session\n", strsignal(sig));
	mcp_http_shutdown(mcp);
	http_stop(srv);
	mcp_http_free(mcp);
	aio_free(aio);
	return 0;
}

int cmd_serve(int argc, char **argv, const char *home)
{
	static const struct option longopts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "socket", required_argument, NULL, 's' },
		{ "token-file", required_argument, NULL, 't' },
		{ "tls-cert", required_argument, NULL, 'c' },
		{ "tls-key", required_argument, NULL, 'k' },
		{ "home", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct {
		const char *listen, *socket, *token_file, *cert, *key;
	} a = { 0 };
	char h[PATH_MAX], conf[PATH_MAX + 16], err[1024], token_path[PATH_MAX + 16];
	struct config cfg;
	int c;

	getopt_begin(argv, "serve");
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			a.listen = optarg;
			break;
		case 's':
			a.socket = optarg;
			break;
		case 't':
			a.token_file = optarg;
			break;
		case 'c':
			a.cert = optarg;
			break;
		case 'k':
			a.key = optarg;
			break;
		case 'H':
			home = optarg;
			break;
		case 'h':
			fputs(serve_usage, stdout);
			return 0;
		default:
			return usage_error("serve", NULL);
		}
	}
	if (optind != argc)
		return usage_error("serve", "unexpected argument '%s'", argv[optind]);
	if (a.listen && a.socket)
		return usage_error("serve", "--listen and --socket exclude each other");
	if (a.socket && a.token_file)
		return usage_error("serve", "--token-file is for TCP: on --socket only this uid "
					    "and root may connect");
	if (!a.cert != !a.key)
		return usage_error("serve", "--tls-cert and --tls-key go together");
	if (resolve_home("serve", home, h, sizeof(h)) < 0)
		return 2;
	snprintf(conf, sizeof(conf), "%s/" HOME_CONFIG, h);
	int r = config_load(conf, &cfg, err, sizeof(err));
	if (r < 0 && r != -ENOENT) {
		fprintf(stderr, "sbx: serve: %s\n", err);
		return 1;
	}

	struct http_options o = {
		.socket_path = a.socket,
		.max_connections = cfg.serve.max_connections,
	};
	struct mcp_http_options m = {
		.home = h,
		.max_body = cfg.serve.max_body,
		.max_sessions = cfg.serve.max_sessions,
		.idle_timeout_s = cfg.serve.idle_timeout,
	};
	struct aio_options ao = {
		.home = h,
		.tls = a.cert != NULL,
		.base_url = cfg.serve.public_url,
		.max_body = cfg.serve.max_upload,
		.max_sandboxes = cfg.serve.max_sandboxes,
		.max_shell_sessions = cfg.max_shell_sessions,
	};
	struct listen_addr la;
	_cleanup_(freep) char *token = NULL, *cert = NULL, *key = NULL;
	const char *where = a.socket, *token_from = NULL;
	char url[160] = "";
	int status = 1;
	if (!a.socket) {
		const char *listen = a.listen		? a.listen
				     : cfg.serve.listen ? cfg.serve.listen
							: CONFIG_SERVE_LISTEN;
		if (parse_listen(listen, &la) < 0) {
			config_free(&cfg);
			return usage_error("serve",
					   "'%s' is no ADDR:PORT (an IPv4 address, [IPv6] or "
					   "localhost, and a port)",
					   listen);
		}
		token_from = a.token_file ? a.token_file : cfg.serve.token_file;
		if (!token_from && !la.loopback) {
			fprintf(stderr,
				"sbx: serve: %s is not a loopback address: name a token "
				"(--token-file, or token_file in [serve] of %s)\n",
				listen, conf);
			goto out;
		}
		if (!token_from) {
			if (home_token(h, token_path, sizeof(token_path)))
				goto out;
			token_from = token_path;
		}
		if (read_token(token_from, &token))
			goto out;
		if (!la.loopback && !a.cert)
			fprintf(stderr,
				"sbx: serve: warning: %s is not a loopback address and there is no "
				"TLS: the token crosses the network in the clear\n",
				listen);
		o.addr = (struct sockaddr *)&la.ss;
		o.addrlen = la.len;
		m.token = ao.provisioner_key = ao.api_key = token;
		char host[INET6_ADDRSTRLEN + 2];
		const char *colon = strrchr(listen, ':');
		snprintf(host, sizeof(host), "%.*s", (int)(colon - listen), listen);
		snprintf(url, sizeof(url), "%s://%s:", a.cert ? "https" : "http", host);
		where = listen;
	}
	size_t n;
	if (a.cert && (read_small(a.cert, PEM_MAX, false, &cert, &n) ||
		       read_small(a.key, PEM_MAX, true, &key, &n)))
		goto out;
	o.tls_cert = cert;
	o.tls_key = key;

	struct client_conn *keep;
	if (hold_broker("serve", h, &keep))
		goto out;
	status = serve(&o, &m, &ao, where, url, token_from);
	client_close(keep);
out:
	config_free(&cfg);
	return status;
}
