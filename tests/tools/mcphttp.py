#!/usr/bin/env python3
"""mcphttp.py TARGET [options] ACTION [ARG] - one exchange with sbx serve's
MCP endpoint (Streamable HTTP), printed for a test to compare.

TARGET is http://HOST:PORT/mcp/USER/THREAD, https://..., or
unix:SOCKET:/mcp/USER/THREAD.

Actions:
  post JSON     POST one message. JSON may leave out "jsonrpc".
  get           GET the session's stream (--events N: close after N
                events; --last-event-id ID: resume).
  delete        DELETE the session.
  method M      a request of method M, without a body.
  init          initialize, then notifications/initialized: prints the
                session id, or saves it (--save FILE) and prints "session".
  big N         POST a body of N bytes (a JSON string), --chunked or not.
  hold N JSON   hold N connections open (each a request line, no more),
                POST JSON (answered within 2 s, or not); close them, and
                POST it again, as "post" does.
  junk          send malformed HTTP, a request at a time: the status line
                of each answer, "closed" if the server closed the
                connection unanswered, or "no answer" if it did neither
                within 5 s (it keeps the connection until its timeout).

--body-after SECS: a POST's body goes SECS after its headers (a slow
client, which a refusal at the headers must still be answered to).

What it prints: "HTTP STATUS", then the headers a test looks at
(content-type, allow, www-authenticate; mcp-session-id as "present"),
then the body: a JSON body as one line (keys sorted), each SSE event as
"event[ id=ID]: JSON" (with --show EXPR, the value of EXPR for the
message m instead of the message), and "END" once the stream ended.
"""
import argparse, http.client, json, socket, ssl, sys, time, uuid

p = argparse.ArgumentParser()
p.add_argument("target")
p.add_argument("action", choices=["post", "get", "delete", "init", "big", "hold", "junk", "method"])
p.add_argument("arg", nargs="?")
p.add_argument("body", nargs="?")
p.add_argument("--token-file")
p.add_argument("--token")
p.add_argument("--session")
p.add_argument("--session-file")
p.add_argument("--save")
p.add_argument("-H", dest="headers", action="append", default=[])
p.add_argument("--accept", default="application/json, text/event-stream")
p.add_argument("--content-type", default="application/json")
p.add_argument("--version", default="2025-11-25")
p.add_argument("--no-version", action="store_true")
p.add_argument("--cafile")
p.add_argument("--events", type=int)
p.add_argument("--last-event-id")
p.add_argument("--show")
p.add_argument("--chunked", action="store_true")
p.add_argument("--roots", action="store_true", help="init: offer roots")
p.add_argument("--timeout", type=float, default=60)
p.add_argument("--body-after", type=float,
               help="post: send the headers, then the body SECS later (a slow client)")
a = p.parse_args()


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


def connection():
    t = a.target
    if t.startswith("unix:"):
        path, _, rest = t[5:].partition(":")
        return UnixConnection(path, a.timeout), rest
    scheme, _, rest = t.partition("://")
    hostport, _, path = rest.partition("/")
    if scheme == "https":
        ctx = ssl.create_default_context(cafile=a.cafile)
        return http.client.HTTPSConnection(hostport, timeout=a.timeout, context=ctx), "/" + path
    return http.client.HTTPConnection(hostport, timeout=a.timeout), "/" + path


def headers(session=None):
    h = {}
    token = a.token
    if a.token_file:
        token = open(a.token_file).read().strip()
    if token is not None:
        h["Authorization"] = "Bearer " + token
    sid = session or a.session or (open(a.session_file).read().strip() if a.session_file else None)
    if sid:
        h["Mcp-Session-Id"] = sid
        if not a.no_version:
            h["MCP-Protocol-Version"] = a.version
    for line in a.headers:
        k, _, v = line.partition(":")
        h[k.strip()] = v.strip()
    return h


def show(m):
    if a.show:
        return str(eval(a.show, {}, {"m": m}))
    return json.dumps(m, sort_keys=True, separators=(",", ":"))


def print_reply(r):
    print("HTTP %d" % r.status)
    for k in ("content-type", "allow", "www-authenticate"):
        if r.getheader(k):
            print("%s: %s" % (k, r.getheader(k)))
    if r.getheader("mcp-session-id"):
        print("mcp-session-id: present")
    sys.stdout.flush()
    if (r.getheader("content-type") or "").startswith("text/event-stream"):
        read_events(r)
        return
    body = r.read()
    if body:
        try:
            print(show(json.loads(body)))
        except ValueError:
            print(body.decode("utf-8", "replace"))


def read_events(r):
    """Each SSE event as it comes (flushed: a test may watch the file)."""
    n, eid, data = 0, None, []
    while True:
        try:
            line = r.readline()
        except (http.client.IncompleteRead, ConnectionError, OSError):
            print("CUT")  # the server closed the connection mid-stream
            return
        if not line:
            break
        line = line.decode().rstrip("\r\n")
        if line.startswith(":"):
            continue
        if line == "":
            if data:
                text = "\n".join(data)
                m = json.loads(text) if text else None
                print("event%s: %s" % (" id=" + eid if eid else "", show(m) if text else ""))
                sys.stdout.flush()
                n += 1
                if a.events is not None and n >= a.events:
                    return
            eid, data = None, []
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "id":
            eid = value
        elif field == "data":
            data.append(value)
    print("END")


def message(text):
    """TEXT with "jsonrpc" added if it is an object; else as it is (a test
    of what is not JSON, or not an object)."""
    try:
        m = json.loads(text)
    except ValueError:
        return text.encode()
    if isinstance(m, dict):
        m.setdefault("jsonrpc", "2.0")
    return json.dumps(m).encode()


def request(method, body=None, extra=None, session=None):
    c, path = connection()
    h = headers(session)
    if body is not None:
        h["Content-Type"] = a.content_type
    if a.accept:
        h["Accept"] = a.accept
    h.update(extra or {})
    if a.body_after and body is not None:
        c.putrequest(method, path, skip_accept_encoding=True)
        for k, v in list(h.items()) + [("Content-Length", str(len(body)))]:
            c.putheader(k, v)
        c.endheaders()
        time.sleep(a.body_after)
        c.send(body)
    else:
        c.request(method, path, body=body, headers=h,
                  encode_chunked=a.chunked and body is not None)
    return c, c.getresponse()


if a.action == "post":
    c, r = request("POST", message(a.arg))
    print_reply(r)
elif a.action == "big":
    body = json.dumps("x" * (int(a.arg) - 2)).encode()
    try:
        c, r = request("POST", body if not a.chunked else iter([body[i:i + 65536] for i in range(0, len(body), 65536)]))
        print_reply(r)
    except (BrokenPipeError, ConnectionResetError) as e:
        print("connection closed: %s" % e.__class__.__name__)
elif a.action == "hold":
    held = []
    for i in range(int(a.arg)):
        c, path = connection()
        c.connect()
        c.sock.sendall(("POST %s HTTP/1.1\r\n" % path).encode())
        held.append(c)
    # Beyond the limit a connection waits for a free one, or is closed.
    # A probe the client gave up on is still served once a connection is
    # free: it has an id of its own, unique to this run of the tool, so
    # neither the request sent again below nor a later hold's probe is
    # one whose id is in flight.
    probe = json.loads(message(a.body))
    probe["id"] = "probe-%s-%s" % (uuid.uuid4().hex, probe.get("id"))
    a.timeout = 2
    try:
        c, r = request("POST", json.dumps(probe).encode())
        print("served while %d were held: HTTP %d" % (len(held), r.status))
    except (OSError, http.client.HTTPException):
        print("not served while %d were held" % len(held))
    for c in held:
        c.close()
    a.timeout = 60
    c, r = request("POST", message(a.body))
    print_reply(r)
elif a.action == "junk":
    junk = [b"GARBAGE\r\n\r\n", b"\x00\x01\x02\xff\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n",
            b"POST /mcp/a/t HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
            b"POST /mcp/a/t HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n\r\n",
            b"GET /mcp/" + b"a" * 100000 + b"/t HTTP/1.1\r\n\r\n",
            b"GET /mcp/a/t HTTP/1.1\r\nX: " + b"y" * 100000 + b"\r\n\r\n",
            b"GET /mcp/a/t HTTP/1.1\r\nno colon\r\n\r\n"]
    a.timeout = 5
    for j in junk:
        c, path = connection()
        c.connect()
        try:
            c.sock.sendall(j)
            line = c.sock.makefile("rb").readline().decode("latin-1").strip() or "closed"
        except socket.timeout:
            line = "no answer"
        except OSError:
            line = "closed"
        print(line)
        c.close()
elif a.action == "get":
    extra = {"Last-Event-ID": a.last_event_id} if a.last_event_id is not None else {}
    if a.accept == p.get_default("accept"):
        a.accept = "text/event-stream"
    c, r = request("GET", extra=extra)
    print_reply(r)
elif a.action == "delete":
    c, r = request("DELETE")
    print_reply(r)
elif a.action == "method":
    c, r = request(a.arg)
    print_reply(r)
elif a.action == "init":
    caps = {"roots": {"listChanged": True}} if a.roots else {}
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": a.version, "capabilities": caps,
                       "clientInfo": {"name": "mcphttp.py", "version": "1"}}}
    c, r = request("POST", json.dumps(init).encode())
    body = r.read()
    sid = r.getheader("mcp-session-id")
    if r.status != 200 or not sid:
        print("HTTP %d %s" % (r.status, body.decode("utf-8", "replace")))
        sys.exit(1)
    c, r = request("POST", message('{"method": "notifications/initialized"}'), session=sid)
    r.read()
    if r.status != 202:
        print("initialized: HTTP %d" % r.status)
        sys.exit(1)
    if a.save:
        with open(a.save, "w") as f:
            f.write(sid + "\n")
        print("session")
    else:
        print(sid)
