#!/usr/bin/env python3
"""jsonq.py [--lines] [--run] CODE [FILE] - what a test wants of a JSON
document: reads it from FILE (stdin without one), binds it to d and
prints the value of the Python expression CODE; a tuple prints as
print(*t) does, its items separated by spaces ("d['a'], d['b']").
--lines: FILE holds one document per line; CODE is evaluated for each.
--run: CODE is statements that print themselves (for loops, names).
json is imported for CODE (json.dumps to print JSON again)."""
import json, sys

def main():
    args, lines, run = sys.argv[1:], False, False
    while args and args[0].startswith("--"):
        opt = args.pop(0)
        if opt == "--lines":
            lines = True
        elif opt == "--run":
            run = True
        else:
            sys.exit("jsonq.py: unknown option " + opt)
    code = args.pop(0)
    f = open(args[0], encoding="utf-8") if args else sys.stdin
    text = f.read()
    docs = [json.loads(l) for l in text.splitlines() if l.strip()] if lines else [json.loads(text)]
    for d in docs:
        scope = {"json": json, "d": d}
        if run:
            exec(code, scope)
            continue
        v = eval(code, scope)
        if isinstance(v, tuple):
            print(*v)
        else:
            print(v)

main()
