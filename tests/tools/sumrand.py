#!/usr/bin/env python3
"""sumrand.py - differential change summaries: a random sequence of
operations inside a run, and the run's summary checked against a model
of what each name holds.

    sumrand.py SBX HOME USER THREAD MNT [--seeds A-B | --seed N] [--ops K]
               [--batch N]

MNT is the mount point of a view of USER's THREAD in HOME. For each seed
S a directory s-S of the view's workspace gets a tree of directories,
text files and symlinks three deep (seed S), then inside one run (sbx run begin ...
end) the operations of seed S + 2000000 (--ops, default 100), most of
them changes of names: renames of files and directories into and out of
each other, with RENAME_NOREPLACE and RENAME_EXCHANGE, saves (a file
made and renamed over a name), hard links, unlinks, mkdir, rmdir,
creates, writes, symlinks (applied by tests/tools/fsrand.py). --batch
seeds (default 10) share a run.

The model follows each name as the object it names (docs/changes.md,
"The journal"): a rename moves it and what is below it, an exchange
swaps two, a name left by a rename, freed by a removal or taken by a
creation or a hard link holds something new, and a file made during the
run and renamed over another continues it. The summary (sbx changes
--format json) must list exactly the files whose content, type or
existence differ between the trees before and after the run, each with
its status, and link a file or symlink there at the end (created,
modified or symlink_created: a rename to a free name, over another file,
an exchange of two) to the name its object had when the run began
(renamed_from; renamed_to on that name if it is deleted) when and only
when the model says it was renamed from a file or symlink that name
held; and the counts of those links (sbx.renamed, renamed_replaced,
renamed_modified, renamed_symlink_created) must be those of the files
listed.

Prints "N seeds, K operations each: summaries exact" and exits 0; else,
for the first seed that differs, the differences and a shortest run
sequence that still shows them, and exits 1.
"""
import hashlib, importlib.util, json, os, random, shutil, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
VIRTUAL = "/mnt/user-data/workspace/"


def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


fsrand = load("fsrand")
undorand = load("undorand")


# The environment, the shrinking of a failing run and its printing are
# undorand's.
Env = undorand.Env


# Names nested three deep, parents first: renames of directories with
# what they hold, into and out of each other.
NAMES = ["a", "b", "c", "d", "e", "f", "d/a", "d/b", "d/e", "d/e/a", "d/e/b", "e/a", "e/b",
         "e/d", "e/d/a", "f/a"]


def text_of(rnd, name):
    return ("%s %d\n" % (name, rnd.randrange(10**6))).encode()


def make_tree(seed):
    """The operations that make seed SEED's tree before the run: most
    names a directory or a file of a text of its own, some a symlink
    (to another name, which may be a directory)."""
    rnd = random.Random(seed)
    ops = []
    for n in NAMES:
        r = rnd.random()
        if r < 0.35:
            ops.append(("mkdir", (n,)))
        elif r < 0.9:
            ops += [("create", (n, 0o644)), ("write", (n, 0, text_of(rnd, n)))]
        elif r < 0.96:
            ops.append(("symlink", (rnd.choice(NAMES), n)))
    return ops


def make_run(seed, count):
    """Seed SEED's COUNT operations in the run, most of them changes of
    names (fsrand.apply()'s kinds; a "save" is three: a file made,
    written and renamed over a name)."""
    rnd = random.Random(seed)
    kinds = ["rename", "exchange", "noreplace", "save", "create", "write", "mkdir", "link",
             "unlink", "rmdir", "symlink", "trunc_open"]
    ops = []
    for _ in range(count):
        p, q = rnd.choice(NAMES), rnd.choice(NAMES)
        kind = rnd.choices(kinds, [30, 10, 4, 8, 10, 8, 10, 8, 6, 3, 2, 1])[0]
        if kind in ("rename", "exchange", "noreplace"):
            flags = {"rename": 0, "exchange": fsrand.RENAME_EXCHANGE,
                     "noreplace": fsrand.RENAME_NOREPLACE}[kind]
            ops.append(("rename", (p, q, flags)))
        elif kind == "save":
            ops += [("create", ("s.tmp", 0o644)), ("write", ("s.tmp", 0, text_of(rnd, q))),
                    ("rename", ("s.tmp", q, 0))]
        elif kind == "create":
            ops.append((kind, (p, 0o644)))
        elif kind == "write":
            ops.append((kind, (p, rnd.choice([0, 3]), text_of(rnd, p))))
        elif kind == "link":
            ops.append((kind, (p, q)))
        elif kind == "symlink":
            ops.append((kind, (rnd.choice(NAMES), q)))
        else:
            ops.append((kind, (p,)))
    return ops


def tree(root):
    """{relative path: (kind, content)}: kind d, f (content its SHA-256)
    or l (its target)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                out[rel] = ("l", os.readlink(path))
            elif os.path.isdir(path):
                out[rel] = ("d", None)
            else:
                with open(path, "rb") as f:
                    out[rel] = ("f", hashlib.sha256(f.read()).hexdigest())
    return out


class Model:
    """Each name's object: the name it had when the run began, or None
    for one the run made."""

    def __init__(self, before):
        self.origin = {p: p for p in before}

    def below(self, p):
        return [k for k in self.origin if k == p or k.startswith(p + "/")]

    def take(self, p):
        return {k[len(p):]: self.origin.pop(k) for k in self.below(p)}

    def put(self, p, sub):
        for rest, o in sub.items():
            self.origin[p + rest] = o

    def apply(self, kind, args, same):
        """Operation KIND(ARGS), which succeeded; SAME: a rename's two
        names were one file (rename(2) then does nothing)."""
        if same or kind == "rename" and args[0] == args[1]:
            return
        if kind in ("create", "mkdir", "link", "symlink"):
            made = args[1] if kind in ("link", "symlink") else args[0]
            self.take(made)
            self.origin[made] = None
        elif kind in ("unlink", "rmdir"):
            self.take(args[0])
        elif kind == "rename" and args[2] & fsrand.RENAME_EXCHANGE:
            a, b = self.take(args[0]), self.take(args[1])
            self.put(args[1], a)
            self.put(args[0], b)
        elif kind == "rename":
            moved, old = self.take(args[0]), self.take(args[1])
            if moved.get("", "") is None and old.get(""):  # a save goes on as what it replaced
                moved[""] = old[""]
            self.put(args[1], moved)


def expected(before, after, model):
    """{path: (status, renamed_from, renamed_to)} of the changed files."""
    files = lambda t: {p: v for p, v in t.items() if v[0] != "d"}
    b, a = files(before), files(after)
    want = {}
    for p in sorted(set(b) | set(a)):
        x, y = b.get(p), a.get(p)
        if x and y:
            if x == y:
                continue
            status = "symlink_created" if y[0] == "l" and x[0] != "l" else "modified"
        elif x:
            status = "deleted"
        else:
            status = "symlink_created" if y[0] == "l" else "created"
        want[p] = [status, None, None]
    for p, (status, _, _) in list(want.items()):
        o = model.origin.get(p)
        if status != "deleted" and o and o != p and o in b:
            want[p][1] = o
            if o in want and want[o][0] == "deleted":
                want[o][2] = p
    return {p: tuple(v) for p, v in want.items()}


def counts(payload):
    """How the payload's counts of renames differ from its files (all
    listed), or None."""
    files = [f for f in payload.get("files", []) if f["sbx"].get("renamed_from")]
    deleted = {f["path"] for f in payload.get("files", []) if f["status"] == "deleted"}
    want = {"renamed": len(files),
            "renamed_replaced": sum(f["sbx"]["renamed_from"] not in deleted for f in files),
            "renamed_modified": sum(f["status"] == "modified" for f in files),
            "renamed_symlink_created": sum(f["status"] == "symlink_created" for f in files)}
    got = {k: payload.get("sbx", {}).get(k) for k in want}
    return None if got == want else "counts %s, of the files %s" % (got, want)


def reported(payload, name):
    prefix = VIRTUAL + name + "/"
    rel = lambda p: p[len(prefix):] if p else None
    got = {}
    for f in payload.get("files", []):
        if f["path"].startswith(prefix):
            x = f["sbx"]
            got[rel(f["path"])] = (f["status"], rel(x.get("renamed_from")),
                                   rel(x.get("renamed_to")))
    return got


def resolved(d, path):
    """PATH in D as the kernel takes a name: its directories' symlinks
    followed, its last name not."""
    parent = os.path.relpath(os.path.realpath(os.path.dirname(path) or "."), d)
    return os.path.normpath(os.path.join(parent, os.path.basename(path)))


def run_ops(d, ops, model):
    here = os.getcwd()
    os.chdir(d)
    try:
        for kind, args in ops:
            same = False
            if kind == "rename":
                try:
                    s, t = os.lstat(args[0]), os.lstat(args[1])
                    same = (s.st_dev, s.st_ino) == (t.st_dev, t.st_ino)
                except OSError:
                    pass
            names = tuple(resolved(d, a) if isinstance(a, str) else a for a in args)
            if kind == "symlink":
                names = (args[0],) + names[1:]  # its target is text
            result = fsrand.apply(kind, args)
            if model and (result == "ok" or isinstance(result, int)):
                model.apply(kind, names, same)
    finally:
        os.chdir(here)


def trial(env, cases):
    """CASES: (name, pre ops, run ops), all in one run. Returns (failure
    of the run as a whole or None, {name: differences})."""
    befores, models = {}, {}
    for name, pre, _ in cases:
        d = os.path.join(env.ws, name)
        if os.path.lexists(d):
            shutil.rmtree(d)
        os.mkdir(d)
        run_ops(d, pre, None)
        befores[name] = tree(os.path.join(env.back, name))
        models[name] = Model(befores[name])
    st, out, err = env.cmd("run", "begin", "--user", env.user, "--thread", env.thread)
    if st:
        return "run begin: exit %d: %s" % (st, err), {}
    run = out.strip()
    for name, _, ops in cases:
        run_ops(os.path.join(env.ws, name), ops, models[name])
    st, out, err = env.cmd("run", "end", run)
    if st:
        return "run end %s: exit %d: %s" % (run, st, err), {}
    st, out, err = env.cmd("changes", run, "--format", "json")
    payload = json.loads(out) if st == 0 else None
    env.cmd("run", "keep", run)  # its pre-images serve no undo here
    if st:
        return "changes %s: exit %d: %s" % (run, st, err), {}
    listed, total = len(payload.get("files", [])), payload.get("sbx", {}).get("files_total", 0)
    if total > listed:
        return "run %s: %d changed files, %d listed: a smaller --batch" % (run, total, listed), {}
    if counts(payload):
        return "run %s: %s" % (run, counts(payload)), {}
    diffs = {}
    for name, _, _ in cases:
        want = expected(befores[name], tree(os.path.join(env.back, name)), models[name])
        got = reported(payload, name)
        lines = ["want %s %s from %s to %s" % ((p,) + want[p]) for p in sorted(want)
                 if got.get(p) != want[p]]
        lines += ["got  %s %s from %s to %s" % ((p,) + got[p]) for p in sorted(got)
                  if want.get(p) != got[p]]
        if lines:
            diffs[name] = sorted(lines, key=lambda l: (l.split()[1], l))
    return None, diffs


def fails(env, name, pre, ops):
    bad, diffs = trial(env, [(name, pre, ops)])
    return bad or diffs.get(name)


def main():
    args = sys.argv[1:]
    if len(args) < 5 or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if args and args[0] in ("-h", "--help") else 2
    env = Env(*args[:5])
    seeds, count, batch = range(1, 11), 100, 10
    i = 5
    while i < len(args):
        if args[i] == "--seeds":
            a, b = args[i + 1].split("-")
            seeds = range(int(a), int(b) + 1)
        elif args[i] == "--seed":
            seeds = [int(args[i + 1])]
        elif args[i] == "--ops":
            count = int(args[i + 1])
        elif args[i] == "--batch":
            batch = int(args[i + 1])
        else:
            print("sumrand: unknown option %s" % args[i], file=sys.stderr)
            return 2
        i += 2
    seeds = list(seeds)
    case = lambda s: ("s-%d" % s, make_tree(s), make_run(s + 2000000, count))
    for at in range(0, len(seeds), batch):
        cases = [case(s) for s in seeds[at:at + batch]]
        bad, diffs = trial(env, cases)
        if bad or diffs:
            for name, p, ops in cases:
                what = (bad or name in diffs) and fails(env, name, p, ops)
                if not what:
                    continue
                print("sumrand: seed %s: the summary differs from the model:\n  %s"
                      % (name[2:], undorand.text(what)))
                least = undorand.shrink(env, name, p, ops, fails=fails)
                print("its initial tree: %s; a shortest run that differs (%d operations):\n%s"
                      % (undorand.show(p), len(least), undorand.show(least)))
                print("which gives:\n  %s" % undorand.text(fails(env, name, p, least)))
                return 1
            print("sumrand: seeds %s-%s: %s; no seed differs alone"
                  % (cases[0][0][2:], cases[-1][0][2:], undorand.text(bad or sum(diffs.values(), []))))
            return 1
        for name, _, _ in cases:
            shutil.rmtree(os.path.join(env.ws, name), ignore_errors=True)
    print("%d seeds, %d operations each: summaries exact" % (len(seeds), count))
    return 0


if __name__ == "__main__":
    sys.exit(main())
