#!/usr/bin/env python3
"""probe.py NAME... - tries calls that a sandbox must refuse and prints
"NAME ok" (the call worked) or "NAME ERRNO-NAME" for each. Every call is
made with arguments that do no harm if it is allowed: a key in the
process's own keyring, a software perf counter on itself, a read-only
personality query beside the refused flag, stdin (/dev/null) for the
terminal ioctls. The exec sandbox tests copy it into a workspace."""
import ctypes
import errno
import os
import signal
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

# x86_64 numbers.
NR = {
    "add_key": 248, "request_key": 249, "keyctl": 250, "perf_event_open": 298,
    "userfaultfd": 323, "bpf": 321, "unshare": 272, "mount": 165, "umount2": 166,
    "pivot_root": 155, "kexec_load": 246, "init_module": 175, "finit_module": 313,
    "delete_module": 176, "reboot": 169, "swapon": 167, "settimeofday": 164,
    "clock_settime": 227, "personality": 135, "open_by_handle_at": 304,
    "ioctl": 16, "clone3": 435, "io_uring_setup": 425, "setns": 308, "acct": 163,
    "open_tree": 428, "fsopen": 430, "move_mount": 429, "mknodat": 259,
    "name_to_handle_at": 303, "lookup_dcookie": 212, "quotactl": 179,
    "socket": 41, "pidfd_open": 434, "pidfd_getfd": 438, "process_madvise": 440,
    "get_mempolicy": 239, "set_mempolicy": 238, "set_mempolicy_home_node": 450,
    "mbind": 237, "move_pages": 279, "migrate_pages": 256,
}
CLONE_NEWUSER, CLONE_NEWNS = 0x10000000, 0x00020000


def call(name, *args):
    ctypes.set_errno(0)
    conv = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    r = libc.syscall(ctypes.c_long(NR[name]), *conv)
    return r, ctypes.get_errno()


def perf_event_open():
    attr = (ctypes.c_uint8 * 128)()
    ctypes.memset(attr, 0, 128)
    ctypes.c_uint32.from_buffer(attr, 0).value = 1        # PERF_TYPE_SOFTWARE
    ctypes.c_uint32.from_buffer(attr, 4).value = 128      # size
    ctypes.c_uint64.from_buffer(attr, 8).value = 0        # PERF_COUNT_SW_CPU_CLOCK
    ctypes.c_uint64.from_buffer(attr, 40).value = 1 << 5  # exclude_kernel
    return call("perf_event_open", ctypes.byref(attr), 0, -1, -1, 0)


def own_pidfd():
    return call("pidfd_open", os.getpid(), 0)[0]


def i386_call(nr, *args):
    """The 32-bit system call NR made with int 0x80 from this 64-bit
    process, as any program may: the filter's i386 rules apply. ARGS are
    ints or bytes (copied below 4 GiB, where a 32-bit pointer reaches)."""
    import mmap
    MAP_32BIT = 0x40
    low = mmap.mmap(-1, 4096, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_32BIT,
                    mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    base = ctypes.addressof(ctypes.c_char.from_buffer(low))
    # long f(nr, a, b, c): eax=nr ebx=a ecx=b edx=c; int 0x80; sign-extend
    code = bytes.fromhex("53 89f8 89f3 4989d1 89ca 4489c9 cd80 5b 4863c0 c3")
    low[0:len(code)] = code
    conv, at = [], 2048
    for a in args:
        if isinstance(a, bytes):
            low[at:at + len(a)] = a
            conv.append(base + at)
            at += 256
        else:
            conv.append(a)
    f = ctypes.CFUNCTYPE(ctypes.c_long, *[ctypes.c_long] * 4)(base)
    r = f(nr, *(conv + [0] * (3 - len(conv))))
    return r, -r if r < 0 else 0


def i386_socketcall_socket(family, kind):
    import struct
    return i386_call(102, 1, struct.pack("<3I", family, kind, 0))   # SYS_SOCKET


def probes():
    return {
        "add_key": lambda: call("add_key", b"user", b"sbxprobe", b"x", 1, -2),
        "keyctl": lambda: call("keyctl", 0, -2, 0),
        "request_key": lambda: call("request_key", b"user", b"sbxprobe-none", None, 0),
        "perf_event_open": perf_event_open,
        "userfaultfd": lambda: call("userfaultfd", 1),        # UFFD_USER_MODE_ONLY
        "bpf": lambda: call("bpf", 0, None, 0),
        "unshare_user": lambda: call("unshare", CLONE_NEWUSER),
        "unshare_mount": lambda: call("unshare", CLONE_NEWNS),
        "mount": lambda: call("mount", b"none", b"/tmp", b"tmpfs", 0, None),
        "umount": lambda: call("umount2", b"/tmp", 0),
        "pivot_root": lambda: call("pivot_root", b"/tmp", b"/tmp"),
        "open_tree": lambda: call("open_tree", -100, b"/tmp", 1),
        "fsopen": lambda: call("fsopen", b"tmpfs", 0),
        "kexec_load": lambda: call("kexec_load", 0, 0, None, 0),
        "init_module": lambda: call("init_module", None, 0, b""),
        "finit_module": lambda: call("finit_module", -1, b"", 0),
        "delete_module": lambda: call("delete_module", b"sbxprobe", 0),
        "reboot": lambda: call("reboot", 0, 0, 0, None),
        "swapon": lambda: call("swapon", b"/nonexistent", 0),
        "settimeofday": lambda: call("settimeofday", None, None),
        "clock_settime": lambda: call("clock_settime", 0, None),
        "personality": lambda: call("personality", 0x0040000),  # ADDR_NO_RANDOMIZE
        "personality_query": lambda: call("personality", 0xffffffff),
        "open_by_handle_at": lambda: call("open_by_handle_at", -100, None, 0),
        "tiocsti": lambda: call("ioctl", 0, 0x5412, b"x"),
        "tioclinux": lambda: call("ioctl", 0, 0x541C, b"\x00"),
        "clone3": lambda: call("clone3", None, 0),
        "io_uring_setup": lambda: call("io_uring_setup", 1, None),
        "setns": lambda: call("setns", -1, 0),
        "acct": lambda: call("acct", None),
        "mknod_char": lambda: call("mknodat", -100, b"/tmp/sbxprobe-null",
                                   0o20666, os.makedev(1, 3)),
        "quotactl": lambda: call("quotactl", 0, None, 0, None),
        # AF_VSOCK (SOCK_STREAM), AF_ALG (SOCK_SEQPACKET), AF_UNIX and AF_INET
        "socket_vsock": lambda: call("socket", 40, 1, 0),
        "socket_alg": lambda: call("socket", 38, 5, 0),
        "socket_unix": lambda: call("socket", 1, 1, 0),
        "socket_inet": lambda: call("socket", 2, 2, 0),
        "i386_getpid": lambda: i386_call(20),
        "i386_socket_vsock": lambda: i386_call(359, 40, 1, 0),
        "i386_socket_unix": lambda: i386_call(359, 1, 1, 0),
        "i386_socketcall_vsock": lambda: i386_socketcall_socket(40, 1),
        # a copy of its own stdin, advice on none of its own pages
        "pidfd_getfd": lambda: call("pidfd_getfd", own_pidfd(), 0, 0),
        "process_madvise": lambda: call("process_madvise", own_pidfd(), None, 0, 20, 0),
        "get_mempolicy": lambda: call("get_mempolicy", None, None, 0, None, 0),
        "set_mempolicy": lambda: call("set_mempolicy", 0, None, 0),     # MPOL_DEFAULT
        "set_mempolicy_home_node": lambda: call("set_mempolicy_home_node", 0, 0, 0, 0),
        "mbind": lambda: call("mbind", None, 0, 0, None, 0, 0),
        "move_pages": lambda: call("move_pages", 0, 0, None, None, None, 0),
        "migrate_pages": lambda: call("migrate_pages", 0, 0, None, None),
    }


def main():
    table = probes()
    for name in sys.argv[1:]:
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            # Each in a process of its own: an unshare that works must
            # not lend its namespace to the next probe.
            r, e = table[name]()
            print(name, "ok" if r >= 0 else errno.errorcode.get(e, str(e)), flush=True)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        # A kernel without the i386 ABI (int 0x80 disabled, as in some
        # confidential or micro VMs) kills the caller: said, not lost.
        if os.WIFSIGNALED(status):
            print(name, "killed by", signal.Signals(os.WTERMSIG(status)).name, flush=True)


if __name__ == "__main__":
    main()
