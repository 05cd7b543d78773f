/* server.c - see server.h. */
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

struct http_server {
	struct MHD_Daemon *d;
	char *socket_path;
	unsigned port;
	struct http_service *services;
	size_t nservices;
};

/* What the server keeps of a request between MHD's calls. */
struct pending {
	struct http_request rq;
	const struct http_service *svc;
	size_t cap;
	bool answered; /* or refused: what comes after is none of ours */
	bool too_big;
	/* A refusal at the headers, sent once the body is in (if it has a
	 * length, up to DRAIN bytes: a client still sending would meet a
	 * closed connection and never read why). */
	unsigned status;
	struct MHD_Response *refusal;
	size_t drain;
};

bool http_secret_equal(const char *secret, const char *given)
{
	size_t n = strlen(secret), m = strlen(given);
	volatile unsigned char d = n != m;

	for (size_t i = 0; i < n; i++)
		d |= (unsigned char)secret[i] ^ (unsigned char)(i < m ? given[i] : 0);
	return d == 0;
}

bool http_lists_type(const char *value, const char *type)
{
	size_t n = strlen(type);

	for (const char *p = value; p && *p; p = strchr(p, ',')) {
		p += *p == ',';
		p += strspn(p, " \t");
		if (!strncasecmp(p, type, n) && strchr(",; \t", p[n]))
			return true;
	}
	return false;
}

const char *http_header(const struct http_request *rq, const char *name)
{
	return MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, name);
}

const char *http_query(const struct http_request *rq, const char *name)
{
	return MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, name);
}

/* A growing string of a request's target. */
struct target {
	char *s;
	size_t n, cap;
	bool failed;
};

static void target_add(struct target *t, const char *p, size_t n)
{
	if (t->failed)
		return;
	if (t->n + n + 1 > t->cap) {
		size_t cap = 2 * (t->n + n + 1);
		char *s = realloc(t->s, cap);
		if (!s) {
			t->failed = true;
			return;
		}
		t->s = s;
		t->cap = cap;
	}
	memcpy(t->s + t->n, p, n);
	t->n += n;
	t->s[t->n] = '\0';
}

/* TEXT percent-encoded but for RFC 3986's unreserved characters and
 * those of KEEP. */
static void target_encode(struct target *t, const char *text, const char *keep)
{
	for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
		char esc[4];
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~", *p) || strchr(keep, *p)) {
			target_add(t, (const char *)p, 1);
			continue;
		}
		snprintf(esc, sizeof(esc), "%%%02X", *p);
		target_add(t, esc, 3);
	}
}

static enum MHD_Result target_arg(void *arg, enum MHD_ValueKind kind, const char *key,
				  const char *value)
{
	struct target *t = arg;

	(void)kind;
	target_add(t, strchr(t->s, '?') ? "&" : "?", 1);
	target_encode(t, key, "");
	if (value) {
		target_add(t, "=", 1);
		target_encode(t, value, "");
	}
	return MHD_YES;
}

char *http_target(const struct http_request *rq)
{
	struct target t = { 0 };

	target_add(&t, "", 0);
	target_encode(&t, rq->url, "/");
	MHD_get_connection_values(rq->conn, MHD_GET_ARGUMENT_KIND, target_arg, &t);
	if (t.failed) {
		free(t.s);
		return NULL;
	}
	return t.s;
}

enum MHD_Result http_queue(struct MHD_Connection *conn, unsigned status, struct MHD_Response *r)
{
	if (!r)
		return MHD_NO;
	enum MHD_Result q = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return q;
}

struct MHD_Response *http_text_response(char *text, const char *type)
{
	struct MHD_Response *r =
		text ? MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE)
		     : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);

	if (!r) {
		free(text);
		return NULL;
	}
	if (text && type)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	return r;
}

/* ---- the checks every service needs ------------------------------------- */

/* Whether ORIGIN is this server's own: http(s)://localhost, 127.0.0.1 or
 * [::1], with the port listened on. */
static bool origin_ok(const struct http_server *srv, const char *origin)
{
	static const char *const hosts[] = { "localhost", "127.0.0.1", "[::1]" };
	const char *p = origin;
	unsigned port;

	if (!strncasecmp(p, "http://", 7)) {
		p += 7;
		port = 80;
	} else if (!strncasecmp(p, "https://", 8)) {
		p += 8;
		port = 443;
	} else {
		return false;
	}
	size_t i = 0, n = 0;
	for (; i < sizeof(hosts) / sizeof(hosts[0]); i++)
		if (!strncasecmp(p, hosts[i], n = strlen(hosts[i])) && strchr(":/", p[n]))
			break;
	if (i == sizeof(hosts) / sizeof(hosts[0]))
		return false;
	p += n;
	if (*p == ':') {
		char *end;
		errno = 0;
		unsigned long v = strtoul(p + 1, &end, 10);
		if (errno || end == p + 1 || v > 65535 || (*end && strcmp(end, "/")))
			return false;
		port = (unsigned)v;
	} else if (*p && strcmp(p, "/")) {
		return false;
	}
	return !srv->port || port == srv->port;
}

/* Whether the peer of a Unix socket connection is this uid or root. */
static bool peer_ok(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct ucred cred;
	socklen_t clen = sizeof(cred);

	return ci && getsockopt(ci->connect_fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0 &&
	       (cred.uid == geteuid() || cred.uid == 0);
}

/* The service taking URL, or NULL. */
static const struct http_service *service_of(const struct http_server *srv, const char *url)
{
	for (size_t i = 0; i < srv->nservices; i++) {
		const char *prefix = srv->services[i].prefix;
		size_t n = strlen(prefix);
		if (!strcmp(url, prefix) || (n && prefix[n - 1] == '/' && !strncmp(url, prefix, n)))
			return &srv->services[i];
	}
	return NULL;
}

/* Keeps STATUS with the refusal of SVC saying the formatted message. */
static void refuse(struct pending *p, const struct http_service *svc, unsigned status,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void refuse(struct pending *p, const struct http_service *svc, unsigned status,
		   const char *fmt, ...)
{
	char message[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	p->status = status;
	p->refusal = svc->refuse(svc->arg, status, message);
}

/* The checks at the headers (server.h): false with the refusal in P. */
static bool check_headers(struct http_server *srv, struct pending *p)
{
	struct MHD_Connection *conn = p->rq.conn;
	const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
	const struct http_service *svc = service_of(srv, p->rq.url);
	const struct http_service *says = svc ? svc : &srv->services[0];

	p->drain = says->max_body;
	if (srv->socket_path && !peer_ok(conn)) {
		refuse(p, says, MHD_HTTP_FORBIDDEN,
		       "Forbidden: only uid %u and root may use this server", (unsigned)geteuid());
		return false;
	}
	if (origin && !origin_ok(srv, origin)) {
		refuse(p, says, MHD_HTTP_FORBIDDEN, "Forbidden: Origin %.100s is not this server's",
		       origin);
		return false;
	}
	if (!svc) {
		refuse(p, says, MHD_HTTP_NOT_FOUND,
		       "Not Found: %.200s is no endpoint of this server", p->rq.url);
		return false;
	}
	p->svc = svc;
	unsigned status = svc->check(svc->arg, &p->rq, &p->refusal);
	if (status) {
		p->status = status;
		return false;
	}
	const char *length = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							 MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (length && strtoull(length, NULL, 10) > svc->max_body) {
		refuse(p, svc, MHD_HTTP_CONTENT_TOO_LARGE,
		       "Content Too Large: a request may have %zu bytes", svc->max_body);
		return false;
	}
	return true;
}

/* Takes N more bytes of the body: false for no memory. */
static bool body_add(struct pending *p, const char *data, size_t n)
{
	/* Past the limit (no Content-Length said so) the rest is read and
	 * dropped: MHD answers only once the body is in. */
	if (!p->too_big && p->rq.len + n > p->svc->max_body) {
		p->too_big = true;
		free(p->rq.body);
		p->rq.body = NULL;
	}
	if (p->too_big)
		return true;
	if (p->rq.len + n + 1 > p->cap) {
		size_t cap = p->cap ? p->cap : 4096;
		while (cap < p->rq.len + n + 1)
			cap *= 2;
		char *b = realloc(p->rq.body, cap);
		if (!b)
			return false;
		p->rq.body = b;
		p->cap = cap;
	}
	memcpy(p->rq.body + p->rq.len, data, n);
	p->rq.len += n;
	p->rq.body[p->rq.len] = '\0';
	return true;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **state)
{
	struct http_server *srv = cls;
	struct pending *p = *state;

	(void)version;
	if (!p) {
		if (!(p = calloc(1, sizeof(*p))))
			return MHD_NO;
		*state = p;
		p->rq = (struct http_request){ .conn = conn, .method = method, .url = url };
		if (check_headers(srv, p))
			return MHD_YES;
		p->answered = true;
		if (!p->refusal)
			return MHD_NO; /* out of memory: the connection ends */
		/* A body of no announced length, or over the limit, is not
		 * waited for. */
		const char *length = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
								 MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (!length || strtoull(length, NULL, 10) > p->drain) {
			struct MHD_Response *r = p->refusal;
			p->refusal = NULL;
			return http_queue(conn, p->status, r);
		}
		return MHD_YES;
	}
	if (*upload_size) {
		bool ok = p->answered || body_add(p, upload, *upload_size);
		*upload_size = 0;
		return ok ? MHD_YES : MHD_NO;
	}
	if (p->answered) { /* no refusal left: it went at the headers */
		struct MHD_Response *r = p->refusal;
		p->refusal = NULL;
		return r ? http_queue(conn, p->status, r) : MHD_YES;
	}
	p->answered = true; /* a call again is none of ours */
	if (p->too_big) {
		refuse(p, p->svc, MHD_HTTP_CONTENT_TOO_LARGE,
		       "Content Too Large: a request may have %zu bytes", p->svc->max_body);
		struct MHD_Response *r = p->refusal;
		p->refusal = NULL;
		return http_queue(conn, p->status, r);
	}
	return p->svc->handle(p->svc->arg, &p->rq);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **state,
			 enum MHD_RequestTerminationCode why)
{
	struct pending *p = *state;

	(void)cls;
	(void)conn;
	(void)why;
	if (!p)
		return;
	if (p->svc && p->svc->done)
		p->svc->done(p->svc->arg, &p->rq);
	if (p->refusal)
		MHD_destroy_response(p->refusal);
	free(p->rq.body);
	free(p);
	*state = NULL;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char text[512];

	(void)cls;
	vsnprintf(text, sizeof(text), fmt, ap);
	text[strcspn(text, "\n")] = '\0';
	fprintf(stderr, "sbx: serve: libmicrohttpd: %s\n", text);
}

/* ---- life ------------------------------------------------------------------ */

/* A listening socket: on ADDR, or at the Unix socket PATH. */
static int listen_on(const struct http_options *o, struct error *e)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, r;

	if (!o->socket_path) {
		fd = socket(o->addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int one = 1;
		if (fd < 0)
			return error_set(e, -errno, "cannot make a socket: %s", strerror(errno));
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (o->addr->sa_family == AF_INET6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		if (bind(fd, o->addr, o->addrlen) < 0 || listen(fd, 128) < 0) {
			r = -errno;
			close(fd);
			return error_set(e, r, "cannot listen there: %s", strerror(-r));
		}
		return fd;
	}
	if (strlen(o->socket_path) >= sizeof(sa.sun_path))
		return error_set(e, -ENAMETOOLONG, "%s: a Unix socket's path has at most %zu bytes",
				 o->socket_path, sizeof(sa.sun_path) - 1);
	strcpy(sa.sun_path, o->socket_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return error_set(e, -errno, "cannot make a socket: %s", strerror(errno));
	/* A socket left by a server that died is replaced; a live one, or
	 * anything that is not a socket, is not. */
	struct stat st;
	if (lstat(o->socket_path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			close(fd);
			return error_set(e, -EEXIST, "%s exists and is not a socket",
					 o->socket_path);
		}
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			close(fd);
			return error_set(e, -EADDRINUSE, "a server listens on %s already",
					 o->socket_path);
		}
		unlink(o->socket_path);
	}
	mode_t old = umask(0177); /* the socket is 0600 */
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || listen(fd, 128) < 0) {
		r = -errno;
		close(fd);
		return error_set(e, r, "cannot listen on %s: %s", o->socket_path, strerror(-r));
	}
	return fd;
}

static void server_free(struct http_server *srv)
{
	free(srv->socket_path);
	free(srv->services);
	free(srv);
}

int http_start(const struct http_options *o, struct http_server **out, struct error *e)
{
	struct http_server *srv = calloc(1, sizeof(*srv));

	if (!srv || !o->nservices ||
	    !(srv->services = calloc(o->nservices, sizeof(*srv->services))) ||
	    (o->socket_path && !(srv->socket_path = strdup(o->socket_path)))) {
		if (srv)
			server_free(srv);
		return error_set(e, o->nservices ? -ENOMEM : -EINVAL,
				 o->nservices ? "out of memory" : "no service to serve");
	}
	memcpy(srv->services, o->services, o->nservices * sizeof(*srv->services));
	srv->nservices = o->nservices;
	if (o->tls_cert && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
		server_free(srv);
		return error_set(e, -ENOTSUP, "this libmicrohttpd has no TLS");
	}
	int lfd = listen_on(o, e);
	if (lfd < 0) {
		server_free(srv);
		return lfd;
	}
	if (!o->socket_path) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		if (getsockname(lfd, (struct sockaddr *)&ss, &len) == 0)
			srv->port = ntohs(ss.ss_family == AF_INET6
						  ? ((struct sockaddr_in6 *)&ss)->sin6_port
						  : ((struct sockaddr_in *)&ss)->sin_port);
	}
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
			 MHD_USE_ITC | MHD_USE_ERROR_LOG | (o->tls_cert ? MHD_USE_TLS : 0);
	struct MHD_OptionItem tls[] = {
		{ o->tls_cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0,
		  (void *)o->tls_cert },
		{ MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)o->tls_key },
		{ MHD_OPTION_END, 0, NULL },
	};
	/* The logger first: MHD says so for the options that follow. */
	srv->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, srv, MHD_OPTION_EXTERNAL_LOGGER,
				  on_mhd_log, srv, MHD_OPTION_LISTEN_SOCKET, lfd,
				  MHD_OPTION_CONNECTION_LIMIT, o->max_connections,
				  MHD_OPTION_CONNECTION_TIMEOUT,
				  (unsigned)HTTP_CONNECTION_TIMEOUT_S, MHD_OPTION_NOTIFY_COMPLETED,
				  on_completed, srv, MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
	if (!srv->d) {
		close(lfd);
		if (o->socket_path)
			unlink(o->socket_path);
		server_free(srv);
		return error_set(e, -EIO, "libmicrohttpd did not start%s",
				 o->tls_cert ? " (is the key the certificate's?)" : "");
	}
	*out = srv;
	return 0;
}

unsigned http_port(const struct http_server *h)
{
	return h->port;
}

void http_stop(struct http_server *srv)
{
	MHD_stop_daemon(srv->d);
	if (srv->socket_path)
		unlink(srv->socket_path);
	server_free(srv);
}
