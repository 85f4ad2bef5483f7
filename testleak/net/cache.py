"""On-disk answer cache (SQLite), keyed by a canonical JSON of everything that changes an answer.

Clients store only successful answers, so a rerun retries failures and repeats no success.
The caches live outside DVC stage outputs (under .cache/) so they survive ``dvc repro``.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
import time
from pathlib import Path

_TABLE = re.compile(r"^[a-z_][a-z0-9_]*$")


def canonical_key(obj) -> str:
    """sha256 (hex) of ``obj`` as canonical JSON (sorted keys, no spaces, UTF-8)."""
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class JsonCache:
    """``key -> JSON value`` in one SQLite table, safe to share between threads."""

    def __init__(self, path: str | Path, table: str = "responses"):
        if not _TABLE.match(table):
            raise ValueError(f"bad cache table name {table!r}")
        self.path = Path(path)
        self.table = table
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY, value TEXT NOT NULL, at REAL)")
        self._db.commit()

    def get(self, key: str) -> dict | None:
        with self._lock:
            row = self._db.execute(f"SELECT value FROM {self.table} WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, value) -> None:
        with self._lock:
            self._db.execute(f"INSERT OR REPLACE INTO {self.table} (key, value, at) VALUES (?, ?, ?)",
                             (key, json.dumps(value, ensure_ascii=False), time.time()))
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()
