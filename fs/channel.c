/* channel.c - see channel.h. */
#include "channel.h"

#include <errno.h>
#include <linux/fuse.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

struct channel {
	uint64_t init_unique;	/* the INIT request's, until its reply */
	bool offered;		/* the kernel offers KILLPRIV_V2 */
	bool killpriv;		/* negotiated: we drop set-id bits and caps */
};

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

		c->init_unique = in->unique;
		c->offered = init->flags & FUSE_HANDLE_KILLPRIV_V2;
	}
	errno = saved;
	return n;	/* libfuse reads errno, as after read(2) */
}

static ssize_t channel_writev(int fd, struct iovec *iov, int count,
			      void *userdata)
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
		c->init_unique = 0;
	}
	n = writev(fd, iov, count);
	return n;	/* libfuse reads errno, as after writev(2) */
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

int channel_install(struct fuse_session *se, struct view *v)
{
	struct channel *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	v->channel = c;		/* before the hooks, which find it there */
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
