#!/usr/bin/env python3
"""fsrand.py - differential random operations, native directory against
a view (in the spirit of JuiceFS's fsrand).

    fsrand.py NATIVE VIEW [--seeds A-B | --seed N] [--ops K] [--reads]

For each seed, applies one seeded random sequence of operations (create,
write at offsets, open with O_TRUNC or O_APPEND, truncate, rename with
and without RENAME_NOREPLACE / RENAME_EXCHANGE, link, unlink, mkdir,
rmdir, symlink, chmod, utimensat, setxattr, fallocate incl. punching
holes) to a fresh directory under NATIVE and one under VIEW, compares
every result and errno, then the two trees (types, content, mode, size,
link counts, symlink targets, user xattrs). --reads reads a file before
each change to it, as an agent must under the read-before-write gate.

On a difference it prints the seed, the operation and both results, then
searches the shortest prefix of the sequence that still differs and
prints it; exit status 1. Prints "N seeds, K operations each: identical"
and exits 0 otherwise.
"""
import ctypes, errno, hashlib, os, random, shutil, stat, sys

libc = ctypes.CDLL(None, use_errno=True)
RENAME_NOREPLACE, RENAME_EXCHANGE = 1, 2
FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE = 1, 2
AT_FDCWD = -100

NAMES = ["a", "b", "c", "d", "d/a", "d/b", "d/e", "d/e/a", "d/e/b", "f", "f/a"]
XATTRS = ["user.k1", "user.k2"]


def renameat2(old, new, flags):
    r = libc.renameat2(AT_FDCWD, old.encode(), AT_FDCWD, new.encode(), flags)
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def fallocate(fd, mode, off, length):
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
    if libc.fallocate(fd, mode, off, length) < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def make_ops(seed, count, reads):
    """The operation sequence of SEED: a list of (name, args)."""
    rnd = random.Random(seed)
    ops = []
    for _ in range(count):
        p, q = rnd.choice(NAMES), rnd.choice(NAMES)
        kind = rnd.choice(["create", "create", "write", "write", "append", "trunc_open",
                           "truncate", "rename", "rename", "link", "unlink", "mkdir",
                           "mkdir", "rmdir", "symlink", "chmod", "utime", "setxattr",
                           "fallocate", "punch"])
        if reads and kind in ("write", "append", "trunc_open", "truncate", "fallocate",
                              "punch"):
            ops.append(("read", (p,)))
        if kind == "create":
            ops.append((kind, (p, rnd.choice([0o644, 0o600, 0o755]))))
        elif kind in ("write", "append"):
            data = bytes(rnd.getrandbits(8) for _ in range(rnd.choice([1, 10, 100, 5000])))
            ops.append((kind, (p, rnd.randrange(0, 20000), data)))
        elif kind == "truncate":
            ops.append((kind, (p, rnd.choice([0, 1, 100, 4096, 70000]))))
        elif kind == "rename":
            ops.append((kind, (p, q, rnd.choice([0, 0, RENAME_NOREPLACE, RENAME_EXCHANGE]))))
        elif kind == "link":
            ops.append((kind, (p, q)))
        elif kind == "symlink":
            ops.append((kind, (rnd.choice(NAMES + ["../x", "nowhere"]), q)))
        elif kind == "chmod":
            ops.append((kind, (p, rnd.choice([0o644, 0o600, 0o755, 0o700, 0o444]))))
        elif kind == "utime":
            ops.append((kind, (p, rnd.randrange(10**18), rnd.randrange(10**18))))
        elif kind == "setxattr":
            ops.append((kind, (p, rnd.choice(XATTRS), bytes(rnd.getrandbits(8) for _ in range(8)))))
        elif kind in ("fallocate", "punch"):
            ops.append((kind, (p, rnd.randrange(0, 20000), rnd.choice([1, 4096, 10000]))))
        else:
            ops.append((kind, (p,)))
    return ops


def apply(kind, args):
    """Runs one operation in the current directory; its result, or its
    errno's name."""
    try:
        if kind == "create":
            os.close(os.open(args[0], os.O_CREAT | os.O_EXCL | os.O_WRONLY, args[1]))
            return "ok"
        if kind == "read":
            fd = os.open(args[0], os.O_RDONLY)
            try:
                return hashlib.sha256(os.read(fd, 1 << 20)).hexdigest()[:12]
            finally:
                os.close(fd)
        if kind in ("write", "append"):
            fd = os.open(args[0], os.O_WRONLY | (os.O_APPEND if kind == "append" else 0))
            try:
                return os.write(fd, args[2]) if kind == "append" else os.pwrite(fd, args[2], args[1])
            finally:
                os.close(fd)
        if kind == "trunc_open":
            os.close(os.open(args[0], os.O_WRONLY | os.O_TRUNC))
            return "ok"
        if kind == "truncate":
            os.truncate(args[0], args[1])
        elif kind == "rename":
            renameat2(args[0], args[1], args[2])
        elif kind == "link":
            os.link(args[0], args[1])
        elif kind == "unlink":
            os.unlink(args[0])
        elif kind == "mkdir":
            os.mkdir(args[0], 0o755)
        elif kind == "rmdir":
            os.rmdir(args[0])
        elif kind == "symlink":
            os.symlink(args[0], args[1])
        elif kind == "chmod":
            os.chmod(args[0], args[1])
        elif kind == "utime":
            os.utime(args[0], ns=(args[1], args[2]))
        elif kind == "setxattr":
            os.setxattr(args[0], args[1], args[2])
        elif kind in ("fallocate", "punch"):
            fd = os.open(args[0], os.O_WRONLY)
            try:
                mode = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE if kind == "punch" else 0
                fallocate(fd, mode, args[1], args[2])
            finally:
                os.close(fd)
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def tree(root):
    """What a tree holds, as comparable text lines."""
    lines = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            st = os.lstat(path)
            kind = stat.S_IFMT(st.st_mode)
            line = [rel, oct(kind), oct(stat.S_IMODE(st.st_mode)), "nlink=%d" % st.st_nlink]
            if stat.S_ISLNK(st.st_mode):
                line.append("-> " + os.readlink(path))
            elif stat.S_ISREG(st.st_mode):
                with open(path, "rb") as f:
                    line += ["size=%d" % st.st_size, hashlib.sha256(f.read()).hexdigest()[:12]]
            if not stat.S_ISLNK(st.st_mode):
                try:
                    for x in sorted(os.listxattr(path)):
                        if x.startswith("user."):
                            line.append("%s=%s" % (x, os.getxattr(path, x).hex()))
                except OSError:
                    pass
            lines.append(" ".join(l for l in line if l))
    return lines


def run(native, view, seed, ops):
    """Applies OPS in fresh directories; None, or the first difference."""
    dirs = []
    for base in (native, view):
        d = os.path.join(base, "fsrand-%d" % seed)
        if os.path.lexists(d):
            shutil.rmtree(d)
        os.mkdir(d)
        dirs.append(d)
    here = os.getcwd()
    try:
        for i, (kind, args) in enumerate(ops):
            results = []
            for d in dirs:
                os.chdir(d)
                results.append(apply(kind, args))
            if results[0] != results[1]:
                return i, "%s%r: native %r, view %r" % (kind, args[:2], results[0], results[1])
        os.chdir(here)
        a, b = tree(dirs[0]), tree(dirs[1])
        if a != b:
            diff = [("- " + x) for x in a if x not in b] + [("+ " + x) for x in b if x not in a]
            return len(ops), "trees differ (- native, + view):\n  " + "\n  ".join(diff[:20])
        return None
    finally:
        os.chdir(here)
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)


def shortest(native, view, seed, ops, at):
    """The shortest prefix of OPS that still differs (at most AT+1 long),
    then without each operation the difference does not need."""
    lo, hi = 1, min(at + 1, len(ops))
    while lo < hi:
        mid = (lo + hi) // 2
        if run(native, view, seed, ops[:mid]):
            hi = mid
        else:
            lo = mid + 1
    ops = ops[:hi]
    i = len(ops) - 2
    while i >= 0:
        fewer = ops[:i] + ops[i + 1:]
        if run(native, view, seed, fewer):
            ops = fewer
        i -= 1
    return ops


def main():
    args = sys.argv[1:]
    if len(args) < 2 or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if args and args[0] in ("-h", "--help") else 2
    native, view = args[0], args[1]
    seeds, count, reads = range(1, 11), 200, False
    i = 2
    while i < len(args):
        if args[i] == "--seeds":
            a, b = args[i + 1].split("-")
            seeds = range(int(a), int(b) + 1)
            i += 2
        elif args[i] == "--seed":
            seeds = [int(args[i + 1])]
            i += 2
        elif args[i] == "--ops":
            count = int(args[i + 1])
            i += 2
        elif args[i] == "--reads":
            reads = True
            i += 1
        else:
            print("fsrand: unknown option %s" % args[i], file=sys.stderr)
            return 2
    for seed in seeds:
        ops = make_ops(seed, count, reads)
        bad = run(native, view, seed, ops)
        if bad:
            at, what = bad
            print("fsrand: seed %d differs at operation %d: %s" % (seed, at, what))
            prefix = shortest(native, view, seed, ops, at)
            print("a shortest failing sequence (%d operations):" % len(prefix))
            for kind, a in prefix:
                print("  %s %r" % (kind, tuple(x if not isinstance(x, bytes) else "<%d bytes>" % len(x) for x in a)))
            return 1
    print("%d seeds, %d operations each: identical" % (len(seeds), count))
    return 0


if __name__ == "__main__":
    sys.exit(main())
