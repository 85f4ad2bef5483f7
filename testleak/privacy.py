"""What may leave data/: masking and hashing of raw candidate values.

Raw values live only in JSONL under data/. Everything a human reads (reports, logs,
figures, metrics, exception messages) goes through :func:`mask`; where a stable key is
needed outside data/, use :func:`value_hash` (salted for lists that must recognise values
without holding them, such as the placeholder list).
"""

from __future__ import annotations

import hashlib
import math
import re

MASK_CHAR = "*"
_EMAIL = re.compile(r"^([^@\s]+)@([^@\s]+)$")


def value_hash(value: str, salt: str = "") -> str:
    """A stable, non-reversible key for a value: sha256 of ``salt + value``, 16 hex chars.

    The project's one hashing concept. Records key raw values without a salt (``value_hash``
    fields, labels, confirmed keys); a list that must recognise values without holding them
    (the placeholder list, testleak/resources/placeholders.yaml) hashes them with its own salt,
    so that its entries match no record hash."""
    return hashlib.sha256((salt + value).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _mask_run(s: str, keep_head: int, keep_tail: int) -> str:
    n = len(s)
    if n <= keep_head + keep_tail:
        keep_head = min(keep_head, max(0, n // 3))
        keep_tail = 0
    hidden = n - keep_head - keep_tail
    return s[:keep_head] + MASK_CHAR * hidden + (s[n - keep_tail:] if keep_tail else "")


def mask(value: object) -> str:
    """Mask a privacy value for display, e.g. ``george.t******@outlook.com``.

    Emails keep the first half of the local part and the domain; other values keep about
    a third of their characters at the start and two at the end (none for values shorter
    than 8), and at least half of every value is hidden.
    """
    s = "" if value is None else str(value)
    if not s:
        return s
    m = _EMAIL.match(s)
    if m:
        local, domain = m.groups()
        keep = max(1, len(local) // 2) if len(local) > 1 else 0
        return _mask_run(local, keep, 0) + "@" + domain
    n = len(s)
    if n < 4:
        return MASK_CHAR * n
    tail = 2 if n >= 8 else 0
    head = min(math.ceil(n / 3), n // 2 - tail) if n >= 8 else n // 4
    return _mask_run(s, max(head, 0), tail)


def mask_in_text(text: str, values: list[str] | set[str]) -> str:
    """Replace every occurrence of the given raw values inside text by their mask."""
    for v in sorted({v for v in values if v}, key=len, reverse=True):
        text = text.replace(v, mask(v))
    return text

