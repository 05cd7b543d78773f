#!/usr/bin/env python3
"""pagecheck - the review page (run/page.h) as Debian's headless Chromium
renders it, for tests/integ/test_runs.c. Prints one line per check:

  anchors N unresolved M   the DOM's href="#X" links, and how many name no id
  collapsed ID open|closed a closed <details> around <pre id=ID>, as loaded
  expanded ID open|closed  the same after navigating to PAGE#ID (Chromium
                           opens a closed <details> around a fragment's
                           target: no script involved)
  light R G B / dark R G B the background pixel at (4, 4) of a screenshot,
                           without and with --force-dark-mode
                           (prefers-color-scheme: dark)
  scripts N                <script> elements in the DOM
  csp N                    Content-Security-Policy messages on the console
                           (a blocked style or script, an unhashed block)

  pagecheck.py PAGE [--anchors-only]

No package beyond Python's own: the PNG is read with zlib.
"""
import os
import re
import struct
import subprocess
import sys
import tempfile
import zlib

CHROMIUM = ["chromium", "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-dev-shm-usage", "--hide-scrollbars"]


def run(args, url):
    """Chromium's stdout and stderr for URL, logging to stderr on."""
    p = subprocess.run(CHROMIUM + ["--enable-logging=stderr", "--v=0"] + args + [url],
                       capture_output=True, text=True, errors="replace", timeout=120)
    return p.stdout, p.stderr


def csp_messages(err):
    return [l for l in err.splitlines() if "Content Security Policy" in l]


def pixel(png, x, y):
    """The RGB of pixel (X, Y) of the 8-bit RGB or RGBA PNG file PNG."""
    data = open(png, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    i, idat = 8, b""
    while i < len(data):
        n, kind = struct.unpack(">I4s", data[i:i + 8])
        chunk = data[i + 8:i + 8 + n]
        i += 12 + n
        if kind == b"IHDR":
            w, h, depth, color = struct.unpack(">IIBB", chunk[:10])
            assert depth == 8 and color in (2, 6), "unexpected PNG format"
        elif kind == b"IDAT":
            idat += chunk
    raw, bpp = zlib.decompress(idat), 3 if color == 2 else 4
    stride, prev, row = w * bpp, bytearray(w * bpp), None
    for r in range(y + 1):
        f, line = raw[r * (stride + 1)], bytearray(raw[r * (stride + 1) + 1:(r + 1) * (stride + 1)])
        for k in range(stride):
            a = line[k - bpp] if k >= bpp else 0
            b, c = prev[k], prev[k - bpp] if k >= bpp else 0
            if f == 1:
                line[k] = (line[k] + a) & 255
            elif f == 2:
                line[k] = (line[k] + b) & 255
            elif f == 3:
                line[k] = (line[k] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[k] = (line[k] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = row = line
    return tuple(row[x * bpp:x * bpp + 3])


def main():
    page = os.path.abspath(sys.argv[1])
    url = "file://" + page
    csp = []
    dom, err = run(["--dump-dom"], url)
    csp += csp_messages(err)
    links = re.findall(r'href="#([^"]*)"', dom)
    ids = set(re.findall(r'\sid="([^"]*)"', dom))
    print("anchors %d unresolved %d" % (len(links), len([l for l in links if l not in ids])))
    if "--anchors-only" in sys.argv:
        return
    print("scripts %d" % len(re.findall(r"<script", dom, re.I)))
    closed = re.search(r'<details><summary>[^<]*</summary><pre id="([^"]+)"', dom)
    if closed:
        target = closed.group(1)
        print("collapsed %s closed" % target)
        dom2, err = run(["--dump-dom"], url + "#" + target)
        csp += csp_messages(err)
        opened = re.search(r'<details( open="")?><summary>[^<]*</summary><pre id="%s"'
                           % re.escape(target), dom2)
        print("expanded %s %s" % (target, "open" if opened and opened.group(1) else "closed"))
    else:
        print("collapsed none")
    with tempfile.TemporaryDirectory() as d:
        for theme, args in (("light", []), ("dark", ["--force-dark-mode"])):
            shot = os.path.join(d, theme + ".png")
            _, err = run(args + ["--window-size=800,600", "--screenshot=" + shot], url)
            csp += csp_messages(err)
            print("%s %d %d %d" % ((theme,) + pixel(shot, 4, 4)))
    print("csp %d" % len(csp))
    for l in csp:
        print("  " + l[:300])


if __name__ == "__main__":
    main()
