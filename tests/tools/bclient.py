#!/usr/bin/env python3
"""bclient.py HOME [options] REQUEST... - a raw client of the exec broker
for the tests. Sends each REQUEST (a line, sent as given) on one
connection and prints each final reply (a line with "ok") as JSON, or
every line with --all. --stdin: the requests are the lines of stdin
(after any given). --leave-after SECS: send the first request, wait,
close without reading (a client that goes away). --read-when FILE: read
the replies only once FILE exists (a client that stops reading; at most
60 s). --pipeline: send every request at once, then read the replies.
--half-close: with --pipeline, shut down the sending side after the
requests (shutdown(SHUT_WR), as `nc -N` does)."""
import json, os, socket, sys, time

def main():
    args = sys.argv[1:]
    home, show_all, leave, read_when = args.pop(0), False, None, None
    pipeline = half_close = False
    while args and args[0].startswith("--"):
        opt = args.pop(0)
        if opt == "--all":
            show_all = True
        elif opt == "--leave-after":
            leave = float(args.pop(0))
        elif opt == "--read-when":
            read_when = args.pop(0)
        elif opt == "--pipeline":
            pipeline = True
        elif opt == "--half-close":
            half_close = True
        elif opt == "--stdin":
            args += sys.stdin.read().splitlines()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(os.path.join(home, "run", "broker.sock"))
    if leave is not None:
        s.sendall(args[0].encode("utf-8", "surrogateescape") + b"\n")
        time.sleep(leave)
        s.close()
        return
    f = s.makefile("rb")
    if pipeline:
        s.sendall(b"".join(r.encode("utf-8", "surrogateescape") + b"\n" for r in args))
        if half_close:
            s.shutdown(socket.SHUT_WR)
    for req in args:
        if not pipeline:
            s.sendall(req.encode("utf-8", "surrogateescape") + b"\n")
        for _ in range(1200 if read_when else 0):
            if os.path.exists(read_when):
                break
            time.sleep(0.05)
        while True:
            line = f.readline()
            if not line:
                print("EOF")
                return
            msg = json.loads(line)
            if show_all or "ok" in msg:
                print(json.dumps(msg, sort_keys=True), flush=True)
            if "ok" in msg:
                break

main()
