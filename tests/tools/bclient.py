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
requests (shutdown(SHUT_WR), as `nc -N` does). --fds: read the replies
with recvmsg() and take the fds passed with them (SCM_RIGHTS): each final
reply gets "_fds", how many came with it, and "_sha256" and "_bytes" of
what the first one reads from its offset to its end, and "_nonblock",
"_cloexec" of its flags (the fds are closed). A request with "_pass"
is sent with an fd (SCM_RIGHTS) and without "_pass": a memfd holding its
value as JSON (a string: as it is), or with "_pass_pipe" a pipe's read
end holding it (a tool's "arguments_fd")."""
import array, fcntl, hashlib, json, os, socket, sys, time

class FdReader:
    """Lines of a socket read with recvmsg(), each with the fds that came
    with its bytes."""
    def __init__(self, s):
        self.s, self.buf, self.fds = s, b"", []

    def readline(self):
        while b"\n" not in self.buf:
            data, anc, _, _ = self.s.recvmsg(65536, socket.CMSG_SPACE(16 * 4),
                                             socket.MSG_CMSG_CLOEXEC)
            for level, kind, payload in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds = array.array("i")
                    fds.frombytes(payload[:len(payload) - len(payload) % 4])
                    self.fds += list(fds)
            if not data:
                return b""
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return line + b"\n"

    def annotate(self, msg):
        fds, self.fds = self.fds, []
        msg["_fds"] = len(fds)
        if fds:
            flags = fcntl.fcntl(fds[0], fcntl.F_GETFL)
            msg["_nonblock"] = bool(flags & os.O_NONBLOCK)
            msg["_cloexec"] = bool(fcntl.fcntl(fds[0], fcntl.F_GETFD) & fcntl.FD_CLOEXEC)
            h, n = hashlib.sha256(), 0
            while True:
                chunk = os.read(fds[0], 1 << 20)
                if not chunk:
                    break
                h.update(chunk)
                n += len(chunk)
            msg["_sha256"], msg["_bytes"] = h.hexdigest(), n
        for fd in fds:
            os.close(fd)

def send(s, req):
    """REQ (a line) on S, with the fd its "_pass" asks for."""
    try:
        msg = json.loads(req)
    except ValueError:
        msg = None
    if not isinstance(msg, dict) or "_pass" not in msg:
        s.sendall(req.encode("utf-8", "surrogateescape") + b"\n")
        return
    value, pipe = msg.pop("_pass"), msg.pop("_pass_pipe", False)
    data = (value if isinstance(value, str) else json.dumps(value)).encode()
    if pipe:
        r, w = os.pipe()
        os.write(w, data[:4096])
        os.close(w)
        fd = r
    else:
        fd = os.memfd_create("bclient")
        os.write(fd, data)
    line = json.dumps(msg).encode() + b"\n"
    n = socket.send_fds(s, [line], [fd])
    s.sendall(line[n:])
    os.close(fd)


def main():
    args = sys.argv[1:]
    home, show_all, leave, read_when = args.pop(0), False, None, None
    pipeline = half_close = with_fds = False
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
        elif opt == "--fds":
            with_fds = True
        elif opt == "--stdin":
            args += sys.stdin.read().splitlines()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(os.path.join(home, "run", "broker.sock"))
    if leave is not None:
        send(s, args[0])
        time.sleep(leave)
        s.close()
        return
    f = FdReader(s) if with_fds else s.makefile("rb")
    if pipeline:
        s.sendall(b"".join(r.encode("utf-8", "surrogateescape") + b"\n" for r in args))
        if half_close:
            s.shutdown(socket.SHUT_WR)
    for req in args:
        if not pipeline:
            send(s, req)
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
            if with_fds and "ok" in msg:
                f.annotate(msg)
            if show_all or "ok" in msg:
                print(json.dumps(msg, sort_keys=True), flush=True)
            if "ok" in msg:
                break

main()
