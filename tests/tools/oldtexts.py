#!/usr/bin/env python3
"""oldtexts.py DB BASE CURRENT - makes every audit row of the store DB
point at the texts BASE (the version read) and CURRENT (the version
found), both stored as blobs by their SHA-256: the rows an older view
wrote, which kept the texts of every refusal."""
import hashlib, sqlite3, sys

db = sqlite3.connect(sys.argv[1])
texts = [t.encode() for t in sys.argv[2:4]]
hashes = [hashlib.sha256(t).digest() for t in texts]
db.executemany("INSERT OR IGNORE INTO blobs VALUES (?, ?)", zip(hashes, texts))
db.execute("UPDATE audit SET base_sha256 = ?, cur_sha256 = ?", hashes)
db.commit()
