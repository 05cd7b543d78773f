#!/usr/bin/env python3
"""crashloop.py SBXFS HOME MOUNT ITERATIONS [SEED] - crash consistency.

Each iteration mounts a view of HOME (user and thread "crash") at MOUNT,
rewrites ten files through it as fast as it can (each save a whole new
version, 1 byte to 300 KiB, read first as the gate wants), kills the
daemon with SIGKILL at a random moment, detaches the dead mount, and
checks the backing files: each must be exactly one complete version,
never a mix or a truncation. Then it mounts again: the sweep must leave
no stage behind, and the store must pass SQLite's integrity check.
Prints one line per problem and a summary; exit status 1 on any."""
import os, random, re, signal, sqlite3, subprocess, sys, threading, time

sbxfs, home, mnt, iterations = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rnd = random.Random(int(sys.argv[5]) if len(sys.argv) > 5 else 1)
ws_host = os.path.join(home, "users/crash/threads/crash/user-data/workspace")
stage_dir = os.path.join(home, "users/crash/threads/crash/.stage")
ws_view = os.path.join(mnt, "user-data/workspace")
FILES = ["f%d" % i for i in range(10)]


def content(version):
    size = (version * 7919) % (300 * 1024) + 1
    head = b"v%010d\n" % version
    return (head + bytes([65 + version % 26]) * size)[: max(size, len(head))]


def check_file(path):
    data = open(path, "rb").read()
    m = re.match(rb"v(\d{10})\n", data)
    if not m:
        return "no version header (%d bytes)" % len(data)
    v = int(m.group(1))
    if data != content(v):
        return "version %d is not whole (%d bytes, %d expected)" % (v, len(data), len(content(v)))
    return None


def mount():
    subprocess.run([sbxfs, "--home", home, "--user", "crash", "--thread", "crash", mnt],
                   check=True)


def daemon_pid():
    out = subprocess.run(["pgrep", "-f", "sbxfs --home %s " % home], capture_output=True,
                         text=True).stdout.split()
    return int(out[0]) if out else None


def workload(stop, start_version):
    v = start_version
    while not stop.is_set():
        for name in FILES:
            v += 1
            path = os.path.join(ws_view, name)
            try:
                with open(path, "rb") as f:
                    f.read()
                with open(path, "wb") as f:
                    f.write(content(v))
            except OSError:
                if stop.is_set():
                    return
                time.sleep(0.001)


def main():
    os.makedirs(ws_host, exist_ok=True)
    os.makedirs(mnt, exist_ok=True)
    for i, name in enumerate(FILES):
        with open(os.path.join(ws_host, name), "wb") as f:
            f.write(content(i))
    problems, saved = 0, 0
    for it in range(iterations):
        mount()
        pid = daemon_pid()
        stop = threading.Event()
        t = threading.Thread(target=workload, args=(stop, (it + 1) * 1000000))
        t.start()
        time.sleep(rnd.uniform(0.02, 0.3))
        os.kill(pid, signal.SIGKILL)
        stop.set()
        t.join()
        subprocess.run(["fusermount3", "-u", "-z", mnt], check=False)
        for name in FILES:
            why = check_file(os.path.join(ws_host, name))
            if why:
                print("iteration %d: %s: %s" % (it, name, why))
                problems += 1
            elif open(os.path.join(ws_host, name), "rb").read(11) >= b"v%010d" % ((it + 1) * 1000000):
                saved += 1	# a save of this iteration made it
        mount()
        left = [n for n in os.listdir(stage_dir)] if os.path.isdir(stage_dir) else []
        if left:
            print("iteration %d: the sweep left %s" % (it, left))
            problems += 1
        db = sqlite3.connect(os.path.join(home, "sbx.db"))
        ok = db.execute("PRAGMA integrity_check").fetchone()[0]
        db.close()
        if ok != "ok":
            print("iteration %d: store: %s" % (it, ok))
            problems += 1
        subprocess.run(["fusermount3", "-u", mnt], check=False)
        time.sleep(0.05)
    print("%d crashes: %s" % (iterations, "every file one whole version, no stage left, store intact"
                              if not problems else "%d problems" % problems))
    if saved < iterations:
        print("too few saves happened before the crashes (%d): the test proved little" % saved)
        return 1
    return 1 if problems else 0


sys.exit(main())
