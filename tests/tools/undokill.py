#!/usr/bin/env python3
"""undokill.py - kills `sbx run undo` midway, for the undo crash tests
(tests/integ/test_undo.c).

    undokill.py SBX HOME USER THREAD RUN LINES [LOG]

Starts `SBX --home HOME run undo RUN` and waits until the undo's log of
steps (HOME/users/USER/threads/THREAD/.undo/<its start>/steps, the one
directory there that is new; or LOG, that of an undo being completed)
has at least LINES complete lines, then
kills it with SIGKILL: a wait on a condition, not on a clock. Prints
"killed at N lines" and exits 0; if the undo exited first, prints
"exited with status S at N lines" and exits 3.
"""
import os, signal, subprocess, sys, time


def lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except OSError:
        return 0


def main():
    if len(sys.argv) not in (7, 8):
        print(__doc__, file=sys.stderr)
        return 2
    sbx, home, user, thread, run, want = sys.argv[1:6] + [int(sys.argv[6])]
    log = sys.argv[7] if len(sys.argv) == 8 else None
    undo = os.path.join(home, "users", user, "threads", thread, ".undo")
    old = set(os.listdir(undo)) if os.path.isdir(undo) else set()
    p = subprocess.Popen([sbx, "--home", home, "run", "undo", run],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    n = 0
    while p.poll() is None:
        if log is None and os.path.isdir(undo):
            new = [d for d in os.listdir(undo) if d not in old]
            if new:
                log = os.path.join(undo, new[0], "steps")
        n = lines(log) if log else 0
        if n >= want:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
            print("killed at %d lines" % lines(log))
            return 0
        time.sleep(0.0005)
    print("exited with status %d at %d lines" % (p.returncode, lines(log) if log else 0))
    return 3


if __name__ == "__main__":
    sys.exit(main())
