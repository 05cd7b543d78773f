#!/usr/bin/env python3
"""soak.py SBX HOME [--clients N] [--seconds S] [--seed K] [--rss off]
[--restarts R] - the broker under a subagent-heavy framework's load.

Starts a broker on HOME (idle_timeout 1 s), then N client threads for S
seconds over four sandboxes send scoped and one-off commands with random
timeouts, go away in the middle of commands, shut down their sending
side after a request, read nothing while a flood times out, release
scopes while their commands run, and push past max_shell_sessions
(evictions). Meanwhile
the broker is restarted R times, evenly spread: `sbx broker --shutdown`
then `sbx broker` (a restart a person does), every third time SIGKILL
instead of the shutdown (a crash). Then it releases every scope and
checks:

  - every request got exactly one final reply, or the client itself
    went away: no EOF without a reply, no reply after 60 s (a hang).
    A shutdown stops the commands it finds running with a final reply;
    a connection refused while no broker serves is retried, and only a
    crash may cut a request in flight;
  - every restart: --shutdown returns once the broker is gone, and the
    new broker starts;
  - no process of any command is left (each command is tagged);
  - the broker's descriptor count and RSS are back near the baseline
    taken after a warm-up round (--rss off: no RSS check, for an
    AddressSanitizer build, whose quarantine holds freed memory);
  - no view stays mounted once no lease holds it (after idle_timeout).

Prints what went wrong and "N passed, N failed" (checks), exit 1 on a
failure. The broker is shut down on exit, whatever happened."""
import fcntl, json, os, random, re, socket, subprocess, sys, threading, time

SANDBOXES = [("alice", "t1"), ("alice", "t2"), ("bob", "t1"), ("carol", "t9")]
TAG = "sbxsoak"
REPLY_S = 60


def request(home, req, leave_after=None, half_close=False, read_after=0):
    """Sends REQ; returns the final reply (a dict), "left" if the client
    went away on purpose, "down" if no broker took the connection, "eof",
    "reset" or "hang". HALF_CLOSE: shut down the sending side after the
    request; READ_AFTER: read nothing for that many seconds."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(REPLY_S)
    try:
        try:
            s.connect(os.path.join(home, "run", "broker.sock"))
        except (FileNotFoundError, ConnectionRefusedError):
            return "down"
        s.sendall((json.dumps(req) + "\n").encode())
        if half_close:
            s.shutdown(socket.SHUT_WR)
        time.sleep(read_after)
        if leave_after is not None:
            time.sleep(leave_after)
            return "left"
        f = s.makefile("rb")
        while True:
            line = f.readline()
            if not line.endswith(b"\n"):
                return "eof"  # nothing more, or a line cut by a crash
            msg = json.loads(line)
            if "ok" in msg:
                return msg
    except socket.timeout:
        return "hang"
    except (ConnectionResetError, BrokenPipeError):
        return "reset"
    finally:
        s.close()


def broker_pid(home):
    got = request(home, {"op": "status"})
    if not isinstance(got, dict):
        raise SystemExit(f"FAIL no broker answers ({got})\n0 passed, 1 failed")
    return got["pid"]


def fds_and_rss(pid):
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    with open(f"/proc/{pid}/status") as f:
        rss = int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))
    return fds, rss


class Restarts:
    """The broker's generation, and whether a crash ended one."""

    def __init__(self):
        self.generation, self.crashed = 0, set()


def restarter(sbx, home, times, seconds, rs, problems, lock):
    """Restarts the broker TIMES times in SECONDS: every third a crash."""
    for i in range(times):
        time.sleep(seconds / (times + 1))
        crash = i % 3 == 2
        pid = broker_pid(home)
        if crash:
            with lock:
                rs.crashed.add(rs.generation)
            os.kill(pid, 9)
            with open(os.path.join(home, "run", "broker.lock")) as lock_file:
                fcntl.flock(lock_file, fcntl.LOCK_SH)  # held until it is gone
        else:
            # Returns once the broker is done (it holds its lock till then).
            sd = subprocess.run([sbx, "broker", "--home", home, "--shutdown"],
                                capture_output=True, text=True)
            if sd.returncode:
                with lock:
                    problems.append(f"restart {i}: --shutdown exited {sd.returncode}:"
                                    f" {sd.stderr.strip()}")
        with lock:
            rs.generation += 1
        st = subprocess.run([sbx, "broker", "--home", home], capture_output=True, text=True)
        if st.returncode:
            with lock:
                problems.append(f"restart {i}: the new broker did not start: {st.stderr.strip()}")
            return


def client(home, rnd, deadline, problems, counts, lock, rs):
    while time.time() < deadline:
        user, thread = rnd.choice(SANDBOXES)
        scope = f"s{rnd.randrange(6)}"
        kind = rnd.random()
        req = {"op": "exec", "user": user, "thread": thread}
        leave, half_close, read_after = None, False, 0
        if kind < 0.45:
            req.update(scope=scope, command=f": {TAG}; echo hi; seq 1 {rnd.randrange(1, 500)}")
        elif kind < 0.6:
            req.update(scope=scope, timeout=1, command=f": {TAG}; seq 1 30; sleep 5")
        elif kind < 0.75:
            req.update(command=f": {TAG}; echo one-off; sleep 0.{rnd.randrange(10)}")
        elif kind < 0.82:
            req.update(scope=scope, command=f": {TAG}; sleep 2; echo late")
            leave = rnd.random() * 0.5
        elif kind < 0.87:  # half-closes after its request: still a reply
            req.update(command=f": {TAG}; echo half; sleep 0.2")
            if rnd.random() < 0.5:
                req.update(scope=scope)
            half_close = True
        elif kind < 0.9:  # reads nothing while its flood times out
            req.update(scope=scope, timeout=1, command=f": {TAG}; seq 1 100000000")
            read_after = 2
        else:
            req = {"op": "release", "user": user, "thread": thread, "owner": scope}
            request(home, {"op": "acquire", "user": user, "thread": thread, "owner": scope})
        generation = rs.generation
        got = request(home, req, leave, half_close, read_after)
        if got == "down":  # restarting: no broker took it
            time.sleep(0.05)
            continue
        with lock:
            counts[0] += 1
            if got in ("eof", "reset") and any(g in rs.crashed
                                               for g in range(generation, rs.generation + 1)):
                counts[1] += 1  # cut by a crash
            elif got in ("eof", "reset", "hang"):
                problems.append(f"{got}: {json.dumps(req)}")
            elif got != "left" and req["op"] == "exec" and not got.get("ok") and \
                    got.get("error", {}).get("code") not in ("session_limit", "shutting_down"):
                problems.append(f"error reply {json.dumps(got)} to {json.dumps(req)}")
            elif got != "left" and req.get("timeout") == 1 and got.get("ok") and \
                    not got.get("stopped") and not read_after and \
                    "29\n30\n" not in got.get("output", ""):
                problems.append(f"output lost at the timeout: {json.dumps(got)[:300]}")
            elif read_after and got.get("ok") and not got.get("stopped") and \
                    not got.get("timed_out"):
                problems.append(f"a flood read late did not time out: {json.dumps(got)[:300]}")


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
    clients, seconds, seed, rss_check, restarts = 8, 30, 1, True, 0
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
        elif opt == "--restarts":
            restarts = int(val)
    os.makedirs(home, exist_ok=True)
    with open(os.path.join(home, "sbx.conf"), "w") as f:
        f.write("[broker]\nidle_timeout = 1\nmax_running = 2\nmax_shell_sessions = 3\n")
    subprocess.run([sbx, "broker", "--home", home], check=True, stdout=subprocess.DEVNULL)
    passed = failed = 0
    try:
        pid = broker_pid(home)
        for user, thread in SANDBOXES:  # warm-up: every sandbox once
            request(home, {"op": "exec", "user": user, "thread": thread, "scope": "s0",
                           "command": "true"})
        release_all(home)
        base_fds, base_rss = fds_and_rss(pid)
        problems, counts, lock, rs = [], [0, 0], threading.Lock(), Restarts()
        began = time.time()
        deadline = began + seconds
        threads = [threading.Thread(target=client, args=(home, random.Random(seed * 1000 + i),
                                                         deadline, problems, counts, lock, rs))
                   for i in range(clients)]
        if restarts:
            threads.append(threading.Thread(target=restarter, args=(
                sbx, home, restarts, seconds, rs, problems, lock)))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        took = time.time() - began
        release_all(home)
        pid = broker_pid(home)

        def check(ok, what):
            nonlocal passed, failed
            print(("ok   " if ok else "FAIL ") + what)
            passed, failed = passed + ok, failed + (not ok)

        check(not problems, f"{counts[0]} requests in {took:.1f} s, each one reply"
              + (f" ({rs.generation} restarts; {counts[1]} cut by a crash)" if restarts else "")
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
