"""Small formatting helpers: Markdown tables and number formats (no extra dependency)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Sequence

NOT_RUN = "not run"


def md_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    def cell(x):
        return str(x).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def write_csv(path: Path, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(headers)
        w.writerows(rows)


def num(x, digits: int = 1) -> str:
    """Counts: integers as such, averages with ``digits`` decimals; None -> '-'."""
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    if float(x).is_integer():
        return str(int(x))
    return f"{x:.{digits}f}"


def pm(x, digits: int = 2) -> str:
    """A value already in permille."""
    return "-" if x is None else (x if isinstance(x, str) else f"{x:.{digits}f}‰")


def frac_pm(x, digits: int = 2) -> str:
    """A fraction shown in permille."""
    return "-" if x is None else (x if isinstance(x, str) else f"{x * 1000:.{digits}f}‰")


def pct(x, digits: int = 1) -> str:
    """A fraction shown in percent."""
    return "-" if x is None else (x if isinstance(x, str) else f"{x * 100:.{digits}f}%")


def pc(x, digits: int = 1) -> str:
    """A value already in percent."""
    return "-" if x is None else (x if isinstance(x, str) else f"{x:.{digits}f}%")


UNREVIEWED = "unreviewed"


def review_label(policy: str | None) -> str:
    """The review policy as shown in titles and cells: ``auto`` is the automatic reviewer
    (format rules + judge, in window) without a human, so its results are labelled unreviewed."""
    p = policy or "unknown"
    return f"{p} ({UNREVIEWED})" if "auto" in p.split("+") else p
