/* channel.c - see channel.h. */
#include "channel.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* libfuse 3.17 added FUSE_CAP_HANDLE_KILLPRIV_V2 (and changed
 * fuse_session_custom_io(): the hooks are not built there). FUSE_VERSION
 * is FUSE_MAKE_VERSION(FUSE_MAJOR_VERSION, FUSE_MINOR_VERSION), major *
 * 100 + minor, in 3.14's fuse_common.h and 3.17's alike. */
#define CHANNEL_NEGOTIATES (FUSE_VERSION >= FUSE_MAKE_VERSION(3, 17))

#if !CHANNEL_NEGOTIATES
#include <linux/fuse.h>
#include <stddef.h>
#include <sys/uio.h>
#include <unistd.h>

/* Linux 6.6's, not in Debian 12's <linux/fuse.h> (6.1): bits 32 to 63
 * travel in flags2, with FUSE_INIT_EXT. */
#ifndef FUSE_DIRECT_IO_ALLOW_MMAP
#define FUSE_DIRECT_IO_ALLOW_MMAP (1ULL << 36)
#endif
#endif

struct channel {
#if !CHANNEL_NEGOTIATES
	uint64_t init_unique; /* the INIT request's, until its reply */
	bool offered;	      /* the kernel offers KILLPRIV_V2 */
#endif
	bool killpriv; /* negotiated: we drop set-id bits and caps */
	bool dio_mmap; /* negotiated: DIRECT_IO_ALLOW_MMAP */
};

#if CHANNEL_NEGOTIATES

/* Written against libfuse 3.17's fuse_common.h, where
 * FUSE_CAP_HANDLE_KILLPRIV_V2 is 1 << 21 and off by default; only the
 * 3.14 path below is built and tested here (Debian 12). 3.17 asks for
 * new flags to be set with fuse_set_feature_flag(), into conn->want_ext.
 * But op_init edits conn->want throughout, which libfuse converts into
 * want_ext after init, and 3.17 releases have refused an init that
 * changed both (libfuse issue #1171, pull request #1217). So this flag,
 * which fits in 32 bits, goes through conn->want like the others. */
_Static_assert(FUSE_CAP_HANDLE_KILLPRIV_V2 <= UINT32_MAX &&
		       FUSE_CAP_DIRECT_IO_ALLOW_MMAP <= UINT32_MAX,
	       "FUSE_CAP_HANDLE_KILLPRIV_V2 no longer fits conn->want");

void channel_init(struct channel *c, struct fuse_conn_info *conn)
{
	if (!c)
		return;
	if (conn->capable & FUSE_CAP_HANDLE_KILLPRIV_V2) {
		conn->want |= FUSE_CAP_HANDLE_KILLPRIV_V2;
		c->killpriv = true;
	}
	if (conn->capable & FUSE_CAP_DIRECT_IO_ALLOW_MMAP) {
		conn->want |= FUSE_CAP_DIRECT_IO_ALLOW_MMAP;
		c->dio_mmap = true;
	}
}

static int channel_hooks(struct fuse_session *se)
{
	(void)se; /* libfuse's own I/O does it all */
	return 0;
}

#else /* libfuse < 3.17: on the wire */

static ssize_t channel_read(int fd, void *buf, size_t len, void *userdata)
{
	struct channel *c = ((struct view *)userdata)->channel;
	ssize_t n = read(fd, buf, len);
	const struct fuse_in_header *in = buf;
	int saved = errno;

	/* INIT is the first request and nothing else is sent before its
	 * reply, so plain fields are enough. */
	if (n >= (ssize_t)(sizeof(*in) + offsetof(struct fuse_init_in, flags2)) &&
	    in->opcode == FUSE_INIT) {
		const struct fuse_init_in *init = (const void *)(in + 1);
		bool ext = (init->flags & FUSE_INIT_EXT) &&
			   n >= (ssize_t)(sizeof(*in) + offsetof(struct fuse_init_in, unused));

		c->init_unique = in->unique;
		c->offered = init->flags & FUSE_HANDLE_KILLPRIV_V2;
		c->dio_mmap = ext && (((uint64_t)init->flags2 << 32) & FUSE_DIRECT_IO_ALLOW_MMAP);
	}
	errno = saved;
	return n; /* libfuse reads errno, as after read(2) */
}

static ssize_t channel_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct channel *c = ((struct view *)userdata)->channel;
	const struct fuse_out_header *out = iov[0].iov_base;
	ssize_t n;

	if (c->init_unique && count >= 2 && iov[0].iov_len >= sizeof(*out) &&
	    out->unique == c->init_unique && out->error == 0 &&
	    iov[1].iov_len >= offsetof(struct fuse_init_out, max_background)) {
		struct fuse_init_out *init = iov[1].iov_base;

		if (c->offered) {
			init->flags |= FUSE_HANDLE_KILLPRIV_V2;
			c->killpriv = true;
		}
		/* libfuse answers an extended INIT with FUSE_INIT_EXT and
		 * flags2 (3.14's do_init()); op_init read c->dio_mmap as
		 * what the kernel offered, which is what we take. */
		if (c->dio_mmap && (init->flags & FUSE_INIT_EXT) &&
		    iov[1].iov_len >= offsetof(struct fuse_init_out, unused))
			init->flags2 |= (uint32_t)(FUSE_DIRECT_IO_ALLOW_MMAP >> 32);
		else
			c->dio_mmap = false;
		c->init_unique = 0;
	}
	n = writev(fd, iov, count);
	return n; /* libfuse reads errno, as after writev(2) */
}

void channel_init(struct channel *c, struct fuse_conn_info *conn)
{
	/* libfuse 3.14 has no capability for it: channel_writev() decides,
	 * on the reply op_init is part of. */
	(void)c;
	(void)conn;
}

static int channel_hooks(struct fuse_session *se)
{
	static const struct fuse_custom_io io = {
		.read = channel_read,
		.writev = channel_writev,
	};

	/* The hooks get the session's userdata, the view. */
	return fuse_session_custom_io(se, &io, fuse_session_fd(se));
}

#endif

int channel_install(struct fuse_session *se, struct view *v)
{
	struct channel *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	v->channel = c; /* before the hooks, which find it there */
	r = channel_hooks(se);
	if (r < 0) {
		v->channel = NULL;
		free(c);
	}
	return r;
}

void channel_free(struct channel *c)
{
	free(c);
}

bool channel_killpriv(const struct channel *c)
{
	return c && c->killpriv;
}

bool channel_dio_mmap(const struct channel *c)
{
	return c && c->dio_mmap;
}
