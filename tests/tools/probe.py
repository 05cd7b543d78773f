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
        os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
