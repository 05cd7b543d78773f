#!/usr/bin/env python3
"""aiocheck.py BASE_URL --key-file FILE --home HOME [--pid PID] [--groups G,...]
- conformance checks of sbx serve's answer to the reference framework's
"All-in-One" sandbox API and its provisioner API, written from the API's
description (the reference's openapi 1.9.4 shapes and the framework's
client, as ../shared/reference/aio-api.md has them), with nothing but
Python's standard library.

BASE_URL is the server (http://127.0.0.1:PORT); the key (the serve
token) is the provisioner's X-API-Key and the sandbox API's key. HOME is
the server's home: a thread's files are HOME/users/USER/threads/THREAD/
user-data/..., where a check compares what the API wrote or streamed.
PID (the server's) lets the download check see its peak memory.

Each group makes the sandboxes it needs (max_shell_sessions=2 for the
eviction checks) and deletes them at its end:
  provision  /health, /api/capabilities, /api/sandboxes CRUD and list,
             presence, idempotence, the 400 and 422 refusals
  context    GET {sandbox_url}/v1/sandbox (the readiness probe)
  auth       401 without or with a wrong key; the sandbox API's three
             headers; a sandbox_url opens its own sandbox only
  shell      /v1/shell/exec and sessions: the implicit persistent shell,
             named sessions, the "Session not found" 404, eviction past
             max_shell_sessions, hard_timeout, no_change_timeout, a bare
             exit, exit codes, truncation, 422
  bash       /v1/bash/exec (one-off with env) and bash sessions
  file       /v1/file/read|write|find|list|grep, and writes past the broker's
             1 MiB line (5 MiB base64, appends, the gate, the journal)
  download   GET /v1/file/download, a 100 MiB file streamed

What the description leaves open is decided here, once:
  - the 404 body is exactly {"success": false, "message": "Session not
    found", "data": null}, plus at most "hint": null (the envelope's);
  - a bare `exit` ends its session: the answer comes at once with status
    "terminated", and the session's id then gets the 404 (the framework
    drops a terminated session); the implicit shell starts afresh;
  - "oldest idle" is the least recently used session that runs nothing;
  - a write makes the missing directories of its path (the framework
    writes new paths with no mkdir before);
  - the paths find, list and grep answer are absolute, or relative to
    the path asked about;
  - a command that fails is HTTP 200 with its exit_code; no check ever
    accepts a 5xx (one of the API's clients resends on any 5xx).

Prints "ok GROUP.NAME" or "FAIL GROUP.NAME: why" for each check, then
"N passed, N failed"; exits 0 only if none failed.
"""
import argparse, base64, hashlib, http.client, json, os, secrets, ssl, subprocess, sys, threading
import time
import urllib.parse

# ---- shapes (openapi 1.9.4; "key*" = required) ---------------------------------


class Null:
    """S, or null."""

    def __init__(self, s):
        self.s = s


class Enum:
    def __init__(self, *values):
        self.values = values


ANY = object()
SCALAR = (str, int, float)  # a time: the description does not say which

ENVELOPE = {"success*": bool, "message*": Null(str), "data*": ANY, "hint*": Null(str)}
VALIDATION = {"detail*": [{"loc*": [SCALAR], "msg*": str, "type*": str}]}
DETAIL = {"detail*": str}

CONTEXT = {
    "success": bool, "message": Null(str), "data": Null(str), "hint": Null(str),
    "home_dir*": str, "workspace": Null(str), "version*": str,
    "detail*": {
        "system*": {"os*": str, "os_version*": str, "arch*": str, "user*": str,
                    "home_dir*": str, "workspace": Null(str), "timezone*": str,
                    "occupied_ports*": [str]},
        "runtime*": {"python*": [{"ver": Null(str), "bin": Null(str), "alias": [str]}],
                     "nodejs*": [{"ver": Null(str), "bin": Null(str), "alias": [str]}]},
        "utils*": [{"category*": str, "tools*": [{"name*": str, "description": Null(str)}]}],
    },
}

SHELL_EXEC = {
    "session_id*": str, "command*": str,
    "status*": Enum("running", "completed", "no_change_timeout", "hard_timeout", "terminated"),
    "output": Null(str), "console": [{"ps1*": str, "command*": str, "output": Null(str)}],
    "exit_code": Null(int),
}
SHELL_SESSION = {"session_id*": str, "working_dir*": str}
BASH_EXEC = {
    "session_id*": str, "command_id*": str, "command*": str,
    "status*": Enum("pending", "running", "completed", "timed_out", "killed"),
    "stdout": Null(str), "stderr": Null(str), "exit_code": Null(int),
    "offset": int, "stderr_offset": int,
}
BASH_SESSION = {
    "session_id*": str, "status*": Enum("ready", "closed"), "working_dir*": str,
    "created_at*": SCALAR, "last_used_at*": SCALAR, "current_command": Null(str),
    "command_count": int,
}
FILE_READ = {"content*": str, "file*": str}
FILE_WRITE = {"file*": str, "bytes_written": Null(int)}
FILE_ERROR = {
    "path*": str, "operation*": str, "message*": str, "error_type*": str, "retryable": bool,
    "errno": Null(int), "errno_name": Null(str), "exception_type": Null(str),
}
# files, matches and truncated are what the framework reads: required here.
FILE_FIND = {"path*": str, "files*": [str]}
FILE_LIST = {
    "path*": str,
    "files*": [{"name*": str, "path*": str, "is_directory*": bool, "size": Null(int),
                "modified_time": Null(SCALAR), "permissions": Null(str),
                "extension": Null(str)}],
    "total_count": int, "directory_count": int, "file_count": int,
}
FILE_GREP = {
    "path*": str, "pattern*": str,
    "matches*": [{"file*": str, "line_number*": int, "line_content*": str,
                  "context_before": Null([str]), "context_after": Null([str])}],
    "match_count": int, "files_searched": int, "files_matched": int, "truncated*": bool,
}

SANDBOX = {"sandbox_id*": str, "sandbox_url*": str, "status*": str, "container_id*": str,
           "max_shell_sessions": Null(int)}
SANDBOX_LIST = {"sandboxes*": [SANDBOX], "count*": int}
SANDBOX_GONE = {"ok*": bool, "sandbox_id*": str}
PRESENCE = {"sandbox_id*": str, "exists*": bool, "container_id*": Null(str)}
CAPABILITIES = {"lark_cli_init_image*": bool, "lark_cli_broker_image*": bool}

NO_SESSION = {"success": False, "message": "Session not found", "data": None}


class Fail(Exception):
    pass


def expect(cond, why, *args):
    if not cond:
        raise Fail(why % args if args else why)


def short(v, n=300):
    t = v if isinstance(v, str) else json.dumps(v) if not isinstance(v, bytes) else repr(v)
    t = t.replace("\n", "\\n")
    return t if len(t) <= n else t[:n] + "..."


def shape(v, s, where="$"):
    """V is of shape S: else Fail saying where not."""
    if s is ANY:
        return
    if isinstance(s, Null):
        if v is not None:
            shape(v, s.s, where)
        return
    if isinstance(s, Enum):
        expect(v in s.values, "%s is %s, not one of %s", where, short(v), "|".join(s.values))
        return
    if isinstance(s, dict):
        expect(isinstance(v, dict), "%s is %s, not an object", where, short(v, 80))
        for key, sub in s.items():
            name = key.rstrip("*")
            if key.endswith("*"):
                expect(name in v, "%s has no %s (required): %s", where, name, short(v, 200))
            if name in v and (v[name] is not None or key.endswith("*")):
                shape(v[name], sub, "%s.%s" % (where, name))
        return
    if isinstance(s, list):
        expect(isinstance(v, list), "%s is %s, not an array", where, short(v, 80))
        for i, item in enumerate(v):
            shape(item, s[0], "%s[%d]" % (where, i))
        return
    types = s if isinstance(s, tuple) else (s,)
    # bool is an int in Python, not in JSON.
    ok = isinstance(v, types) and not (isinstance(v, bool) and bool not in types)
    expect(ok, "%s is %s, not %s", where, short(v, 80), "|".join(t.__name__ for t in types))


# ---- HTTP ----------------------------------------------------------------------


class Reply:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body
        try:
            self.json = json.loads(body) if body else None
        except ValueError:
            self.json = None

    def __str__(self):
        return "HTTP %d %s" % (self.status, short(self.body.decode("utf-8", "replace")))


def connect(url, timeout):
    u = urllib.parse.urlsplit(url)
    if u.scheme == "https":
        return http.client.HTTPSConnection(u.netloc, timeout=timeout,
                                           context=ssl.create_default_context(cafile=A.cafile))
    return http.client.HTTPConnection(u.netloc, timeout=timeout)


def call(method, url, body=None, raw=None, headers=None, timeout=60, stream=None):
    """One request: a Reply. With STREAM, the body goes to STREAM(response)
    instead. A 5xx fails the check: a client may resend on it."""
    u = urllib.parse.urlsplit(url)
    data = json.dumps(body).encode() if body is not None else raw
    h = {"Content-Type": "application/json"} if data is not None else {}
    h.update(headers or {})
    conn = connect(url, timeout)
    try:
        conn.request(method, u.path + ("?" + u.query if u.query else ""), body=data, headers=h)
        r = conn.getresponse()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        if stream and r.status == 200:
            stream(r)
            payload = b""
        else:
            payload = r.read()
    finally:
        conn.close()
    reply = Reply(r.status, hdrs, payload)
    expect(r.status < 500, "%s %s: %s", method, u.path, reply)
    return reply


def answers(r, status, schema=None):
    """R is STATUS with a JSON body of SCHEMA: the body."""
    expect(r.status == status, "HTTP %d, not %d: %s", r.status, status, r)
    if schema is not None:
        expect(r.json is not None, "not JSON: %s", r)
        shape(r.json, schema)
    return r.json


def envelope_data(r, schema, success=True):
    """R is 200 with the envelope, success SUCCESS, data of SCHEMA: data."""
    j = answers(r, 200, ENVELOPE)
    expect(j["success"] is success, "success is %s: %s", j["success"], r)
    shape(j["data"], schema, "$.data")
    return j["data"]


def no_session(r):
    """R is the exact 404 the framework's client recognises."""
    expect(r.status == 404, "HTTP %d, not 404: %s", r.status, r)
    j = r.json
    expect(isinstance(j, dict), "not a JSON object: %s", r)
    rest = {k: v for k, v in j.items() if k not in NO_SESSION}
    expect({k: j.get(k, "(absent)") for k in NO_SESSION} == NO_SESSION and rest in ({}, {"hint": None}),
           "not %s: %s", json.dumps(NO_SESSION), r)


def validation_error(r, field=None):
    """R is FastAPI's 422, naming FIELD in a loc when given."""
    j = answers(r, 422, VALIDATION)
    expect(j["detail"], "an empty detail: %s", r)
    if field:
        expect(any(field in d["loc"] for d in j["detail"]), "no loc names %s: %s", field, r)


def timed(fn, *args, **kw):
    t = time.monotonic()
    out = fn(*args, **kw)
    return out, time.monotonic() - t


def eventually(cond, secs=15):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def in_background(fn, *args, **kw):
    """FN runs in a thread: a function that joins it (within SECS) and
    gives what FN returned, or raises what it raised."""
    box = {}

    def run():
        try:
            box["out"] = fn(*args, **kw)
        except BaseException as e:  # handed to the joiner
            box["err"] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()

    def join(secs=60):
        t.join(secs)
        expect(not t.is_alive(), "the background request never ended")
        if "err" in box:
            raise box["err"]
        return box["out"]
    return join


# ---- the provisioner and its sandboxes -----------------------------------------

USER = "aiocheck"
RUN = secrets.token_hex(3)


def api(method, path, body=None, key=True, raw=None):
    return call(method, A.base + path, body=body, raw=raw,
                headers={"X-API-Key": A.key} if key else {})


def create_body(sid, thread=None, **extra):
    """What the framework's RemoteSandboxBackend sends."""
    b = {"sandbox_id": sid, "thread_id": thread or sid, "user_id": USER,
         "include_legacy_skills": False, "provision_lark_cli_runtime": False,
         "provision_lark_cli_broker": False}
    b.update(extra)
    return b


class Sandbox:
    made = []  # deleted at each group's end

    def __init__(self, tag, **extra):
        self.id = "aioc-%s-%s" % (tag, RUN)
        self.thread = self.id
        self.info = answers(api("POST", "/api/sandboxes", create_body(self.id, **extra)), 200,
                            SANDBOX)
        self.url = self.info["sandbox_url"]
        Sandbox.made.append(self.id)

    def endpoint(self, path):
        # As the API's client joins: urljoin(base_url + "/", "v1/...").
        return urllib.parse.urljoin(self.url + "/", path.lstrip("/"))

    def post(self, path, body=None, raw=None, timeout=60):
        return call("POST", self.endpoint(path), body=body, raw=raw, timeout=timeout)

    def get(self, path, **kw):
        return call("GET", self.endpoint(path), **kw)

    def delete(self, path):
        return call("DELETE", self.endpoint(path))

    def host(self, path):
        """Where /mnt/user-data/PATH is on the host."""
        rel = os.path.relpath(path, "/mnt/user-data")
        expect(not rel.startswith(".."), "%s is not under /mnt/user-data", path)
        return os.path.join(A.home, "users", USER, "threads", self.thread, "user-data", rel)

    # The endpoints, their answer checked: data.
    def sh(self, command, timeout=60, **kw):
        return envelope_data(self.post("/v1/shell/exec", dict(command=command, **kw),
                                       timeout=timeout), SHELL_EXEC)

    def bash(self, command, timeout=60, **kw):
        return envelope_data(self.post("/v1/bash/exec", dict(command=command, **kw),
                                       timeout=timeout), BASH_EXEC)

    def shell_session(self, **kw):
        return envelope_data(self.post("/v1/shell/sessions/create", kw), SHELL_SESSION)

    def write(self, path, content, **kw):
        return envelope_data(self.post("/v1/file/write", dict(file=path, content=content, **kw)),
                             FILE_WRITE)

    def read(self, path, **kw):
        return envelope_data(self.post("/v1/file/read", dict(file=path, **kw)), FILE_READ)


def host_bytes(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise Fail("on the host, %s: %s" % (path, e.strerror))


WS = "/mnt/user-data/workspace"

# ---- the checks ----------------------------------------------------------------

GROUPS = {}  # name -> {"setup": fn or None, "checks": [(name, fn)]}


def group(name):
    return GROUPS.setdefault(name, {"setup": None, "checks": []})


def check(gname):
    def register(fn):
        group(gname)["checks"].append((fn.__name__, fn))
        return fn
    return register


def setup(gname):
    def register(fn):
        group(gname)["setup"] = fn
        return fn
    return register


# -- provision --

@check("provision")
def health():
    r = api("GET", "/health")
    expect(answers(r, 200) == {"status": "ok"}, "not {\"status\": \"ok\"}: %s", r)


@check("provision")
def capabilities():
    answers(api("GET", "/api/capabilities"), 200, CAPABILITIES)


@check("provision")
def create():
    sb = Sandbox("create")
    expect(sb.info["sandbox_id"] == sb.id, "sandbox_id %s", sb.info["sandbox_id"])
    expect(sb.info["status"] == "Running", "status %s, not Running", sb.info["status"])
    u = urllib.parse.urlsplit(sb.url)
    expect(u.scheme in ("http", "https") and u.netloc, "sandbox_url %s is not absolute", sb.url)
    # Readiness: GET {sandbox_url}/v1/sandbox answers 200.
    answers(sb.get("/v1/sandbox"), 200)


@check("provision")
def create_is_idempotent():
    sb = Sandbox("idem")
    again = answers(api("POST", "/api/sandboxes", create_body(sb.id)), 200, SANDBOX)
    for k in ("sandbox_id", "sandbox_url", "container_id", "status"):
        expect(again[k] == sb.info[k], "%s %s the second time, %s the first", k, again[k],
               sb.info[k])


@check("provision")
def create_with_max_shell_sessions():
    sb = Sandbox("maxshell", max_shell_sessions=2)
    expect(sb.info.get("max_shell_sessions") == 2, "max_shell_sessions %s, not 2",
           sb.info.get("max_shell_sessions"))


@check("provision")
def create_with_an_allowed_extra_mount():
    sid = "aioc-mount-" + RUN
    body = create_body(sid, extra_mounts=[
        {"host_path": "/tmp", "container_path": "/mnt/acp-workspace", "read_only": True}],
        skills_container_path="/mnt/skills")
    answers(api("POST", "/api/sandboxes", body), 200, SANDBOX)
    Sandbox.made.append(sid)


@check("provision")
def concurrent_creates():
    # Eight sandboxes at once, and four creates of one more at once: all
    # answered, the four with one sandbox.
    ids = ["aioc-conc%d-%s" % (i, RUN) for i in range(8)] + ["aioc-concsame-" + RUN] * 4
    Sandbox.made.extend(sorted(set(ids)))
    joins = [in_background(api, "POST", "/api/sandboxes", create_body(sid)) for sid in ids]
    got = [answers(join(), 200, SANDBOX) for join in joins]
    for sid, j in zip(ids, got):
        expect(j["sandbox_id"] == sid and j["status"] == "Running", "%s: %s", sid, short(j))
    same = {(j["sandbox_url"], j["container_id"]) for j in got[8:]}
    expect(len(same) == 1, "one id made %d sandboxes: %s", len(same), same)
    expect(len({j["sandbox_url"] for j in got}) == 9, "sandbox_urls are not distinct")


@check("provision")
def get_one():
    sb = Sandbox("get")
    got = answers(api("GET", "/api/sandboxes/" + sb.id), 200, SANDBOX)
    for k in ("sandbox_id", "sandbox_url", "container_id"):
        expect(got[k] == sb.info[k], "%s %s, made as %s", k, got[k], sb.info[k])
    expect(got["status"] == "Running", "status %s, not Running", got["status"])


@check("provision")
def get_absent_is_404():
    answers(api("GET", "/api/sandboxes/aioc-never-" + RUN), 404)


@check("provision")
def list_all():
    a, b = Sandbox("list-a"), Sandbox("list-b")
    j = answers(api("GET", "/api/sandboxes"), 200, SANDBOX_LIST)
    expect(j["count"] == len(j["sandboxes"]), "count %d for %d sandboxes", j["count"],
           len(j["sandboxes"]))
    ids = [s["sandbox_id"] for s in j["sandboxes"]]
    expect(a.id in ids and b.id in ids, "%s, %s not in %s", a.id, b.id, ids)


@check("provision")
def presence():
    sb = Sandbox("presence")
    j = answers(api("GET", "/api/sandboxes/%s/presence" % sb.id), 200, PRESENCE)
    expect(j == {"sandbox_id": sb.id, "exists": True, "container_id": sb.info["container_id"]},
           "%s", short(j))
    j = answers(api("GET", "/api/sandboxes/aioc-never-%s/presence" % RUN), 200, PRESENCE)
    expect(j["exists"] is False and j["container_id"] is None, "%s", short(j))


@check("provision")
def delete_ends_the_sandbox():
    sb = Sandbox("delete")
    j = answers(api("DELETE", "/api/sandboxes/" + sb.id), 200, SANDBOX_GONE)
    expect(j["ok"] is True and j["sandbox_id"] == sb.id, "%s", short(j))
    answers(api("GET", "/api/sandboxes/" + sb.id), 404)
    j = answers(api("GET", "/api/sandboxes/%s/presence" % sb.id), 200, PRESENCE)
    expect(j["exists"] is False, "present after DELETE: %s", short(j))
    ids = [s["sandbox_id"] for s in answers(api("GET", "/api/sandboxes"), 200)["sandboxes"]]
    expect(sb.id not in ids, "still listed after DELETE")
    r = sb.get("/v1/sandbox")
    expect(r.status == 404, "its sandbox_url answers %s after DELETE", r)


@check("provision")
def recreate_is_a_new_generation():
    sb = Sandbox("regen")
    answers(api("DELETE", "/api/sandboxes/" + sb.id), 200)
    again = answers(api("POST", "/api/sandboxes", create_body(sb.id)), 200, SANDBOX)
    expect(again["container_id"] != sb.info["container_id"], "the same container_id %s",
           again["container_id"])
    answers(call("GET", urllib.parse.urljoin(again["sandbox_url"] + "/", "v1/sandbox")), 200)


def refused_400(body, what):
    r = api("POST", "/api/sandboxes", body)
    expect(r.status == 400, "%s: %s, not 400", what, r)
    shape(r.json, DETAIL)


@check("provision")
def bad_ids_are_400():
    for bad in ("a.b", "a/b", "a b", "x" * 65, "th\u00e9"):
        refused_400(create_body("aioc-bad-" + RUN, thread=bad), "thread_id %r" % bad)
    for bad in ("a b", "u.v/w", "<script>"):
        body = create_body("aioc-bad-" + RUN)
        body["user_id"] = bad
        refused_400(body, "user_id %r" % bad)
    # The longest thread_id the pattern allows.
    sid = "aioc-long-" + RUN
    answers(api("POST", "/api/sandboxes", create_body(sid, thread="t" * 64)), 200, SANDBOX)
    Sandbox.made.append(sid)


@check("provision")
def bad_extra_mounts_are_400():
    ok = {"host_path": "/tmp", "container_path": "/mnt/acp-workspace", "read_only": True}
    cases = [
        ("11 mounts", [ok] * 11),
        ("a container_path off the list", [dict(ok, container_path="/etc")]),
        ("/mnt/user-data", [dict(ok, container_path="/mnt/user-data")]),
        ("a relative host_path", [dict(ok, host_path="tmp")]),
        ("a relative container_path", [dict(ok, container_path="mnt/acp-workspace")]),
    ]
    for what, mounts in cases:
        refused_400(create_body("aioc-badm-" + RUN, extra_mounts=mounts), what)


@check("provision")
def bad_max_shell_sessions_refused():
    for bad in (0, -1):
        r = api("POST", "/api/sandboxes", create_body("aioc-badn-" + RUN, max_shell_sessions=bad))
        expect(r.status in (400, 422), "max_shell_sessions %d: %s", bad, r)


@check("provision")
def missing_or_mistyped_fields_are_422():
    for field in ("sandbox_id", "thread_id", "user_id"):
        body = create_body("aioc-miss-" + RUN)
        del body[field]
        validation_error(api("POST", "/api/sandboxes", body), field)
    validation_error(api("POST", "/api/sandboxes", create_body("aioc-miss-" + RUN, thread=5)),
                     "thread_id")
    validation_error(api("POST", "/api/sandboxes", raw=b"{not json"))
    answers(api("GET", "/api/sandboxes/aioc-miss-" + RUN), 404)


# -- context --

@setup("context")
def context_setup():
    return Sandbox("context")


@check("context")
def sandbox_context_shape(sb):
    j = answers(sb.get("/v1/sandbox"), 200, CONTEXT)
    expect(j["home_dir"].startswith("/"), "home_dir %s", j["home_dir"])


@check("context")
def readiness_url_forms(sb):
    # The readiness poll appends to the URL as a string; the SDK joins.
    answers(call("GET", sb.url + "/v1/sandbox"), 200)
    answers(call("GET", urllib.parse.urljoin(sb.url + "/", "v1/sandbox")), 200)
    expect(urllib.parse.urlsplit(sb.url).path.startswith("/") and
           urllib.parse.urlsplit(sb.url).path != "/", "sandbox_url %s has no path prefix", sb.url)


@check("context")
def unknown_endpoint_is_404(sb):
    r = sb.get("/v1/nothing-here")
    expect(r.status == 404, "%s", r)


@check("context")
def unknown_sandbox_is_404(sb):
    url = sb.url.replace(sb.id, "aioc-never-" + RUN) + "/v1/sandbox"
    r = call("GET", url, headers={"Authorization": "Bearer " + A.key})
    expect(r.status == 404, "%s", r)


# -- auth --

@setup("auth")
def auth_setup():
    return Sandbox("auth-a"), Sandbox("auth-b")


@check("auth")
def provisioner_needs_the_key(sbs):
    for method, path, body in (("GET", "/api/sandboxes", None),
                               ("POST", "/api/sandboxes", create_body("aioc-nokey-" + RUN)),
                               ("GET", "/api/sandboxes/" + sbs[0].id, None),
                               ("DELETE", "/api/sandboxes/" + sbs[0].id, None),
                               ("GET", "/api/capabilities", None)):
        r = api(method, path, body, key=False)
        expect(r.status == 401, "%s %s without a key: %s", method, path, r)
        r = call(method, A.base + path, body=body, headers={"X-API-Key": "x" * 32})
        expect(r.status == 401, "%s %s with a wrong key: %s", method, path, r)
    answers(api("GET", "/api/sandboxes/" + sbs[0].id), 200)  # not deleted by the above


@check("auth")
def sandbox_url_is_enough(sbs):
    answers(sbs[0].get("/v1/sandbox"), 200, CONTEXT)


def keyless_url(sb):
    """The sandbox's URL without its capability: /sb/ID."""
    u = urllib.parse.urlsplit(sb.url)
    return "%s://%s/sb/%s/v1/sandbox" % (u.scheme, u.netloc, sb.id)


@check("auth")
def sandbox_api_key_headers(sbs):
    url = keyless_url(sbs[0])
    r = call("GET", url)
    expect(r.status == 401, "without a key: %s", r)
    for h in ({"Authorization": "Bearer " + A.key}, {"X-AIO-API-Key": A.key},
              {"x-api-key": A.key}):
        answers(call("GET", url, headers=h), 200, CONTEXT)
    for h in ({"Authorization": "Bearer " + "y" * 32}, {"X-AIO-API-Key": "y" * 32},
              {"Authorization": A.key}):
        r = call("GET", url, headers=h)
        expect(r.status == 401, "with %s: %s", list(h)[0], r)


@check("auth")
def a_sandbox_url_opens_its_sandbox_only(sbs):
    a, b = sbs
    urls = [b.url.replace(b.id, a.id)]  # b's URL, a's id
    last = urllib.parse.urlsplit(a.url).path.rsplit("/", 1)[-1]
    if "." in last:  # a key in the URL: a wrong one, a cut one
        key = last.split(".", 1)[1]
        urls += [a.url.replace(key, "0" * len(key)), a.url.replace(key, key[:-1])]
    for url in urls:
        r = call("GET", url + "/v1/sandbox")
        expect(r.status in (401, 403, 404), "%s: %s", urllib.parse.urlsplit(url).path, r)


# -- shell --

@setup("shell")
def shell_setup():
    return Sandbox("shell")


@check("shell")
def exec_happy_path(sb):
    for extra in ({}, {"no_change_timeout": 600},
                  {"hard_timeout": 600, "no_change_timeout": 605}):
        d = sb.sh("echo hello-aio", **extra)
        expect(d["status"] == "completed", "status %s", d["status"])
        expect("hello-aio" in (d.get("output") or ""), "output %s", short(d.get("output")))
        expect(d.get("exit_code") == 0, "exit_code %s", d.get("exit_code"))
        expect(d["command"] == "echo hello-aio", "command %s", d["command"])


@check("shell")
def implicit_shell_persists(sb):
    sb.sh("mkdir -p %s/imp && cd %s/imp && export AIOC_IMP=42" % (WS, WS))
    d = sb.sh("pwd; echo v=$AIOC_IMP")
    out = d.get("output") or ""
    expect("%s/imp" % WS in out and "v=42" in out, "cwd and export lost: %s", short(out))


@check("shell")
def named_sessions_are_independent(sb):
    for sid in ("na-" + RUN, "nb-" + RUN):
        s = sb.shell_session(id=sid)
        expect(s["session_id"] == sid, "session_id %s, not %s", s["session_id"], sid)
    sb.sh("mkdir -p %s/na && cd %s/na && export AIOC_V=a" % (WS, WS), id="na-" + RUN)
    sb.sh("export AIOC_V=b", id="nb-" + RUN)
    a = sb.sh("pwd; echo v=$AIOC_V", id="na-" + RUN)
    b = sb.sh("pwd; echo v=$AIOC_V", id="nb-" + RUN)
    expect(a["session_id"] == "na-" + RUN, "session_id %s", a["session_id"])
    expect("%s/na" % WS in a["output"] and "v=a" in a["output"], "na: %s", short(a["output"]))
    expect("v=b" in b["output"] and "%s/na" % WS not in b["output"], "nb: %s",
           short(b["output"]))
    i = sb.sh("echo v=[$AIOC_V]")
    expect("v=[]" in i["output"], "the implicit shell sees a session's export: %s",
           short(i["output"]))


@check("shell")
def create_session_is_idempotent(sb):
    sid = "idem-" + RUN
    sb.shell_session(id=sid)
    sb.sh("mkdir -p %s/idem && cd %s/idem" % (WS, WS), id=sid)
    s = sb.shell_session(id=sid)
    expect(s["session_id"] == sid, "session_id %s", s["session_id"])
    out = sb.sh("pwd", id=sid)["output"]
    expect("%s/idem" % WS in out, "a second create reset the session: %s", short(out))


@check("shell")
def create_session_without_id_or_with_exec_dir(sb):
    s = sb.shell_session()
    expect(s["session_id"], "an empty session_id")
    expect(sb.sh("echo ok", id=s["session_id"])["exit_code"] == 0, "exec in it failed")
    s = sb.shell_session(id="dir-" + RUN, exec_dir=WS)
    expect(s["working_dir"] == WS, "working_dir %s, not %s", s["working_dir"], WS)
    out = sb.sh("pwd", id="dir-" + RUN)["output"]
    expect(WS in out, "pwd %s", short(out))
    out = sb.sh("pwd", id="dir-" + RUN, exec_dir="/mnt/user-data")["output"]
    expect("/mnt/user-data" in out, "exec_dir: pwd %s", short(out))


@check("shell")
def unknown_session_is_the_404(sb):
    no_session(sb.post("/v1/shell/exec", {"command": "true", "id": "never-" + RUN}))


@check("shell")
def delete_session(sb):
    sid = "del-" + RUN
    sb.shell_session(id=sid)
    envelope_data(sb.delete("/v1/shell/sessions/" + sid), ANY)
    no_session(sb.post("/v1/shell/exec", {"command": "true", "id": sid}))
    r = sb.delete("/v1/shell/sessions/never-" + RUN)
    if r.status == 404:
        no_session(r)
    else:
        answers(r, 200, ENVELOPE)


@check("shell")
def failing_commands_are_200_with_exit_code(sb):
    for cmd, code in (("false", 1), ("(exit 3)", 3), ("sh -c 'exit 7'", 7),
                      ("no-such-command-aioc", 127)):
        d = sb.sh(cmd)
        expect(d["status"] == "completed", "%s: status %s", cmd, d["status"])
        expect(d.get("exit_code") == code, "%s: exit_code %s, not %d", cmd, d.get("exit_code"),
               code)


@check("shell")
def bare_exit_ends_the_session(sb):
    sid = "exit-" + RUN
    sb.shell_session(id=sid)
    d, secs = timed(sb.sh, "exit", id=sid, hard_timeout=30, timeout=40)
    expect(secs < 10, "answered after %.1f s", secs)
    expect(d["status"] == "terminated", "status %s, not terminated", d["status"])
    no_session(sb.post("/v1/shell/exec", {"command": "true", "id": sid}))
    # exit N, the same, with its code.
    sb.shell_session(id=sid)
    d, secs = timed(sb.sh, "exit 3", id=sid, hard_timeout=30, timeout=40)
    expect(secs < 10 and d["status"] == "terminated", "exit 3: status %s after %.1f s",
           d["status"], secs)
    expect(d.get("exit_code") in (None, 3), "exit 3: exit_code %s", d.get("exit_code"))


@check("shell")
def bare_exit_in_the_implicit_shell(sb):
    d, secs = timed(sb.sh, "exit", hard_timeout=30, timeout=40)
    expect(secs < 10, "answered after %.1f s", secs)
    expect(d["status"] == "terminated", "status %s, not terminated", d["status"])
    d = sb.sh("echo back")
    expect(d["status"] == "completed" and "back" in d["output"], "after exit: %s", short(d))


@check("shell")
def hard_timeout(sb):
    sid = "hard-" + RUN
    sb.shell_session(id=sid)
    d, secs = timed(sb.sh, "sleep 60", id=sid, hard_timeout=2, timeout=40)
    expect(d["status"] == "hard_timeout", "status %s, not hard_timeout", d["status"])
    expect(1.5 <= secs < 12, "answered after %.1f s (hard_timeout 2)", secs)
    # The session is not stuck behind it.
    r, secs = timed(sb.post, "/v1/shell/exec", {"command": "echo after", "id": sid}, timeout=40)
    expect(secs < 10, "the next exec answered after %.1f s", secs)
    if r.status == 404:
        no_session(r)
    else:
        d = envelope_data(r, SHELL_EXEC)
        expect("after" in d["output"], "the next exec: %s", short(d))


@check("shell")
def no_change_timeout(sb):
    sid = "quiet-" + RUN
    sb.shell_session(id=sid)
    d, secs = timed(sb.sh, "echo begun; sleep 60", id=sid, no_change_timeout=2, timeout=40)
    expect(d["status"] == "no_change_timeout", "status %s, not no_change_timeout", d["status"])
    expect(1.5 <= secs < 12, "answered after %.1f s (no_change_timeout 2)", secs)


@check("shell")
def output_that_changes_is_not_idle(sb):
    # 16 lines 0.25 s apart: 4 s in all, never 2 s without a change.
    d = sb.sh("for i in $(seq 16); do echo tick$i; sleep 0.25; done", no_change_timeout=2, hard_timeout=30, timeout=40)
    expect(d["status"] == "completed", "status %s", d["status"])
    expect("tick16" in d["output"], "output %s", short(d["output"]))


@check("shell")
def output_truncated_at_30000_chars(sb):
    cmd = "head -c 100000 /dev/zero | tr '\\0' x; echo"
    d = sb.sh(cmd)
    n = d["output"].count("x")
    expect(0 < n <= 30000, "%d x of 100000 with truncate true", n)
    d = sb.sh(cmd, truncate=False)
    expect(d["output"].count("x") == 100000, "%d x of 100000 with truncate false",
           d["output"].count("x"))


@check("shell")
def refuses_bodies_with_422(sb):
    validation_error(sb.post("/v1/shell/exec", {"id": "x"}), "command")
    validation_error(sb.post("/v1/shell/exec", {"command": 5}), "command")
    validation_error(sb.post("/v1/shell/exec", {"command": "true", "hard_timeout": "soon"}),
                     "hard_timeout")
    validation_error(sb.post("/v1/shell/exec", raw=b"{\"command\": "))


def waits_for(sb, name):
    """A command that says it began (WS/NAME.started) and waits for
    WS/NAME.go: the test decides when it ends."""
    return ("touch %s/%s.started; while [ ! -e %s/%s.go ]; do sleep 0.05; done; echo released"
            % (WS, name, WS, name))


@check("shell")
def sessions_run_in_parallel(sb):
    name = "par-" + RUN
    sb.shell_session(id="pa-" + RUN)
    sb.shell_session(id="pb-" + RUN)
    join = in_background(sb.sh, waits_for(sb, name), id="pa-" + RUN, hard_timeout=30, timeout=45)
    expect(eventually(lambda: os.path.exists(sb.host("%s/%s.started" % (WS, name)))),
           "the first command never began")
    d, secs = timed(sb.sh, "touch %s/%s.go; echo set" % (WS, name), id="pb-" + RUN, timeout=20)
    expect("set" in d["output"], "the second: %s", short(d))
    d = join()
    expect(d["status"] == "completed" and "released" in d["output"], "the first: %s", short(d))


@check("shell")
def eviction_past_max_shell_sessions(sb):
    small = Sandbox("evict", max_shell_sessions=2)
    e1, e2, e3 = ("e1-" + RUN, "e2-" + RUN, "e3-" + RUN)
    small.shell_session(id=e1)
    small.shell_session(id=e2)
    small.sh("true", id=e1)  # e2 is now the least recently used
    small.shell_session(id=e3)
    no_session(small.post("/v1/shell/exec", {"command": "true", "id": e2}))
    for sid in (e1, e3):
        d = small.sh("echo alive", id=sid)
        expect("alive" in d["output"], "%s: %s", sid, short(d))


@check("shell")
def eviction_spares_a_busy_session(sb):
    small = Sandbox("evictbusy", max_shell_sessions=2)
    b1, b2, b3, name = ("b1-" + RUN, "b2-" + RUN, "b3-" + RUN, "busy-" + RUN)
    small.shell_session(id=b1)
    small.shell_session(id=b2)
    join = in_background(small.sh, waits_for(small, name), id=b1, hard_timeout=30, timeout=45)
    expect(eventually(lambda: os.path.exists(small.host("%s/%s.started" % (WS, name)))),
           "the command of %s never began", b1)
    small.sh("true", id=b2)  # used after b1 began, but b1 is busy, b2 idle
    small.shell_session(id=b3)
    no_session(small.post("/v1/shell/exec", {"command": "true", "id": b2}))
    small.sh("touch %s/%s.go" % (WS, name), id=b3)
    d = join()
    expect(d["status"] == "completed" and "released" in d["output"], "the busy one: %s",
           short(d))


# -- bash --

@setup("bash")
def bash_setup():
    return Sandbox("bash")


@check("bash")
def exec_with_env(sb):
    cmd = 'echo "foo=$AIOC_FOO"; echo to-stderr >&2'
    d = sb.bash(cmd, env={"AIOC_FOO": "bar baz"}, hard_timeout=600)
    expect(d["status"] == "completed", "status %s", d["status"])
    expect(d["command"] == cmd, "command %s", short(d["command"]))
    expect(d.get("stdout") == "foo=bar baz\n", "stdout %s", short(d.get("stdout")))
    expect(d.get("stderr") == "to-stderr\n", "stderr %s", short(d.get("stderr")))
    expect(d.get("exit_code") == 0, "exit_code %s", d.get("exit_code"))


@check("bash")
def env_null_is_accepted(sb):
    d = sb.bash("echo ok", env={"AIOC_UNSET": None, "AIOC_SET": "1"})
    expect(d.get("stdout") == "ok\n", "stdout %s", short(d.get("stdout")))


@check("bash")
def failing_commands_are_200_with_exit_code(sb):
    for cmd, code in (("false", 1), ("exit 3", 3), ("echo partial; exit 42", 42)):
        d = sb.bash(cmd, env={})
        expect(d["status"] == "completed", "%s: status %s", cmd, d["status"])
        expect(d.get("exit_code") == code, "%s: exit_code %s", cmd, d.get("exit_code"))


@check("bash")
def runs_in_the_threads_sandbox(sb):
    sb.bash("mkdir -p %s/b && echo made-by-bash > %s/b/out.txt" % (WS, WS), env={})
    got = host_bytes(sb.host("%s/b/out.txt" % WS))
    expect(got == b"made-by-bash\n", "on the host: %r", got)
    d = sb.bash("pwd", exec_dir=WS)
    expect(d["stdout"].strip() == WS, "exec_dir: pwd %s", short(d["stdout"]))


@check("bash")
def hard_timeout(sb):
    d, secs = timed(sb.bash, "sleep 60", env={}, hard_timeout=2, timeout=40)
    expect(d["status"] in ("timed_out", "killed"), "status %s", d["status"])
    expect(1.5 <= secs < 12, "answered after %.1f s (hard_timeout 2)", secs)


@check("bash")
def output_capped_at_max_output_length(sb):
    d = sb.bash("head -c 100000 /dev/zero | tr '\\0' x")
    n = d["stdout"].count("x")
    expect(0 < n <= 50000, "%d x of 100000 (max_output_length 50000)", n)


@check("bash")
def sessions(sb):
    sid = "bs-" + RUN
    s = envelope_data(sb.post("/v1/bash/sessions/create", {"session_id": sid}), BASH_SESSION)
    expect(s["session_id"] == sid and s["status"] == "ready", "%s", short(s))
    # The newer client's form: stdin detached, env and hard_timeout given.
    d = sb.bash("exec < /dev/null\nmkdir -p %s/bs && cd %s/bs && export AIOC_B=7" % (WS, WS),
                session_id=sid, env={"AIOC_E": "e"}, hard_timeout=60)
    expect(d["session_id"] == sid and d["status"] == "completed", "%s", short(d))
    d = sb.bash("exec < /dev/null\npwd; echo b=$AIOC_B", session_id=sid, env={},
                hard_timeout=60)
    expect(d["stdout"] == "%s/bs\nb=7\n" % WS, "the session's state lost: %s",
           short(d["stdout"]))
    other = "bs2-" + RUN
    envelope_data(sb.post("/v1/bash/sessions/create", {"session_id": other}), BASH_SESSION)
    d = sb.bash("exec < /dev/null\necho b=[$AIOC_B]", session_id=other, env={}, hard_timeout=60)
    expect(d["stdout"] == "b=[]\n", "sessions share state: %s", short(d["stdout"]))
    envelope_data(sb.post("/v1/bash/sessions/%s/close" % sid), ANY)
    envelope_data(sb.post("/v1/bash/sessions/%s/close" % other), ANY)


@check("bash")
def a_404_is_only_session_not_found(sb):
    # The framework takes any other 404 from bash/exec as "unsupported".
    for sid in ("never-" + RUN, None):
        body = {"command": "echo x", "env": {}}
        if sid:
            body["session_id"] = sid
        r = sb.post("/v1/bash/exec", body)
        if r.status == 404:
            no_session(r)
        else:
            envelope_data(r, BASH_EXEC)


@check("bash")
def refuses_bodies_with_422(sb):
    validation_error(sb.post("/v1/bash/exec", {"env": {}}), "command")
    validation_error(sb.post("/v1/bash/exec", {"command": "true", "env": "A=1"}), "env")


# -- file --

@setup("file")
def file_setup():
    sb = Sandbox("file")
    sb.dir = "%s/f" % WS
    return sb


@check("file")
def write_utf8(sb):
    path = "%s/w.txt" % sb.dir
    text = "l\u00e9 one\nline two\n"
    d = sb.write(path, text)
    expect(d["file"].endswith("w.txt"), "file %s", d["file"])
    if d.get("bytes_written") is not None:
        expect(d["bytes_written"] == len(text.encode()), "bytes_written %s", d["bytes_written"])
    got = host_bytes(sb.host(path))
    expect(got == text.encode(), "on the host: %r", got)
    sb.write("/mnt/user-data/outputs/report.md", "# r\n")
    got = host_bytes(sb.host("/mnt/user-data/outputs/report.md"))
    expect(got == b"# r\n", "outputs on the host: %r", got)


@check("file")
def read_whole_and_line_ranges(sb):
    path = "%s/lines.txt" % sb.dir
    sb.write(path, "l0\nl1\nl2\nl3\n")
    d = sb.read(path)
    expect(d["content"] == "l0\nl1\nl2\nl3\n", "content %s", short(d["content"]))
    expect(d["file"].endswith("lines.txt"), "file %s", d["file"])
    # start_line 0-based, end_line exclusive.
    for kw, want in (({"start_line": 1, "end_line": 3}, "l1\nl2"),
                     ({"start_line": 2}, "l2\nl3"),
                     ({"end_line": 1}, "l0"),
                     ({"start_line": 0, "end_line": 4}, "l0\nl1\nl2\nl3")):
        got = sb.read(path, **kw)["content"]
        expect(got.rstrip("\n") == want, "%s: %s, not %s", kw, short(got), short(want))


@check("file")
def write_base64(sb):
    path = "%s/bin.dat" % sb.dir
    blob = bytes(range(256)) + b"\x00\xff\r\n"
    sb.write(path, base64.b64encode(blob).decode(), encoding="base64")
    got = host_bytes(sb.host(path))
    expect(got == blob, "on the host: %r", got[:64])


@check("file")
def write_append(sb):
    path = "%s/app.txt" % sb.dir
    sb.write(path, "a\n")
    # The older client: read, then write the whole concatenation.
    expect(sb.read(path)["content"] == "a\n", "read back")
    sb.write(path, "a\nb\n")
    # The newer: append.
    sb.write(path, "c\n", append=True)
    got = host_bytes(sb.host(path))
    expect(got == b"a\nb\nc\n", "on the host: %r", got)


@check("file")
def failures_are_200_with_the_error(sb):
    r = sb.post("/v1/file/read", {"file": "%s/missing.txt" % sb.dir})
    d = envelope_data(r, FILE_ERROR, success=False)
    expect(d["error_type"] == "not_found", "error_type %s", d["error_type"])
    expect(d["path"].endswith("missing.txt"), "path %s", d["path"])
    r = sb.post("/v1/file/write", {"file": "/proc/version", "content": "x"})
    envelope_data(r, FILE_ERROR, success=False)


def sha256(b):
    return hashlib.sha256(b).hexdigest()


def journal(sb, name):
    """The thread's journal rows for the files called NAME: (op, comm)."""
    sql = ("SELECT op, comm FROM journal WHERE thread = '%s' AND path LIKE '%%/%s' ORDER BY id"
           % (sb.thread, name))
    out = subprocess.run([os.path.join(os.path.dirname(os.path.abspath(__file__)), "sbxsql"),
                          A.home, sql], capture_output=True, text=True, timeout=30)
    expect(out.returncode == 0, "sbxsql: %s", out.stderr.strip())
    return [tuple(line.split("|")) for line in out.stdout.splitlines()]


def journal_names_the_program(sb, name, ops):
    """Once the journal has OPS for NAME (the view writes it behind),
    every row of NAME names the program aio:file_write, as for a small
    write."""
    expect(eventually(lambda: ops <= {op for op, _ in journal(sb, name)}),
           "the journal of %s has %s", name, journal(sb, name))
    comms = {c for _, c in journal(sb, name)}
    expect(comms == {"aio:file_write"}, "the journal of %s names %s", name, sorted(comms))


# Writes past the broker's 1 MiB line (docs/protocol.md): the framework
# uploads a user's file, a multi-MiB PDF, as base64 in one write.

@check("file")
def write_large_base64(sb):
    path = "%s/large.bin" % sb.dir
    for i in range(2):  # a new file, then an overwrite (staged)
        blob = os.urandom(5 << 20)
        d = sb.write(path, base64.b64encode(blob).decode(), encoding="base64")
        if d.get("bytes_written") is not None:
            expect(d["bytes_written"] == len(blob), "bytes_written %s", d["bytes_written"])
        got = host_bytes(sb.host(path))
        expect(sha256(got) == sha256(blob), "write %d: on the host, %d bytes of another sha256",
               i, len(got))
        r = call("GET", download_url(sb, path), timeout=120)
        answers(r, 200)
        expect(sha256(r.body) == sha256(blob), "write %d: downloaded, %d bytes of another "
               "sha256", i, len(r.body))
    journal_names_the_program(sb, "large.bin", {"create", "modify"})


@check("file")
def write_large_append(sb):
    path = "%s/large-app.txt" % sb.dir
    sb.write(path, "head\n")
    text = ("caf\u00e9\n" * 5 + "x" * 200 + "\n") * 6000  # 1.4 MiB
    d = sb.write(path, text, append=True, trailing_newline=True)
    want = b"head\n" + text.encode() + b"\n"
    if d.get("bytes_written") is not None:
        expect(d["bytes_written"] == len(want) - 5, "bytes_written %s", d["bytes_written"])
    blob = os.urandom(3 << 19)
    sb.write(path, base64.b64encode(blob).decode(), encoding="base64", append=True)
    got = host_bytes(sb.host(path))
    expect(got == want + blob, "on the host: %d bytes, not %d (sha256 %s)", len(got),
           len(want + blob), "equal" if sha256(got) == sha256(want + blob) else "differs")
    journal_names_the_program(sb, "large-app.txt", {"create", "modify"})


@check("file")
def write_large_over_an_unread_file_is_refused(sb):
    # A file someone else made (on the host) that the thread never read.
    path = "%s/theirs.txt" % sb.dir
    host = sb.host(path)
    os.makedirs(os.path.dirname(host), exist_ok=True)
    with open(host, "wb") as f:
        f.write(b"their work\n")
    st = os.stat(os.path.dirname(host))
    os.chown(host, st.st_uid, st.st_gid)  # the sandbox's: only the gate refuses
    blob = os.urandom(3 << 20)
    r = sb.post("/v1/file/write", {"file": path, "content": base64.b64encode(blob).decode(),
                                   "encoding": "base64"})
    d = envelope_data(r, FILE_ERROR, success=False)
    expect(d["error_type"] == "permission_denied", "error_type %s", d["error_type"])
    expect("not read" in d["message"], "not the gate's message: %s", short(d["message"]))
    got = host_bytes(host)
    expect(got == b"their work\n", "on the host: %r", got[:64])


def below(top, path):
    """PATH (absolute, or relative to TOP) relative to TOP."""
    return os.path.relpath(path, top) if path.startswith("/") else os.path.normpath(path)


def tree(sb):
    """A small tree under sb.dir/t, made once: its path."""
    top = "%s/t" % sb.dir
    if getattr(sb, "tree", None):
        return top
    sb.tree = True
    for rel, text in (("a.py", "x = 1\nneedle here\n"), ("sub/b.py", "NEEDLE upper\n"),
                      ("c.txt", "a.c literal\nabc\n"), (".hidden", "needle hidden\n")):
        sb.write("%s/%s" % (top, rel), text)
    return top


@check("file")
def find(sb):
    top = tree(sb)
    d = envelope_data(sb.post("/v1/file/find", {"path": top, "glob": "**/*.py"}), FILE_FIND)
    got = sorted(below(top, f) for f in d["files"])
    expect(got == ["a.py", "sub/b.py"], "files %s", got)


@check("file")
def list_path(sb):
    top = tree(sb)
    d = envelope_data(sb.post("/v1/file/list", {"path": top, "recursive": True,
                                                "show_hidden": False}), FILE_LIST)
    by = {below(top, f["path"]): f for f in d["files"]}
    expect(sorted(by) == ["a.py", "c.txt", "sub", "sub/b.py"], "recursive: %s", sorted(by))
    expect(by["sub"]["is_directory"] is True and by["a.py"]["is_directory"] is False,
           "is_directory wrong")
    expect(by["a.py"]["name"] == "a.py", "name %s", by["a.py"]["name"])
    if by["a.py"].get("size") is not None:
        expect(by["a.py"]["size"] == 18, "size %s", by["a.py"]["size"])
    d = envelope_data(sb.post("/v1/file/list", {"path": top}), FILE_LIST)
    names = sorted(f["name"] for f in d["files"])
    expect(names == [".hidden", "a.py", "c.txt", "sub"], "the defaults: %s", names)


@check("file")
def grep(sb):
    top = tree(sb)
    base = {"path": top, "case_insensitive": False, "fixed_strings": False, "max_results": 100,
            "max_file_size": "1M", "recursive": True}
    d = envelope_data(sb.post("/v1/file/grep", dict(base, pattern="needle")), FILE_GREP)
    hits = sorted((os.path.basename(m["file"]), m["line_number"], m["line_content"].rstrip("\n"))
                  for m in d["matches"])
    expect(("a.py", 2, "needle here") in hits, "line numbers 1-based: %s", hits)
    expect(not any(h[0] == "b.py" for h in hits), "case-sensitive matched %s", hits)
    expect(d["truncated"] is False, "truncated %s", d["truncated"])
    d = envelope_data(sb.post("/v1/file/grep", dict(base, pattern="needle",
                                                    case_insensitive=True)), FILE_GREP)
    expect(any(os.path.basename(m["file"]) == "b.py" for m in d["matches"]),
           "case_insensitive missed b.py")
    d = envelope_data(sb.post("/v1/file/grep", dict(base, pattern="a.c", fixed_strings=True)),
                      FILE_GREP)
    lines = [m["line_content"].rstrip("\n") for m in d["matches"]]
    expect(lines == ["a.c literal"], "fixed_strings: %s", lines)
    d = envelope_data(sb.post("/v1/file/grep", dict(base, pattern="e", max_results=1)),
                      FILE_GREP)
    expect(len(d["matches"]) == 1 and d["truncated"] is True, "max_results 1: %d matches, "
           "truncated %s", len(d["matches"]), d["truncated"])


@check("file")
def refuses_bodies_with_422(sb):
    for path, body, field in (("read", {}, "file"), ("write", {"file": "/x"}, "content"),
                              ("find", {"path": WS}, "glob"), ("list", {}, "path"),
                              ("grep", {"path": WS}, "pattern"),
                              ("read", {"file": WS, "start_line": "one"}, "start_line")):
        validation_error(sb.post("/v1/file/" + path, body), field)


# -- download --

@setup("download")
def download_setup():
    # Its files are made on the host: the download alone is checked.
    sb = Sandbox("download")
    with open(sb.host("%s/small.bin" % WS), "wb") as f:
        f.write(b"\x00small\xff")
    return sb


def download_url(sb, path):
    return sb.endpoint("/v1/file/download") + "?" + urllib.parse.urlencode({"path": path})


@check("download")
def small_file(sb):
    r = call("GET", download_url(sb, "%s/small.bin" % WS))
    answers(r, 200)
    expect(r.body == b"\x00small\xff", "body %r", r.body)
    ctype = r.headers.get("content-type", "")
    expect(ctype.startswith("application/octet-stream"), "content-type %s", ctype)


@check("download")
def missing_file_is_an_http_error(sb):
    r = call("GET", download_url(sb, "%s/none.bin" % WS))
    expect(400 <= r.status < 500, "%s", r)
    r = call("GET", sb.endpoint("/v1/file/download"))
    expect(400 <= r.status < 500, "without path: %s", r)


def peak_rss_kib():
    try:
        with open("/proc/%d/status" % A.pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, TypeError):
        pass
    return None


@check("download")
def a_100_mib_file_streams(sb):
    size, path = 100 << 20, "%s/big.bin" % WS
    want = hashlib.sha256()
    with open(sb.host(path), "wb") as f:
        chunk = os.urandom(1 << 20)
        for i in range(100):
            block = bytes([i]) + chunk[1:]
            f.write(block)
            want.update(block)
    before = peak_rss_kib()
    got, n = hashlib.sha256(), [0]

    def read(r):
        while True:
            block = r.read(1 << 20)
            if not block:
                return
            n[0] += len(block)
            got.update(block)
    try:
        r = call("GET", download_url(sb, path), timeout=120, stream=read)
    finally:
        os.unlink(sb.host(path))
    expect(r.status == 200, "%s", r)
    expect(n[0] == size, "%d bytes, not %d", n[0], size)
    expect(got.hexdigest() == want.hexdigest(), "sha256 differs from the host file's")
    after = peak_rss_kib()
    if before is not None and after is not None:
        expect(after - before < 48 << 10, "the server's peak RSS grew by %d MiB",
               (after - before) >> 10)


# ---- running -------------------------------------------------------------------


def run_group(name):
    g = GROUPS[name]
    passed = failed = 0
    fixture, broken = None, None
    Sandbox.made = []
    if g["setup"]:
        try:
            fixture = g["setup"]()
        except (Fail, OSError, http.client.HTTPException, ValueError, KeyError) as e:
            broken = "setup: %s" % short(str(e))
    for cname, fn in g["checks"]:
        full = "%s.%s" % (name, cname)
        try:
            if broken:
                raise Fail(broken)
            fn(fixture) if g["setup"] else fn()
            print("ok " + full, flush=True)
            passed += 1
        except (Fail, OSError, http.client.HTTPException, ValueError, KeyError, TypeError,
                AttributeError) as e:
            why = str(e) if isinstance(e, Fail) else "%s: %s" % (type(e).__name__, e)
            print("FAIL %s: %s" % (full, short(why, 600)), flush=True)
            failed += 1
    for sid in Sandbox.made:
        try:
            api("DELETE", "/api/sandboxes/" + sid)
        except (Fail, OSError, http.client.HTTPException):
            pass
    return passed, failed


def main():
    global A
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("base", help="http://HOST:PORT")
    p.add_argument("--key", help="the provisioner's and sandbox API's key")
    p.add_argument("--key-file", help="... read from this file")
    p.add_argument("--home", required=True, help="the server's home")
    p.add_argument("--pid", type=int, help="the server's pid (its peak memory)")
    p.add_argument("--cafile")
    p.add_argument("--groups", default=",".join(GROUPS))
    A = p.parse_args()
    A.base = A.base.rstrip("/")
    if A.key_file:
        A.key = open(A.key_file).read().strip()
    if not A.key:
        p.error("--key or --key-file is needed")
    names = [g for g in A.groups.split(",") if g]
    unknown = [g for g in names if g not in GROUPS]
    if unknown:
        p.error("no group %s (the groups: %s)" % (", ".join(unknown), ", ".join(GROUPS)))
    passed = failed = 0
    for name in names:
        p_, f_ = run_group(name)
        passed, failed = passed + p_, failed + f_
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
