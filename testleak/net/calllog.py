"""The call log: one JSON line per call (cached, shared or sent), metadata only.

Clients pass latency, tokens, status, error kind, attempts, cache flags and a short key;
never prompt text, query values or secrets. String values are passed through
:func:`mask_urls_in_text` as a last guard against credentials in URLs.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from .urls import mask_urls_in_text


class CallLog:
    """Appends records to a JSONL file (no file: records are dropped)."""

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path else None
        self._lock = threading.Lock()

    def write(self, **record) -> None:
        if self.path is None:
            return
        rec = {"ts": round(time.time(), 3)}
        rec.update({k: mask_urls_in_text(v) if isinstance(v, str) else v for k, v in record.items()})
        line = json.dumps(rec, ensure_ascii=False) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as f:
                f.write(line)
