#!/usr/bin/env python3
"""mcpraw.py [--init VERSION] [--kill-after SECS] -- SERVER... - a raw
client of an MCP server over stdio, for the tests of what the official
SDK never sends (malformed lines, batches, calls before initialize).

Reads lines from stdin: each is sent as given (a JSON text or anything
else), except
  wait ID        read until the message with id ID (the response to our
                 request ID, or a request of the server's), printing each
                 message read on the way
  waitall ID...  read until the messages with each of the ids (blank-
                 separated JSON values) came, in whatever order
  sleep SECS     pause (to let a command start before it is cancelled)
  pid            print "pid N": the server's process id
  run CMD        run the shell command CMD and wait for it (a broker
                 stopped under the session, say); print "ran N", its
                 exit status
With --init VERSION the session is initialized first (initialize with
that protocolVersion, then notifications/initialized), and its response
printed. Every message read is printed as one JSON line with sorted
keys. At the end of stdin, the server's stdin is closed and its exit
status printed as "exit N" (within 60 s). --kill-after SECS: instead,
SIGKILL the server SECS after the last line was sent, as a client that
dies would leave it, and print "killed"."""
import json, os, signal, subprocess, sys, time


def main():
    args = sys.argv[1:]
    init, kill_after = None, None
    while args and args[0] != "--":
        opt = args.pop(0)
        if opt == "--init":
            init = args.pop(0)
        elif opt == "--kill-after":
            kill_after = float(args.pop(0))
    server = args[1:]
    p = subprocess.Popen(server, stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def send(text):
        p.stdin.write(text.encode() + b"\n")
        p.stdin.flush()

    def read_until(want, more=()):
        wanted = [want, *more]
        while True:
            line = p.stdout.readline()
            if not line:
                print("EOF", flush=True)
                return
            msg = json.loads(line)
            print(json.dumps(msg, sort_keys=True), flush=True)
            if want is not None and msg.get("id") in wanted:
                wanted.remove(msg.get("id"))
                if not wanted:
                    return

    if init:
        send(json.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize",
                         "params": {"protocolVersion": init, "capabilities": {},
                                    "clientInfo": {"name": "mcpraw", "version": "1"}}}))
        read_until("init")
        send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    for line in sys.stdin.read().splitlines():
        if line.startswith("wait "):
            want = json.loads(line[5:])
            read_until(want)
        elif line.startswith("waitall "):
            ids = [json.loads(i) for i in line[8:].split()]
            read_until(ids[0], ids[1:])
        elif line.startswith("sleep "):
            time.sleep(float(line[6:]))
        elif line == "pid":
            print("pid %d" % p.pid, flush=True)
        elif line.startswith("run "):
            r = subprocess.run(line[4:], shell=True, stdout=subprocess.DEVNULL)
            print("ran %d" % r.returncode, flush=True)
        else:
            send(line)
    if kill_after is not None:
        time.sleep(kill_after)
        p.send_signal(signal.SIGKILL)
        p.wait()
        print("killed", flush=True)
        return
    p.stdin.close()
    read_until(None)
    print("exit %d" % p.wait(timeout=60), flush=True)


main()
