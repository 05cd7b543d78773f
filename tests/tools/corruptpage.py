#!/usr/bin/env python3
"""corruptpage.py DB TABLE - damages the SQLite store DB the way a bad
disk sector does: the root page of TABLE's b-tree (its rows, while they
fit in one page) is overwritten with garbage. Checkpoints the WAL first,
so that the page read from then on is the one in the file, and the rest
of the file stays sound. Prints the page's number."""
import sqlite3, sys

db, table = sys.argv[1], sys.argv[2]
c = sqlite3.connect(db)
c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
root = c.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
size = c.execute("PRAGMA page_size").fetchone()[0]
c.close()
with open(db, "r+b") as f:
    f.seek((root - 1) * size)
    f.write(bytes([0xDE, 0xAD, 0xBE, 0xEF]) * (size // 4))
print(root)
