/* channel.c - see channel.h. */
#include "channel.h"

#include <errno.h>
#include <linux/fuse.h>
#include <stddef.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static ssize_t channel_read(int fd, void *buf, size_t len, void *userdata)
{
	struct view *v = userdata;
	ssize_t n = read(fd, buf, len);
	const struct fuse_in_header *in = buf;
	int saved = errno;

	/* INIT is the first request and nothing else is sent before its
	 * reply, so plain fields are enough. */
	if (n >= (ssize_t)(sizeof(*in) + offsetof(struct fuse_init_in, flags2)) &&
	    in->opcode == FUSE_INIT) {
		const struct fuse_init_in *init = (const void *)(in + 1);

		v->init_unique = in->unique;
		v->killpriv_offered = init->flags & FUSE_HANDLE_KILLPRIV_V2;
	}
	errno = saved;
	return n;	/* libfuse reads errno, as after read(2) */
}

static ssize_t channel_writev(int fd, struct iovec *iov, int count,
			      void *userdata)
{
	struct view *v = userdata;
	const struct fuse_out_header *out = iov[0].iov_base;
	ssize_t n;

	if (v->init_unique && count >= 2 && iov[0].iov_len >= sizeof(*out) &&
	    out->unique == v->init_unique && out->error == 0 &&
	    iov[1].iov_len >= offsetof(struct fuse_init_out, max_background)) {
		struct fuse_init_out *init = iov[1].iov_base;

		if (v->killpriv_offered) {
			init->flags |= FUSE_HANDLE_KILLPRIV_V2;
			v->killpriv = true;
		}
		v->init_unique = 0;
	}
	n = writev(fd, iov, count);
	return n;	/* libfuse reads errno, as after writev(2) */
}

int channel_install(struct fuse_session *se, struct view *v)
{
	static const struct fuse_custom_io io = {
		.read = channel_read,
		.writev = channel_writev,
	};

	(void)v;	/* reached through the session's userdata */
	return fuse_session_custom_io(se, &io, fuse_session_fd(se));
}
