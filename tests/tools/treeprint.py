#!/usr/bin/env python3
"""treeprint.py - a fingerprint of directory trees, one line per path, for
the undo tests (tests/integ/test_undo.c): two prints are equal exactly
when the trees are.

    treeprint.py [--dir-mtimes] [--skip REL]... ROOT...
    treeprint.py --between BEFORE AFTER [--fields F,...] ROOT...

For every path under each ROOT (the root itself included), sorted: the
path (ROOT's last component, then the path below it; bytes that are not
printable ASCII, a space, a backslash are written \\xNN), a tab, then its
type, mode, owner, group and extended attributes (every namespace, POSIX
ACLs among them, sorted; symlinks not followed); for a file its size,
SHA-256 and link count, for a symlink its target's SHA-256; the
modification time (ns) of files and symlinks, and with --dir-mtimes of
directories too (undo restores those as well). --skip leaves out a path
below a root (ROOT's last component/REL) and what is under it.

--between compares the trees now with two prints made before (files
BEFORE and AFTER, made without --dir-mtimes): every path must be as one
of them has it (absent counts as a state), comparing only the FIELDS
given (default: all but mtime of directories, e.g. type,size,sha256,
target). Prints each path that is neither, and exits 1 if there is one.
"""
import hashlib, os, stat, sys


def esc(b):
    out = []
    for c in b:
        if 0x21 <= c < 0x7F and c != 0x5C:
            out.append(chr(c))
        else:
            out.append("\\x%02x" % c)
    return "".join(out)


def xattrs(path):
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:
        return "-"
    parts = []
    for n in sorted(names):
        try:
            v = os.getxattr(path, n, follow_symlinks=False)
        except OSError as e:
            v = ("<%s>" % e.strerror).encode()
        parts.append("%s=%s" % (n, v.hex()))
    return ",".join(parts) or "-"


def line(path, st, dir_mtimes):
    kind = stat.S_IFMT(st.st_mode)
    f = ["type=%s" % {stat.S_IFREG: "file", stat.S_IFDIR: "dir", stat.S_IFLNK: "symlink",
                      stat.S_IFIFO: "fifo", stat.S_IFSOCK: "socket", stat.S_IFCHR: "chr",
                      stat.S_IFBLK: "blk"}.get(kind, oct(kind)),
         "mode=%04o" % stat.S_IMODE(st.st_mode), "uid=%d" % st.st_uid, "gid=%d" % st.st_gid]
    if kind == stat.S_IFREG:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        f += ["size=%d" % st.st_size, "sha256=%s" % h.hexdigest(), "nlink=%d" % st.st_nlink]
    elif kind == stat.S_IFLNK:
        f += ["size=%d" % st.st_size,
              "target=%s" % hashlib.sha256(os.fsencode(os.readlink(path))).hexdigest()]
    if kind != stat.S_IFDIR or dir_mtimes:
        f.append("mtime=%d" % st.st_mtime_ns)
    f.append("xattrs=%s" % xattrs(path))
    return " ".join(f)


def walk(root, dir_mtimes, skip, out):
    label = os.fsencode(os.path.basename(os.path.normpath(root)))

    def visit(path, rel):
        if rel in skip:
            return
        st = os.lstat(path)
        out.append((rel, line(path, st, dir_mtimes)))
        if stat.S_ISDIR(st.st_mode):
            for name in sorted(os.listdir(os.fsencode(path))):
                visit(os.path.join(os.fsencode(path), name), rel + b"/" + name)

    visit(os.fsencode(root), label)


def parse(text):
    """A print as {path: {field: value}}."""
    out = {}
    for l in text.splitlines():
        path, _, rest = l.partition("\t")
        out[path] = dict(f.split("=", 1) for f in rest.split(" "))
    return out


def between(before, after, fields, now):
    """The paths of NOW (a print) that are neither as in BEFORE nor as in
    AFTER, as lines to print."""
    b, a, n = parse(before), parse(after), parse(now)

    def pick(d, path):
        if path not in d:
            return None
        return {k: v for k, v in d[path].items() if not fields or k in fields}

    bad = []
    for path in sorted(set(b) | set(a) | set(n)):
        cur = pick(n, path)
        if cur != pick(b, path) and cur != pick(a, path):
            bad.append("%s: now %s; before %s; after %s" % (path, cur, pick(b, path), pick(a, path)))
    return bad


def main():
    args, dir_mtimes, skip = sys.argv[1:], False, set()
    roots, compare, fields = [], None, None
    i = 0
    while i < len(args):
        if args[i] == "--between":
            compare = (open(args[i + 1]).read(), open(args[i + 2]).read())
            i += 2
        elif args[i] == "--fields":
            i += 1
            fields = set(args[i].split(","))
        elif args[i] == "--dir-mtimes":
            dir_mtimes = True
        elif args[i] == "--skip":
            i += 1
            skip.add(os.fsencode(args[i]))
        elif args[i] in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            roots.append(args[i])
        i += 1
    if not roots:
        print(__doc__, file=sys.stderr)
        return 2
    out = []
    for r in roots:
        if os.path.lexists(r):
            walk(r, dir_mtimes, skip, out)
    text = "".join("%s\t%s\n" % (esc(rel), t) for rel, t in sorted(out))
    if compare:
        bad = between(compare[0], compare[1], fields, text)
        for l in bad:
            print(l)
        return 1 if bad else 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
