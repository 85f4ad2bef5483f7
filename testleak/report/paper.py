"""The paper's published numbers (testleak/resources/paper_results.yaml, transcribed from
arXiv 2605.15248 Tables 2-4 and Sec. 6.2)."""

from __future__ import annotations

from pathlib import Path

from ..errors import DataError
from ..resources_io import RESOURCES, parse_yaml

PAPER_RESULTS = RESOURCES / "paper_results.yaml"


def load_paper_results(path: str | Path | None = None) -> dict:
    p = Path(path) if path else PAPER_RESULTS
    if not p.exists():
        raise DataError(f"{p} not found: reinstall testleak (it ships resources/paper_results.yaml)")
    data = parse_yaml(p.read_text(encoding="utf-8"))
    for key in ("table2", "table3", "table4", "refusal_rate"):
        if key not in data:
            raise DataError(f"{p} lacks {key!r}: restore the file from git")
    return data
