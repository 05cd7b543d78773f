#!/usr/bin/env python3
"""bomb.py fork NAME | memory [SECONDS] - what a sandbox must contain;
each stops by itself where nothing else stops it. The exec sandbox tests
copy it into a workspace.

fork: up to 2,000 processes named NAME that live 20 s each (a failed
fork is tried again after 1 ms), then 20 s more itself (its command line
holds NAME too: pgrep -f NAME finds them all).
memory: allocates 1 GiB in 64 MiB pieces, waits SECONDS (none without),
then prints "survived"."""
import os, sys, time

if sys.argv[1] == "fork":
    for i in range(2000):
        try:
            if os.fork() == 0:
                os.execlp("sleep", sys.argv[2], "20")
        except OSError:
            time.sleep(0.001)
    time.sleep(20)
elif sys.argv[1] == "memory":
    b = []
    for i in range(16):
        b.append(bytearray(64 << 20))
    if len(sys.argv) > 2:
        time.sleep(float(sys.argv[2]))
    print("survived")
