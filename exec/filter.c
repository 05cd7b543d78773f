/* filter.c - see filter.h. */
#include "filter.h"
#include "common/cleanup.h"

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <sys/socket.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Grouped as Docker's profile groups them by the capability it asks for;
 * a container of Docker's default has none of these. */
const char *const filter_refused[] = {
	/* the kernel itself: modules, kexec, reboot, swap, accounting */
	"init_module",
	"finit_module",
	"delete_module",
	"create_module",
	"query_module",
	"get_kernel_syms",
	"kexec_load",
	"kexec_file_load",
	"reboot",
	"swapon",
	"swapoff",
	"acct",
	"syslog",
	/* mounts and namespaces (clone and unshare: below) */
	"mount",
	"umount",
	"umount2",
	"pivot_root",
	"chroot",
	"setns",
	"open_tree",
	"move_mount",
	"fsopen",
	"fsconfig",
	"fsmount",
	"fspick",
	"mount_setattr",
	/* the kernel keyring: shared across the host, not namespaced */
	"add_key",
	"keyctl",
	"request_key",
	/* tracing and raw kernel interfaces */
	"bpf",
	"perf_event_open",
	"userfaultfd",
	"lookup_dcookie",
	"kcmp",
	"fanotify_init",
	/* another process's descriptors, or its memory's placement: Docker
	 * asks CAP_SYS_PTRACE and CAP_SYS_NICE for them */
	"pidfd_getfd",
	"process_madvise",
	"get_mempolicy",
	"set_mempolicy",
	"set_mempolicy_home_node",
	"mbind",
	"move_pages",
	"migrate_pages",
	"io_uring_setup",
	"io_uring_enter",
	"io_uring_register",
	/* file handles: open_by_handle_at walks past every mount (shocker) */
	"open_by_handle_at",
	/* time, host name, quotas, raw I/O, obsolete calls */
	"settimeofday",
	"stime",
	"clock_settime",
	"clock_adjtime",
	"sethostname",
	"setdomainname",
	"quotactl",
	"quotactl_fd",
	"iopl",
	"ioperm",
	"nfsservctl",
	"uselib",
	"ustat",
	"sysfs",
	"_sysctl",
	"vm86",
	"vm86old",
	"vhangup",
	NULL,
};

static int deny(scmp_filter_ctx ctx, int err, const char *name, unsigned n,
		const struct scmp_arg_cmp *cmp)
{
	int nr = seccomp_syscall_resolve_name(name);

	if (nr == __NR_SCMP_ERROR)
		return 0; /* no such call on this architecture */
	int r = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO((unsigned)err), nr, n, cmp);
	/* A call some architectures of the filter lack is fine. */
	return r == -EDOM || r == -EOPNOTSUPP ? 0 : r;
}

/* clone and unshare: no new namespace of any kind (a flag set). */
static int deny_namespaces(scmp_filter_ctx ctx)
{
	static const unsigned long flags[] = {
		CLONE_NEWNS,  CLONE_NEWUTS, CLONE_NEWIPC,    CLONE_NEWUSER,
		CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP, 0x00000080 /* CLONE_NEWTIME */,
	};
	int r = 0;

	for (size_t i = 0; i < sizeof(flags) / sizeof(*flags) && r == 0; i++) {
		struct scmp_arg_cmp a0 = SCMP_A0(SCMP_CMP_MASKED_EQ, flags[i], flags[i]);
		/* unshare's flags are its first argument; so are clone's on
		 * x86 (s390 swaps them, and is not a target). */
		if ((r = deny(ctx, EPERM, "unshare", 1, &a0)) == 0)
			r = deny(ctx, EPERM, "clone", 1, &a0);
	}
	return r;
}

/* socket: only the families of Flatpak's list (AF_UNSPEC, AF_UNIX,
 * AF_INET, AF_INET6, AF_NETLINK); others fail with EAFNOSUPPORT, as on a
 * kernel without them. AF_VSOCK is not namespaced (on a VM it is the
 * hypervisor's channel), AF_ALG is kernel crypto with a record of
 * exploits. A family is an int: a value with a bit above the 32nd set
 * falls in the last range and is refused too. On i386 libseccomp turns
 * these rules into a refusal of socketcall's SOCKET operation as a whole
 * (its arguments are in memory, where no filter reads them); 32-bit
 * programs make sockets with the socket call itself (Linux 4.3 on). */
static int deny_socket_families(scmp_filter_ctx ctx)
{
	const uint32_t allowed = 1u << AF_UNSPEC | 1u << AF_UNIX | 1u << AF_INET | 1u << AF_INET6 |
				 1u << AF_NETLINK;
	struct scmp_arg_cmp above = SCMP_A0(SCMP_CMP_GT, AF_NETLINK);
	int r = deny(ctx, EAFNOSUPPORT, "socket", 1, &above);

	for (unsigned family = 0; family < AF_NETLINK && r == 0; family++) {
		struct scmp_arg_cmp a0 = SCMP_A0(SCMP_CMP_EQ, family);
		if (!(allowed & 1u << family))
			r = deny(ctx, EAFNOSUPPORT, "socket", 1, &a0);
	}
	return r;
}

/* personality: only what Docker allows (PER_LINUX, PER_LINUX32, with or
 * without UNAME26, and the 0xffffffff query). A rule compares an argument
 * once, so the refused set is spelled as patterns of two bits: for each
 * bit B outside PER_LINUX32 and UNAME26, "B set and the next such bit
 * clear". Together they match every value with any such bit set except
 * those with all of them set, which leaves three values to refuse by
 * name, and the four allowed. */
static int deny_personalities(scmp_filter_ctx ctx)
{
	const uint32_t allowed_bits = 0x0008 | 0x20000;
	int bits[32], n = 0, r = 0;

	for (int b = 0; b < 32; b++)
		if (!(allowed_bits & (1u << b)))
			bits[n++] = b;
	for (int i = 0; i < n && r == 0; i++) {
		uint64_t set = 1ull << bits[i], clear = 1ull << bits[(i + 1) % n];
		struct scmp_arg_cmp a0 = SCMP_A0(SCMP_CMP_MASKED_EQ, set | clear, set);
		r = deny(ctx, EPERM, "personality", 1, &a0);
	}
	const uint64_t all = 0xffffffffu & ~allowed_bits;
	const uint64_t odd[] = { all, all | 0x0008, all | 0x20000 };
	for (size_t i = 0; i < 3 && r == 0; i++) {
		struct scmp_arg_cmp a0 = SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, odd[i]);
		r = deny(ctx, EPERM, "personality", 1, &a0);
	}
	return r;
}

static int build(scmp_filter_ctx ctx)
{
	int r;

	/* The same rules for 32-bit callers; an architecture the filter
	 * does not know is killed (libseccomp's default). */
	if ((r = seccomp_arch_add(ctx, SCMP_ARCH_X86)) < 0 && r != -EEXIST && r != -EDOM)
		return r;
	if ((r = seccomp_arch_add(ctx, SCMP_ARCH_X32)) < 0 && r != -EEXIST && r != -EDOM)
		return r;
	for (size_t i = 0; filter_refused[i]; i++)
		if ((r = deny(ctx, EPERM, filter_refused[i], 0, NULL)) < 0)
			return r;
	if ((r = deny_namespaces(ctx)) < 0 || (r = deny(ctx, ENOSYS, "clone3", 0, NULL)) < 0)
		return r;
	/* Pushing input into a terminal, or a console's selection. */
	struct scmp_arg_cmp sti = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI);
	struct scmp_arg_cmp linux_ = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX);
	if ((r = deny(ctx, EPERM, "ioctl", 1, &sti)) < 0 ||
	    (r = deny(ctx, EPERM, "ioctl", 1, &linux_)) < 0)
		return r;
	if ((r = deny_socket_families(ctx)) < 0)
		return r;
	return deny_personalities(ctx);
}

int filter_program(void **prog, size_t *len, char *err, size_t errlen)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	_cleanup_(closep) int fd = -1;
	struct stat st;
	int r;

	*prog = NULL;
	*len = 0;
	if (!ctx) {
		snprintf(err, errlen, "libseccomp cannot start a filter");
		return -ENOMEM;
	}
	r = build(ctx);
	if (r == 0 && (fd = memfd_create("sbx-seccomp", MFD_CLOEXEC)) < 0)
		r = -errno;
	if (r == 0)
		r = seccomp_export_bpf(ctx, fd);
	seccomp_release(ctx);
	if (r == 0 && fstat(fd, &st) < 0)
		r = -errno;
	if (r == 0 && !(*prog = malloc((size_t)st.st_size)))
		r = -ENOMEM;
	if (r == 0 && pread(fd, *prog, (size_t)st.st_size, 0) != st.st_size)
		r = -EIO;
	if (r < 0) {
		free(*prog);
		*prog = NULL;
		snprintf(err, errlen, "cannot build the seccomp filter: %s", strerror(-r));
		return r;
	}
	*len = (size_t)st.st_size;
	return 0;
}
