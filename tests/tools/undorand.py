#!/usr/bin/env python3
"""undorand.py - differential undo: after a random sequence of operations
inside a run, `sbx run undo` must bring the tree back exactly (content,
types, modes, owners, times, xattrs, links).

    undorand.py SBX HOME USER THREAD MNT [--seeds A-B | --seed N] [--ops K]
                [--pre K] [--batch N] [--no-dir-mtimes]
                [--no-links] [--redo] [--survey] [--kill SHIM [--points K]]

MNT is the mount point of a view of USER's THREAD in HOME. For each seed
S a directory u-S of the view's workspace gets an initial tree (fsrand's
operation sequence of seed S, --pre operations, default 60), then inside
one run (sbx run begin ... end) the sequence of seed S + 1000000 (--ops
operations, default 100: creates, writes, appends, truncations, renames
of files and directories incl. RENAME_NOREPLACE and RENAME_EXCHANGE,
links, unlinks, mkdir, rmdir, symlinks, chmod, times, xattrs, fallocate;
tests/tools/fsrand.py), then sbx run undo. Every u-S on the backing side
must print as it did before the run (tests/tools/treeprint.py, with
directory times, unless --no-dir-mtimes). With --redo, the undo is
undone in its turn (a redo: every u-S must print as it did at the run's
end, directory times left out) and so is the redo (as before the run
again). --batch seeds (default 20)
share a run. --no-links leaves hard links out (and
directory times and links are what undo got wrong first: these options
look past those to the rest). --survey goes on after a failing seed and
lists every seed that fails alone, without shortening, and every batch
that fails though none of its seeds does alone.

--kill SHIM (tests/tools/killshim.c, built) kills the undo of each seed's
run (a run of its own) just before its Nth change to a file or
directory, for each N the undo reaches (--points K: K of them, drawn
from the seed), each time from a fresh tree and run: every path must
then be as before the run or as after it (type, size, content, symlink
target: attributes are set by several calls each), and a second undo
must bring the tree back exactly. No shortening: the seed and the kill
point are printed. --known S,S,... names seeds that meet a documented
exception (docs/changes.md: a killed undo's one): they are run (alone)
and said, and the others decide; one of them that passes is a failure
too (the list must stay true).

Prints "N seeds, K operations each: undone exactly" and exits 0; else,
for the first seed that differs, the difference and a shortest sequence
of run operations that still shows it (with its initial tree's), and
exits 1.
"""
import importlib.util, os, random, shutil, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


fsrand = load("fsrand")
treeprint = load("treeprint")


class Env:
    dir_mtimes = True
    redo = False

    def __init__(self, sbx, home, user, thread, mnt):
        self.sbx, self.home, self.user, self.thread = sbx, home, user, thread
        self.ws = os.path.join(mnt, "user-data", "workspace")
        self.back = os.path.join(home, "users", user, "threads", thread, "user-data", "workspace")

    def cmd(self, *args, env=None):
        p = subprocess.run([self.sbx, "--home", self.home] + list(args),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=dict(os.environ, **env) if env else None)
        return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")

    def print_of(self, name, dir_mtimes=None):
        out = []
        treeprint.walk(os.path.join(self.back, name),
                       self.dir_mtimes if dir_mtimes is None else dir_mtimes, set(), out)
        return "".join("%s\t%s\n" % (treeprint.esc(r), t) for r, t in sorted(out))


def apply_all(d, ops):
    here = os.getcwd()
    os.chdir(d)
    try:
        for kind, args in ops:
            fsrand.apply(kind, args)
    finally:
        os.chdir(here)


def make_tree(env, name, pre):
    """A fresh directory NAME of the view's workspace with PRE applied:
    its print."""
    d = os.path.join(env.ws, name)
    if os.path.lexists(d):
        shutil.rmtree(d)
    os.mkdir(d)
    apply_all(d, pre)
    return env.print_of(name)


def trial(env, cases):
    """CASES: (name, pre ops, run ops). Makes each tree, runs all the run
    ops in one run, undoes it. Returns (failure text or None, {name:
    difference}) - the failure is one of the run as a whole."""
    before = {name: make_tree(env, name, pre) for name, pre, _ in cases}
    st, out, err = env.cmd("run", "begin", "--user", env.user, "--thread", env.thread)
    if st:
        return "run begin: exit %d: %s" % (st, err), {}
    run = out.strip()
    for name, _, ops in cases:
        apply_all(os.path.join(env.ws, name), ops)
    st, out, err = env.cmd("run", "end", run)
    if st:
        return "run end %s: exit %d: %s" % (run, st, err), {}
    after = {name: env.print_of(name, False) for name, _, _ in cases} if env.redo else {}
    diffs = {}

    def compare(what, want, dir_mtimes=None):
        for name, _, _ in cases:
            now = env.print_of(name, dir_mtimes)
            if now != want[name] and name not in diffs:
                b, n = want[name].splitlines(), now.splitlines()
                diffs[name] = [what] + ["- " + x for x in b if x not in n] + \
                    ["+ " + x for x in n if x not in b]

    # The run undone, then (--redo) the undo undone: the run's result;
    # then that undone: the tree before the run.
    stages = [("undo", before, None)]
    if env.redo:
        stages += [("redo", after, False), ("undo of the redo", before, None)]
    for what, want, dir_mtimes in stages:
        st, out, err = env.cmd("run", "undo", run)
        if st:
            return "%s: run undo %s: exit %d: %s" % (what, run, st, err.strip()), diffs
        undo = out.split()[1] if out.startswith("run ") else None
        compare(what + ":", want, dir_mtimes)
        if diffs or not undo:
            break
        run = undo
    if undo and not env.redo:
        env.cmd("run", "keep", undo)  # its pre-images serve no redo here
    return None, diffs


# What a kill may leave half set: a path's attributes take several calls.
KILL_FIELDS = {"type", "size", "sha256", "target"}


def killed_undo(env, shim, name, pre, ops, at):
    """The tree NAME made of PRE, a run doing OPS, its undo killed just
    before its change AT (killshim.c), then a second undo; with AT 0 the
    undo is not killed, its changes counted. Returns (that count,
    failure texts)."""
    before = make_tree(env, name, pre)
    ends = [env.print_of(name, False)]
    st, out, err = env.cmd("run", "begin", "--user", env.user, "--thread", env.thread)
    if st:
        return 0, ["run begin: exit %d: %s" % (st, err)]
    run = out.strip()
    apply_all(os.path.join(env.ws, name), ops)
    st, out, err = env.cmd("run", "end", run)
    if st:
        return 0, ["run end %s: exit %d: %s" % (run, st, err)]
    ends.append(env.print_of(name, False))
    with tempfile.NamedTemporaryFile("r") as count:
        shimmed = {"LD_PRELOAD": shim, "SBX_KILL_COUNT": count.name,
                   # Under SANITIZE=1 the shim comes before ASan's runtime.
                   "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") +
                   ":verify_asan_link_order=0"}
        if at:
            shimmed["SBX_KILL_AT"] = str(at)
        st, out, err = env.cmd("run", "undo", run, env=shimmed)
        changes = int(count.read() or 0)
    what, bad = "killed at change %d: " % at if at else "", []
    if at and st == -9:
        neither = treeprint.between(ends[0], ends[1], KILL_FIELDS, env.print_of(name, False))
        if neither:
            bad.append(what + "neither before nor after the undo:\n    " +
                       "\n    ".join(neither))
        what += "the second undo: "
        st, out, err = env.cmd("run", "undo", run)
        if st and "was undone by run" in err:
            st, out = 0, None  # killed once the undo was recorded
    if st:
        return changes, bad + [what + "exit %d: %s" % (st, err.strip()[:300])]
    now = env.print_of(name)
    if now != before:
        b, n = before.splitlines(), now.splitlines()
        bad.append(what + "not as before the run:\n    " +
                   "\n    ".join(["- " + x for x in b if x not in n] +
                                  ["+ " + x for x in n if x not in b]))
    if out:
        env.cmd("run", "keep", out.split()[1])  # its pre-images serve no redo here
    return changes, bad


def kill_seed(env, shim, points, name, pre, ops):
    """Each kill point of the undo of seed NAME's run (POINTS of them,
    None: all): failure texts."""
    changes, bad = killed_undo(env, shim, name, pre, ops, 0)
    every = list(range(1, changes + 1))
    if points is not None and points < changes:
        every = sorted(random.Random(name).sample(every, points))
    for at in every:
        bad += killed_undo(env, shim, name, pre, ops, at)[1]
    return bad


def fails(env, name, pre, ops):
    bad, diffs = trial(env, [(name, pre, ops)])
    return bad or diffs.get(name)


def shrink(env, name, pre, ops, fails=fails):
    """A shortest prefix of OPS that still FAILS, then without each
    operation it does not need."""
    lo, hi = 0, len(ops)
    while lo < hi:
        mid = (lo + hi) // 2
        if fails(env, name, pre, ops[:mid]):
            hi = mid
        else:
            lo = mid + 1
    ops = ops[:hi]
    i = len(ops) - 1
    while i >= 0:
        fewer = ops[:i] + ops[i + 1:]
        if fails(env, name, pre, fewer):
            ops = fewer
        i -= 1
    return ops


def text(what):
    return "\n  ".join(what[:20]) if isinstance(what, list) else str(what)


def show(ops):
    return "\n".join("  %s %r" % (k, tuple(x if not isinstance(x, bytes) else "<%d bytes>" % len(x)
                                            for x in a)) for k, a in ops)


def main():
    args = sys.argv[1:]
    if len(args) < 5 or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if args and args[0] in ("-h", "--help") else 2
    env = Env(*args[:5])
    seeds, count, pre, batch, links, survey = range(1, 11), 100, 60, 20, True, None
    shim, points, known = None, None, set()
    i = 5
    while i < len(args):
        if args[i] == "--seeds":
            a, b = args[i + 1].split("-")
            seeds = range(int(a), int(b) + 1)
        elif args[i] == "--seed":
            seeds = [int(args[i + 1])]
        elif args[i] == "--ops":
            count = int(args[i + 1])
        elif args[i] == "--pre":
            pre = int(args[i + 1])
        elif args[i] == "--batch":
            batch = int(args[i + 1])
        elif args[i] == "--survey":
            survey = []
            i -= 1
        elif args[i] == "--no-links":
            links = False
            i -= 1
        elif args[i] == "--redo":
            env.redo = True
            i -= 1
        elif args[i] == "--kill":
            shim = os.path.abspath(args[i + 1])
        elif args[i] == "--points":
            points = int(args[i + 1])
        elif args[i] == "--known":
            known = {int(x) for x in args[i + 1].split(",") if x}
        elif args[i] == "--no-dir-mtimes":
            env.dir_mtimes = False
            i -= 1
        else:
            print("undorand: unknown option %s" % args[i], file=sys.stderr)
            return 2
        i += 2
    seeds = list(seeds)
    def case(s):
        keep = lambda ops: [o for o in ops if links or o[0] != "link"]
        return ("u-%d" % s, keep(fsrand.make_ops(s, pre, False)),
                keep(fsrand.make_ops(s + 1000000, count, False)))

    if shim:
        stale = []
        for s in seeds:
            bad = kill_seed(env, shim, points, *case(s))
            shutil.rmtree(os.path.join(env.ws, "u-%d" % s), ignore_errors=True)
            if s in known:
                print("undorand: seed %d: %s" % (s, "a documented exception: " + bad[0][:200]
                                                 if bad else "passes: drop it from --known"))
                if not bad:
                    stale.append(str(s))
                continue
            if bad and survey is not None:
                survey.append(str(s))
                print("undorand: seed %d: killed undo: %s" % (s, bad[0][:300]))
            elif bad:
                print("undorand: seed %d: killed undo:\n  %s" % (s, "\n  ".join(bad)[:3000]))
                name, p, ops = case(s)
                kills = lambda env, name, pre, ops: kill_seed(env, shim, points, name, pre, ops)
                least = shrink(env, name, p, ops, kills)
                print("its initial tree: fsrand seed %d, %d operations; a shortest run that"
                      " fails (%d operations):\n%s" % (s, pre, len(least), show(least)))
                print("which leaves:\n  %s" % "\n  ".join(kills(env, name, p, least))[:3000])
                return 1
        if survey:
            print("%d of %d seeds fail: %s" % (len(survey), len(seeds), " ".join(survey)))
            return 1
        if stale:
            print("known exceptions that now pass: %s" % " ".join(stale))
            return 1
        ran = [s for s in seeds if s not in known]
        print("%d seeds, %d operations each: every kill point at one end, completed%s"
              % (len(ran), count, " (%d documented exceptions apart)" % (len(seeds) - len(ran))
                 if len(ran) < len(seeds) else ""))
        return 0
    # --known: each alone, which must fail (a documented exception).
    stale, apart = [], [s for s in seeds if s in known]
    for s in apart:
        name, p, ops = case(s)
        what = fails(env, name, p, ops)
        print("undorand: seed %d: %s" % (s, "a documented exception: " + text(what)[:200]
                                         if what else "passes: drop it from --known"))
        if not what:
            stale.append(str(s))
        shutil.rmtree(os.path.join(env.ws, name), ignore_errors=True)
    seeds = [s for s in seeds if s not in known]
    batches = []  # --survey: those that fail though no seed of them fails alone
    for at in range(0, len(seeds), batch):
        cases = [case(s) for s in seeds[at:at + batch]]
        bad, diffs = trial(env, cases)
        if bad or diffs:
            # The first seed that fails alone, then its shortest run.
            for name, p, ops in cases:
                what = (bad or name in diffs) and fails(env, name, p, ops)
                if not what:
                    continue
                if survey is not None:
                    survey.append(name[2:])
                    print("undorand: seed %s: %s" % (name[2:], text(what)[:300]))
                    continue
                print("undorand: seed %s: not undone exactly:\n  %s" % (name[2:], text(what)))
                least = shrink(env, name, p, ops)
                print("its initial tree: fsrand seed %s, %d operations; a shortest run that"
                      " fails (%d operations):\n%s" % (name[2:], pre, len(least), show(least)))
                print("which leaves:\n  %s" % text(fails(env, name, p, least)))
                return 1
            if survey is not None and any(c[0][2:] in survey for c in cases):
                continue
            together = "%s-%s" % (cases[0][0][2:], cases[-1][0][2:])
            print("undorand: seeds %s: %s; no seed fails alone"
                  % (together, text(bad or sum(diffs.values(), []))[:300 if survey is not None
                                                                   else None]))
            if survey is None:
                return 1
            batches.append(together)
        for name, _, _ in cases:
            shutil.rmtree(os.path.join(env.ws, name), ignore_errors=True)
    if survey or batches:
        print("%d of %d seeds fail: %s" % (len(survey), len(seeds), " ".join(survey)) +
              ("; batches that fail, no seed of them alone: %s" % " ".join(batches)
               if batches else ""))
        return 1
    if stale:
        print("known exceptions that now pass: %s" % " ".join(stale))
        return 1
    print("%d seeds, %d operations each: undone exactly%s" % (
        len(seeds), count, " (%d documented exceptions apart)" % len(apart) if apart else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
