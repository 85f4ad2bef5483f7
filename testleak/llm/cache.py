"""On-disk response cache (SQLite), keyed by everything that changes an answer.

The key is the sha256 of a canonical JSON of: model identity (provider, API model name,
endpoint or GGUF hash), messages, sampling parameters and the sample index. Only
successful answers are stored, so a rerun retries failures and repeats no success.
The cache lives outside DVC stage outputs (.cache/llm) so it survives `dvc repro`.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path


def cache_key(identity: dict, messages: list, params: dict, sample: int) -> str:
    blob = json.dumps({"model": identity, "messages": messages, "params": params, "sample": sample},
                      sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL, at REAL)")
        self._db.commit()

    def get(self, key: str) -> dict | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, value: dict) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO responses (key, value, at) VALUES (?, ?, ?)",
                             (key, json.dumps(value, ensure_ascii=False), time.time()))
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()
