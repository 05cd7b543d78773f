#!/usr/bin/env python3
"""stress.py DIR SEED SECONDS - random file operations on 21 shared files
in DIR for SECONDS: overwrite, read, read-then-write in place (sometimes
fsynced), append, rename, unlink, truncate, stat. Prints
"SEED OPS {errno: count}" and exits 1 on an errno other than ENOENT
(a file another process removed) and EACCES (the read-before-write gate
refusing a write after another process changed the file)."""
import errno, os, random, sys, time

w, seed, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
rnd = random.Random(seed)
end = time.time() + seconds
ops, errs = 0, {}
while time.time() < end:
    f = os.path.join(w, "f%d" % rnd.randint(0, 20))
    op = rnd.randint(0, 7)
    try:
        if op == 0:
            with open(f, "w") as h:
                h.write("x" * rnd.randint(0, 5000))
        elif op == 1:
            open(f).read()
        elif op == 2:
            fd = os.open(f, os.O_RDWR | os.O_CREAT)
            try:
                os.pread(fd, 10, 0)
                os.pwrite(fd, b"y" * 100, rnd.randint(0, 3000))
                if rnd.random() < 0.3:
                    os.fsync(fd)
            finally:
                os.close(fd)
        elif op == 3:
            with open(f, "a") as h:
                h.write("line\n")
        elif op == 4:
            os.rename(f, os.path.join(w, "f%d" % rnd.randint(0, 20)))
        elif op == 5:
            os.unlink(f)
        elif op == 6:
            os.truncate(f, rnd.randint(0, 100))
        else:
            os.stat(f)
        ops += 1
    except OSError as e:
        errs[e.errno] = errs.get(e.errno, 0) + 1
print(seed, ops, errs)
bad = set(errs) - {errno.ENOENT, errno.EACCES}
if bad:
    print("stress.py: unexpected errors:", {errno.errorcode[e]: errs[e] for e in bad},
          file=sys.stderr)
sys.exit(1 if bad else 0)
