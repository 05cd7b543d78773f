#!/usr/bin/env python3
"""Reads a change summary (sbx changes --format json) the way a client of
the reference (DeerFlow's workspace_changes payload) reads it, and fails
on anything such a client would get wrong.

Only the reference's fields are used: unknown keys ("sbx") are ignored, as
a reference client ignores them. Prints what such a client shows:

    N file(s) changed +A -D            (the reference's event content)
    created modified deleted symlink_created additions deletions truncated listed
    and, with --files, one "status path" line per listed file.
"""
import json
import sys

STATUSES = {"created", "modified", "deleted", "symlink_created"}
REASONS = {None, "symlink", "sensitive", "binary", "large", "truncated"}
SUMMARY = {"created": int, "modified": int, "deleted": int, "symlink_created": int,
           "additions": int, "deletions": int, "truncated": bool}
FILE = {"path": str, "root": str, "status": str, "binary": bool, "sensitive": bool,
        "size_before": (int, type(None)), "size_after": (int, type(None)),
        "sha256_before": (str, type(None)), "sha256_after": (str, type(None)),
        "diff": str, "diff_truncated": bool, "diff_unavailable_reason": (str, type(None)),
        "additions": int, "deletions": int, "symlink": bool,
        "symlink_target_before": (str, type(None)), "symlink_target_after": (str, type(None))}
LIMITS = ("max_files", "max_scanned_files", "max_file_bytes_for_diff", "max_total_diff_bytes")
DEFAULT_LIMITS = [200, 2000, 256 * 1024, 1024 * 1024]


def fail(msg):
    sys.exit("refclient: " + msg)


def check_types(obj, shape, where):
    for key, kind in shape.items():
        if key not in obj:
            fail(f"{where}: no {key!r}")
        # bool is an int in Python: an int field must not be a bool.
        if not isinstance(obj[key], kind) or (kind is int and isinstance(obj[key], bool)):
            fail(f"{where}: {key!r} is {obj[key]!r}")


def main():
    show_files = "--files" in sys.argv[1:]
    want_limits = DEFAULT_LIMITS
    for arg in sys.argv[1:]:
        if arg.startswith("--limits="):
            want_limits = [int(x) for x in arg[9:].split(",")]
    d = json.load(sys.stdin)
    if d.get("version") != 1:
        fail("version is not 1")
    s, files, limits = d.get("summary"), d.get("files"), d.get("limits")
    check_types(s, SUMMARY, "summary")
    if not isinstance(files, list):
        fail("files is not a list")
    if [limits.get(k) for k in LIMITS] != want_limits:
        fail(f"limits are {limits}, configured {want_limits}")
    n = s["created"] + s["modified"] + s["deleted"] + s["symlink_created"]
    if len(files) != min(n, limits["max_files"]):
        fail(f"{len(files)} files listed of {n}")
    if n > limits["max_files"] and not s["truncated"]:
        fail(f"{n} changes, {limits['max_files']} listed, not truncated")
    for f in files:
        where = f.get("path", "?")
        check_types(f, FILE, where)
        if f["status"] not in STATUSES:
            fail(f"{where}: status {f['status']!r} is not the reference's")
        if f["diff_unavailable_reason"] not in REASONS:
            fail(f"{where}: reason {f['diff_unavailable_reason']!r}")
        # A symlink_created path may or may not have existed before.
        if (f["status"] == "created" and f["size_before"] is not None) or \
           (f["status"] in ("modified", "deleted") and f["size_before"] is None):
            fail(f"{where}: size_before {f['size_before']} for {f['status']}")
        if (f["size_after"] is None) != (f["status"] == "deleted"):
            fail(f"{where}: size_after {f['size_after']} for {f['status']}")
        if f["diff_truncated"] != (f["diff_unavailable_reason"] == "truncated"):
            fail(f"{where}: diff_truncated {f['diff_truncated']}")
        if f["diff_unavailable_reason"] in ("large", "truncated") and not s["truncated"]:
            fail(f"{where}: {f['diff_unavailable_reason']} and not truncated")
        if f["diff"]:
            lines = f["diff"].split("\n")
            adds = sum(1 for x in lines[2:] if x.startswith("+"))
            dels = sum(1 for x in lines[2:] if x.startswith("-"))
            if (adds, dels) != (f["additions"], f["deletions"]) or \
               not lines[0].startswith("--- a" + f["path"]):
                fail(f"{where}: diff does not match its counts")
    if n <= limits["max_files"]:
        for status in STATUSES:
            if sum(f["status"] == status for f in files) != s[status]:
                fail(f"{status}: the files do not add up to the count")
        for key in ("additions", "deletions"):
            if sum(f[key] for f in files) != s[key]:
                fail(f"{key}: the files do not add up to the count")
    print(f"{n} file{'' if n == 1 else 's'} changed +{s['additions']} -{s['deletions']}")
    print(s["created"], s["modified"], s["deleted"], s["symlink_created"],
          s["additions"], s["deletions"], s["truncated"], len(files))
    if show_files:
        for f in files:
            print(f["status"], f["path"], f["diff_unavailable_reason"])


main()
