#!/usr/bin/env python3
"""racesave.py FILE STOP - saves FILE over and over as an editor does
(open without following a symlink, read, truncate, write "saved\\n") for
2 s, longer (up to 20 s) until 5 saves got through; every failure
(no file, a symlink, a refused save) is only a try. Then creates STOP
and prints how many saves got through."""
import os, sys, time

path, stop = sys.argv[1], sys.argv[2]
start, n = time.time(), 0
while time.time() - start < 2 or (n < 5 and time.time() - start < 20):
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
    except OSError:
        time.sleep(0.0005)
        continue
    try:
        os.read(fd, 100)
        os.ftruncate(fd, 0)
        os.pwrite(fd, b"saved\n", 0)
        n += 1
    except OSError:
        pass
    finally:
        try:
            os.close(fd)
        except OSError:
            pass
open(stop, "w").close()
print(n)
