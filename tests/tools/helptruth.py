#!/usr/bin/env python3
"""helptruth.py CHECK BINDIR - the help and the docs say what the binaries
do. Run from the source tree; BINDIR holds sbx and sbxfs. Prints each
difference and exits 1 if there is one.

options  Each command's options, as its parser takes them, against its
         --help, its man page (sbx.1: SYNOPSIS and its entry under
         COMMANDS; sbxfs.8: the tags under OPTIONS) and, for sbxfs,
         configuration.md's table; the mount(8) helper's options against
         configuration.md's table and sbxfs.8's list.
doctor   The states sbx doctor prints (cli/doctor.c's table, and what it
         prints here) against the list in sbx.1 and sbx doctor --help.
watch    The ops sbx watch shows (store/follow.c's whitelist) against
         docs/changes.md, docs/protocol.md, sbx.1 and sbx watch --help.

The parsers are asked, not read: every option name the sources spell (a
getopt table, an optstring, a string literal) is given to each command,
followed by two options no parser knows, and the command takes it unless
it answers that it does not know it. getopt takes a prefix of an option
as the option: a name that is a prefix of another (--host of
--host-watch, --rbw of --rbw-unlink) would seem taken by a command that
takes only the longer one; none does today (sbxfs takes both of each).
"""
import concurrent.futures, glob, json, os, re, subprocess, sys, tempfile

SENTINEL = "--zz-helptruth"
OPT = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])(?![\w-])")
# Taken by every command, said once in sbx --help ("Options for every
# command") and sbx.1's OPTIONS, not in each command's own help.
EVERY_BLOCK = "Options for every command"
# sbx mount is sbxfs: its options are sbxfs.8's.
DEFERS = {("mount",): "sbxfs"}
# Not configuration: the table of sbxfs options leaves them out.
NOT_SETTINGS = {"-h", "--help", "-V", "--version"}

problems = []


def problem(what, got, want):
    if got != want:
        problems.append("%s:\n  missing: %s\n  extra:   %s" % (
            what, " ".join(sorted(want - got)) or "-", " ".join(sorted(got - want)) or "-"))


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def run(argv, env):
    p = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def options_in(text):
    return set(OPT.findall(text))


# ---- roff ----------------------------------------------------------------

FONT = re.compile(r"^\.(B|I|R|BI|BR|IB|IR|RB|RI)(?:\s+(.*))?$")


def roff_args(rest):
    """The arguments of a request: words, or "quoted words"."""
    return [a[1:-1] if a.startswith('"') else a for a in re.findall(r'"[^"]*"|\S+', rest or "")]


def roff_text(line):
    """A roff source line as it reads: font requests applied (.BR a b is
    ab, .B a b is a b), escapes dropped."""
    m = FONT.match(line)
    if m:
        args = roff_args(m.group(2))
        line = (" " if len(m.group(1)) == 1 else "").join(args)
    line = re.sub(r"\\f[BIRP]|\\%|\\&|\\c", "", line)
    return line.replace("\\-", "-").replace("\\(lq", "'").replace("\\(rq", "'") \
               .replace("\\e", "\\").replace("\\ ", " ")


def man_sections(path):
    """{SECTION: [source lines]} of a man page."""
    out, cur = {}, None
    for line in read(path).splitlines():
        if line.startswith(".SH "):
            cur = line[4:].strip().strip('"')
            out[cur] = []
        elif cur:
            out[cur].append(line)
    return out


def tagged(lines):
    """The (tag, body) pairs of a section's .TP/.TQ paragraphs, as text."""
    items, i = [], 0
    while i < len(lines):
        if lines[i].startswith((".TP", ".TQ")) and i + 1 < len(lines):
            tag, body, i = roff_text(lines[i + 1]), [], i + 2
            while i < len(lines) and not lines[i].startswith((".TP", ".TQ", ".SH")):
                body.append(roff_text(lines[i]))
                i += 1
            items.append((tag, " ".join(body)))
        else:
            i += 1
    return items


def synopses(lines):
    """SYNOPSIS: one text per .br-separated entry."""
    entries, cur = [], []
    for line in lines + [".br"]:
        if line.startswith(".br"):
            entries.append(" ".join(cur))
            cur = []
        elif not line.startswith(".") or FONT.match(line):
            cur.append(roff_text(line))
    return [e for e in entries if e.strip()]


# ---- sbx --help: the commands ------------------------------------------------

def command_paths(summary):
    """The commands and subcommands sbx --help lists, each with its usage
    there: {("audit",): "audit --user ID ...", ("run", "begin"): ...}; a
    command with subcommands only by them."""
    body = summary.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    usages = []
    for line in body.splitlines():
        if re.match(r"^  [a-z]", line):
            usages.append(re.split(r"\s{2,}", line.strip())[0])
        elif re.match(r"^\s+[\[-]", line) and usages:
            usages[-1] += " " + re.split(r"\s{2,}", line.strip())[0]
    paths = {}
    for usage in usages:
        for part in re.split(r" \| (?=[a-z])", usage):
            words = part.split()
            subs = words[1].split("|") if len(words) > 1 and re.fullmatch(r"[a-z|]+", words[1]) else []
            for p in [(words[0], s) for s in subs] or [(words[0],)]:
                paths[p] = paths.get(p, "") + " " + part
    return paths


# ---- what the parsers take ------------------------------------------------------

def candidates():
    """Every option name the sources of sbx and sbxfs spell."""
    longs, shorts = set(), set()
    for path in glob.glob("cli/*.c") + ["fs/main.c"]:
        src = read(path)
        longs |= {"--" + n for n in re.findall(
            r'\{\s*"([a-z][a-z0-9-]*)",\s*(?:no|required|optional)_argument', src)}
        longs |= set(re.findall(r'"(--[a-z][a-z0-9-]*)=?"', src))
        for optstring in re.findall(r'getopt_long\([^;]*?,\s*"([^"]*)"', src):
            shorts |= {"-" + c for c in optstring if c.isalpha()}
        shorts |= set(re.findall(r'"(-[a-zA-Z])"', src))
    return longs | shorts


def accepted(argv, names, env):
    """The NAMES that the command ARGV takes as options (a run each, a
    few at once: the programs wait more than they compute)."""
    def takes(name):
        _, out, err = run(argv + [name, SENTINEL, SENTINEL], env)
        said = out + err
        unknown = ("unrecognized option '%s'" % name in said
                   or "option '%s' is ambiguous" % name in said
                   or (len(name) == 2 and "invalid option -- '%s'" % name[1] in said))
        if not unknown and name.startswith("--"):
            # getopt_long takes an unambiguous abbreviation of a longer
            # option (--stat of --status); given an argument it names the
            # option it took, where that one takes none.
            _, out, err = run(argv + [name + "=" + SENTINEL, SENTINEL], env)
            took = re.search(r"option '(--[a-z0-9-]+)' doesn't allow an argument", out + err)
            unknown = bool(took) and took.group(1) != name
        return not unknown
    names = sorted(names)
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        return {n for n, ok in zip(names, pool.map(takes, names)) if ok}


# ---- --help ---------------------------------------------------------------------

def spelled(words):
    """A regex of the command WORDS as usages spell them, a word maybe
    among alternatives ("store check|migrate")."""
    return r"\s+".join(r"(?:[a-z]+\|)*%s(?:\|[a-z]+)*" % re.escape(w) for w in words)


def help_options(text, words):
    """The options a --help names for the command WORDS ("sbx", "run",
    "begin"): in its usage lines (those of WORDS, where one help has
    several commands' usages) and in its option lines (a line that
    begins with an option, up to its description)."""
    usage, _, rest = text.partition("\n\n")
    mine, found = [], False
    for line in usage.splitlines():
        if re.match(r"^(Usage:)?\s*sbx", line):
            found = bool(re.search(r"(?:^|\s)%s(?:\s|$)" % spelled(words), line))
        if found:
            mine.append(line)
    names = options_in("\n".join(mine))
    for line in rest.splitlines():
        if re.match(r"^\s+-", line):
            names |= options_in(re.split(r"(?<=\S)\s{2,}", line.strip(), maxsplit=1)[0])
    return names


def every_block(summary):
    block = summary.split(EVERY_BLOCK, 1)[1].split("\n\n", 1)[0]
    return help_options("\n\n" + block, ["sbx"])


def check_options(bindir, env):
    sbx, sbxfs = os.path.join(bindir, "sbx"), os.path.join(bindir, "sbxfs")
    names = candidates()
    _, summary, _ = run([sbx, "--help"], env)
    every = every_block(summary)
    sbx1, sbxfs8 = man_sections("docs/man/sbx.1"), man_sections("docs/man/sbxfs.8")
    entries = tagged(sbx1["COMMANDS"])
    syn = synopses(sbx1["SYNOPSIS"])

    # sbx alone.
    top = accepted([sbx], names, env)
    problem("sbx: options of sbx --help", help_options("\n\n" + summary.split("\n\n", 2)[2], ["sbx"]), top)
    problem("sbx: options under OPTIONS in sbx.1", options_in(" ".join(t for t, _ in tagged(sbx1["OPTIONS"]))), top)

    # sbxfs.
    fs = accepted([sbxfs], names, env)
    _, text, _ = run([sbxfs, "--help"], env)
    problem("sbxfs: options of sbxfs --help", help_options(text, ["sbxfs"]), fs)
    problem("sbxfs: options under OPTIONS in sbxfs.8", options_in(" ".join(t for t, _ in tagged(sbxfs8["OPTIONS"]))), fs)
    table = read("docs/configuration.md").split("## `sbxfs` options", 1)[1].split("\n#", 1)[0]
    rows = options_in(" ".join(l.split("|")[1] for l in table.splitlines() if l.startswith("| `")))
    problem("sbxfs: options in configuration.md's table", rows, fs - NOT_SETTINGS)

    # sbx's commands.
    paths = command_paths(summary)
    for path, usage in paths.items():
        name = " ".join(path)
        took = accepted([sbx, *path], names, env)
        missing = every - took
        if missing:
            problems.append("sbx %s: does not take %s, which sbx --help says every command takes"
                            % (name, " ".join(sorted(missing))))
        own = took - every
        _, text, _ = run([sbx, *path, "--help"], env)
        problem("sbx %s: options of its --help" % name, help_options(text, ["sbx", *path]) - every, own)
        if path not in DEFERS:
            problem("sbx %s: options of its line in sbx --help" % name, options_in(usage) - every, own)
        if path in DEFERS:
            problem("sbx %s: options, against %s's" % (name, DEFERS[path]), took, fs)
            continue
        # SYNOPSIS lines of this command: "sbx [--home DIR] run begin ...";
        # of a command that has subcommands too (try, try list), not theirs.
        subs = [p for p in paths if len(p) > len(path) and p[:len(path)] == path]
        lines = [e for e in syn if re.match(r"sbx\s+(\[--home DIR\]\s+)?%s(\s|$)" % spelled(path),
                                            e.strip())
                 and not any(re.match(r"sbx\s+(\[--home DIR\]\s+)?%s(\s|$)" % spelled(p), e.strip())
                             for p in subs)]
        if not lines:
            problems.append("sbx %s: no SYNOPSIS line in sbx.1" % name)
        problem("sbx %s: options of its SYNOPSIS in sbx.1" % name,
                options_in(" ".join(lines)) - every, own)
        entry = [(t, b) for t, b in entries if t.split()[0] == path[0] and (
            len(path) == 1 or path[1] in t.split()[1].split("|"))]
        if not entry:
            problems.append("sbx %s: no entry under COMMANDS in sbx.1" % name)
            continue
        said = options_in(" ".join(t + " " + b for t, b in entry))
        if own - said:
            problems.append("sbx %s: its entry under COMMANDS in sbx.1 does not name %s"
                            % (name, " ".join(sorted(own - said))))

    # The mount(8) helper: its options become sbxfs's.
    helper = re.findall(r"^\t([a-z_]+)(?:=\*)?\) set -- \"\$@\" \"?(--[a-z-]+)",
                        read("mount-helpers/mount.sbxfs"), re.M)
    hopts = {h for h, _ in helper}
    for h, o in helper:
        if o not in fs:
            problems.append("mount.sbxfs: %s= becomes %s, which sbxfs does not take" % (h, o))
    fstab = read("docs/configuration.md").split("| fstab option | becomes |", 1)[1].split("\n\n", 1)[0]
    rows = {m for l in fstab.splitlines() if "| `--" in l
            for m in re.findall(r"`([a-z_]+)", l.split("|")[1])}
    problem("mount.sbxfs: options in configuration.md's table", rows, hopts)
    ex = "\n".join(sbxfs8["EXAMPLES"]).split("the source is", 1)[1]
    ex = ex.split("become the sbxfs options", 1)[0]
    listed = set(re.findall(r"^\.B[IR]?\s+(?:\\%)?([a-z_]+)", ex, re.M))
    problem("mount.sbxfs: options in sbxfs.8's EXAMPLES", listed, hopts)


# ---- sbx doctor -------------------------------------------------------------------

def check_doctor(bindir, env):
    sbx = os.path.join(bindir, "sbx")
    table = re.search(r"state_names\[\]\s*=\s*\{(.*?)\};", read("cli/doctor.c"), re.S)
    states = set(re.findall(r'"([^"]+)"', table.group(1))) if table else set()
    if not table:
        problems.append("cli/doctor.c: no table of states (state_names[])")
    # What it prints here, whatever this host allows, is among them.
    _, out, _ = run([sbx, "doctor", "--format", "json"], env)
    d = json.loads(out)
    printed = {e["state"] for e in d["host"] + d["protections"]}
    if printed - states:
        problems.append("sbx doctor prints states its table does not have: %s"
                        % " ".join(sorted(printed - states)))
    states |= printed
    # sbx.1: the tagged list (.RS ... .RE) in doctor's entry.
    entry = "\n".join(man_sections("docs/man/sbx.1")["COMMANDS"]).split("\n.B doctor", 1)[1]
    entry = entry.split("\n.TP\n.B ", 1)[0]
    inner = entry.split("\n.RS", 1)[1].split("\n.RE", 1)[0] if "\n.RS" in entry else ""
    problem("sbx doctor: the states listed in sbx.1",
            set(re.findall(r"^\.T[PQ].*\n\.B (\S+)", inner, re.M)), states)
    _, text, _ = run([sbx, "doctor", "--help"], env)
    unnamed = states - set(re.findall(r"[a-z/]+", text))
    if unnamed:
        problems.append("sbx doctor --help does not name %s" % " ".join(sorted(unnamed)))


# ---- sbx watch ----------------------------------------------------------------------

def check_watch(bindir, env):
    src = read("store/follow.c")
    m = re.search(r"static bool shown\(.*?ops\[\]\s*=\s*\{(.*?)\};", src, re.S)
    ops = set(re.findall(r'"([a-z]+)"', m.group(1)))

    def between(text, start, end):
        """TEXT from START to END, what it says in parentheses left out."""
        return re.sub(r"\([^)]*\)", "", text.split(start, 1)[1].split(end, 1)[0])

    changes = between(read("docs/changes.md"), "- **What is shown**:", "with the path")
    problem("sbx watch: ops in docs/changes.md", set(re.findall(r"`([a-z]+)`", changes)), ops)
    protocol = between(read("docs/protocol.md"), "- `op`:", "`path2`")
    problem("watch op: ops in docs/protocol.md", set(re.findall(r"`([a-z]+)`", protocol)), ops)
    man = between(read("docs/man/sbx.1"), "as they are made, oldest first, until interrupted:",
                  "as the views' journal records them")
    problem("sbx watch: ops in sbx.1", set(re.findall(r"^\.BR? ([a-z]+)", man, re.M)), ops)
    _, text, _ = run([os.path.join(bindir, "sbx"), "watch", "--help"], env)
    listed = between(text, "oldest first:", ", with")
    problem("sbx watch: ops in sbx watch --help", set(re.findall(r"[a-z]+", listed)) - {"and"}, ops)


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("options", "doctor", "watch"):
        sys.exit(__doc__)
    with tempfile.TemporaryDirectory() as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SBX")}
        env.update(SBX_HOME=home, HOME=home, LC_ALL="C")
        {"options": check_options, "doctor": check_doctor, "watch": check_watch}[sys.argv[1]](
            sys.argv[2], env)
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)


main()
