"""Write a responses file's test answers as batches for hand (or annotator-agent) labelling.

Each batch is a plain-text file under ``--out`` (keep it under ``data/``: it holds raw model
output) with, per answered response, its id, the texts the model was given (so a copy from
the prompt can be recognised) and the test answer to label. Batches are balanced by the
length of their test answers, so annotators working in parallel get similar loads. A
``GUIDE.md`` next to them holds the labelling rules of ``benchmarks/labels/README.md`` ("What
was labelled") and the 15 attributes with their taxonomy descriptions; an annotator gets that
guide and a batch, never ExtractPII's code or output.

    .venv/bin/python benchmarks/annotation_batches.py --responses R --out data/labels/fresh/seedN/batches -n 5

The raw labels the annotators write (``{"response_id", "value", "attribute", "placeholder"}``
per line) become a label set with ``eval_model_output.py --make-labels``, which checks that
each value occurs in its response's test answer.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "benchmarks"))

from eval_model_output import load_params, read_jsonl  # noqa: E402
from testleak.extract import prompt_texts  # noqa: E402

GUIDE_SECTION = "## What was labelled"


def balanced(records: list[dict], n: int) -> list[list[dict]]:
    """``records`` in ``n`` groups of about equal total test-answer length (longest first,
    each to the lightest group), each group in the input's order."""
    groups: list[list[int]] = [[] for _ in range(max(1, n))]
    load = [0] * len(groups)
    order = sorted(range(len(records)), key=lambda i: -len(records[i].get("tests_text") or ""))
    for i in order:
        g = load.index(min(load))
        groups[g].append(i)
        load[g] += len(records[i].get("tests_text") or "")
    return [[records[i] for i in sorted(g)] for g in groups if g]


def batch_text(records: list[dict]) -> str:
    parts = []
    for rec in records:
        given = "\n---\n".join(prompt_texts(rec))
        parts.append(f"=== RESPONSE {rec['id']} ===\n--- GIVEN TO THE MODEL ---\n{given}\n"
                     f"--- TEST ANSWER (label this) ---\n{rec['tests_text']}\n=== END {rec['id']} ===\n")
    return "\n".join(parts)


def guide_text(params: dict) -> str:
    from testleak.taxonomy import Taxonomy

    readme = (ROOT / "benchmarks" / "labels" / "README.md").read_text(encoding="utf-8")
    start = readme.index(GUIDE_SECTION)
    end = readme.find("\n## ", start + len(GUIDE_SECTION))
    rules = readme[start:end if end > 0 else None].strip()
    tax = Taxonomy.from_config(params)
    attrs = "\n".join(f"- `{a}`: {tax.attributes[a].description}".rstrip()
                      for a in tax.attributes)
    return (f"# Labelling guide\n\nLabel every privacy-like value in each TEST ANSWER. Write one JSON line per "
            f"distinct value of a response: "
            f'{{"response_id": ..., "value": <the exact literal text>, "attribute": ..., "placeholder": true|false}}.'
            f"\n\n{rules}\n\n## The 15 attributes\n\n{attrs}\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--responses", type=Path, required=True, help="a responses.jsonl of a run")
    ap.add_argument("--out", type=Path, required=True, help="directory for the batches (under data/)")
    ap.add_argument("-n", type=int, default=5, help="number of batches (default 5)")
    a = ap.parse_args(argv)
    if not a.responses.exists():
        print(f"{a.responses} does not exist: pass --responses with a run's responses.jsonl", file=sys.stderr)
        return 2
    if a.n < 1:
        print(f"-n must be at least 1, not {a.n}", file=sys.stderr)
        return 2
    recs = [r for r in read_jsonl(a.responses) if (r.get("tests_text") or "").strip()]
    if not recs:
        print(f"{a.responses} has no response with a test answer (tests_text): nothing to label", file=sys.stderr)
        return 2
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "GUIDE.md").write_text(guide_text(load_params()), encoding="utf-8")
    for k, group in enumerate(balanced(recs, a.n), 1):
        (a.out / f"batch{k}.txt").write_text(batch_text(group), encoding="utf-8")
        print(f"batch{k}.txt: {len(group)} responses, {sum(len(r['tests_text']) for r in group)} characters")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
