#!/usr/bin/env python3
"""soak.py SBX HOME [--clients N] [--seconds S] [--seed K] [--rss off] -
the broker under a subagent-heavy framework's load.

Starts a broker on HOME (idle_timeout 1 s), then N client threads for S
seconds over four sandboxes send scoped and one-off commands with random
timeouts, go away in the middle of commands, release scopes while their
commands run, and push past max_shell_sessions (evictions). Then it
releases every scope and checks:

  - every request got exactly one final reply, or the client itself
    went away: no EOF without a reply, no reply after 60 s (a hang);
  - no process of any command is left (each command is tagged);
  - the broker's descriptor count and RSS are back near the baseline
    taken after a warm-up round (--rss off: no RSS check, for an
    AddressSanitizer build, whose quarantine holds freed memory);
  - no view stays mounted once no lease holds it (after idle_timeout).

Prints what went wrong and "N passed, N failed" (checks), exit 1 on a
failure. The broker is shut down on exit, whatever happened."""
import json, os, random, re, socket, subprocess, sys, threading, time

SANDBOXES = [("alice", "t1"), ("alice", "t2"), ("bob", "t1"), ("carol", "t9")]
TAG = "sbxsoak"
REPLY_S = 60


def request(home, req, leave_after=None):
    """Sends REQ; returns the final reply (a dict), "left" if the client
    went away on purpose, "eof" or "hang"."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(REPLY_S)
    try:
        s.connect(os.path.join(home, "run", "broker.sock"))
        s.sendall((json.dumps(req) + "\n").encode())
        if leave_after is not None:
            time.sleep(leave_after)
            return "left"
        f = s.makefile("rb")
        while True:
            line = f.readline()
            if not line:
                return "eof"
            msg = json.loads(line)
            if "ok" in msg:
                return msg
    except socket.timeout:
        return "hang"
    finally:
        s.close()


def broker_pid(home):
    return request(home, {"op": "status"})["pid"]


def fds_and_rss(pid):
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    with open(f"/proc/{pid}/status") as f:
        rss = int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))
    return fds, rss


def client(home, rnd, deadline, problems, counts, lock):
    while time.time() < deadline:
        user, thread = rnd.choice(SANDBOXES)
        scope = f"s{rnd.randrange(6)}"
        kind = rnd.random()
        req = {"op": "exec", "user": user, "thread": thread}
        leave = None
        if kind < 0.45:
            req.update(scope=scope, command=f": {TAG}; echo hi; seq 1 {rnd.randrange(1, 500)}")
        elif kind < 0.6:
            req.update(scope=scope, timeout=1, command=f": {TAG}; seq 1 30; sleep 5")
        elif kind < 0.75:
            req.update(command=f": {TAG}; echo one-off; sleep 0.{rnd.randrange(10)}")
        elif kind < 0.85:
            req.update(scope=scope, command=f": {TAG}; sleep 2; echo late")
            leave = rnd.random() * 0.5
        else:
            req = {"op": "release", "user": user, "thread": thread, "owner": scope}
            request(home, {"op": "acquire", "user": user, "thread": thread, "owner": scope})
        got = request(home, req, leave)
        with lock:
            counts[0] += 1
            if got in ("eof", "hang"):
                problems.append(f"{got}: {json.dumps(req)}")
            elif got != "left" and req["op"] == "exec" and not got.get("ok") and \
                    got.get("error", {}).get("code") not in ("session_limit",):
                problems.append(f"error reply {json.dumps(got)} to {json.dumps(req)}")
            elif got != "left" and req.get("timeout") == 1 and got.get("ok") and \
                    "29\n30\n" not in got.get("output", ""):
                problems.append(f"output lost at the timeout: {json.dumps(got)[:300]}")


def release_all(home):
    """Ends every scope's shell: a release ends the shell of the scope
    named like the lease's owner."""
    for user, thread in SANDBOXES:
        for i in range(6):
            lease = {"user": user, "thread": thread, "owner": f"s{i}"}
            request(home, dict(op="acquire", **lease))
            request(home, dict(op="release", **lease))


def main():
    args = sys.argv[1:]
    sbx, home = args.pop(0), args.pop(0)
    clients, seconds, seed, rss_check = 8, 30, 1, True
    while args:
        opt, val = args.pop(0), args.pop(0)
        if opt == "--clients":
            clients = int(val)
        elif opt == "--seconds":
            seconds = float(val)
        elif opt == "--seed":
            seed = int(val)
        elif opt == "--rss":
            rss_check = val != "off"
    os.makedirs(home, exist_ok=True)
    with open(os.path.join(home, "sbx.conf"), "w") as f:
        f.write("[broker]\nidle_timeout = 1\nmax_running = 2\nmax_shell_sessions = 3\n")
    subprocess.run([sbx, "broker", "--home", home], check=True)
    passed = failed = 0
    try:
        pid = broker_pid(home)
        for user, thread in SANDBOXES:  # warm-up: every sandbox once
            request(home, {"op": "exec", "user": user, "thread": thread, "scope": "s0",
                           "command": "true"})
        release_all(home)
        base_fds, base_rss = fds_and_rss(pid)
        problems, counts, lock = [], [0], threading.Lock()
        deadline = time.time() + seconds
        threads = [threading.Thread(target=client, args=(home, random.Random(seed * 1000 + i),
                                                         deadline, problems, counts, lock))
                   for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        release_all(home)

        def check(ok, what):
            nonlocal passed, failed
            print(("ok   " if ok else "FAIL ") + what)
            passed, failed = passed + ok, failed + (not ok)

        check(not problems, f"{counts[0]} requests, each one reply"
              + "".join("\n     " + p for p in problems[:20]))
        left = ""
        for _ in range(100):  # the kills of timed-out trees take a moment
            left = subprocess.run(["pgrep", "-af", f": {TAG}"], capture_output=True,
                                  text=True).stdout.strip()
            if not left:
                break
            time.sleep(0.1)
        check(not left, "no command process left" + (f":\n{left}" if left else ""))
        fds, rss = fds_and_rss(pid)
        for _ in range(50):  # sessions and views wind down
            if fds <= base_fds + 2:
                break
            time.sleep(0.1)
            fds, rss = fds_and_rss(pid)
        listing = "" if fds <= base_fds + 2 else "".join(
            f"\n     {n} -> {os.readlink(f'/proc/{pid}/fd/{n}')}"
            for n in sorted(os.listdir(f"/proc/{pid}/fd"), key=int))
        check(fds <= base_fds + 2, f"broker fds {base_fds} -> {fds}" + listing)
        if rss_check:
            check(rss <= base_rss + 16384, f"broker RSS {base_rss} -> {rss} kB")
        mounted = ""
        for _ in range(100):  # idle_timeout = 1 s, then the unmount
            with open("/proc/mounts") as f:
                mounted = "".join(l for l in f if home in l)
            if not mounted:
                break
            time.sleep(0.1)
        check(not mounted, "no view mounted without a lease" + (f":\n{mounted}" if mounted else ""))
        ping = request(home, {"op": "ping"})
        check(isinstance(ping, dict) and ping.get("ok"), "the broker still answers")
    finally:
        subprocess.run([sbx, "broker", "--home", home, "--shutdown"], capture_output=True)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


main()
