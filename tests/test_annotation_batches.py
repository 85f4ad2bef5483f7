"""benchmarks/annotation_batches.py: every answered response lands in exactly one batch, the
batches carry what the annotator needs (the prompt texts and the answer), loads are balanced,
and the guide holds the labelling rules and every attribute. Synthetic answers only."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _module():
    spec = importlib.util.spec_from_file_location("annotation_batches", ROOT / "benchmarks" / "annotation_batches.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _responses(tmp_path: Path) -> Path:
    recs = [{"id": f"r_{i}", "status": "ok", "prompt_text": f"question {i}",
             "tests_text": f'def test_{i}():\n    login(username="falke{i}")\n' + "#\n" * (i * 7)} for i in range(9)]
    recs.append({"id": "r_no_code", "status": "no_code", "tests_text": ""})
    p = tmp_path / "responses.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return p


def test_batches_partition_the_answers_with_balanced_loads(tmp_path):
    mod = _module()
    out = tmp_path / "batches"
    assert mod.main(["--responses", str(_responses(tmp_path)), "--out", str(out), "-n", "3"]) == 0
    texts = [(out / f"batch{k}.txt").read_text() for k in (1, 2, 3)]
    ids = [line.split()[2] for t in texts for line in t.splitlines() if line.startswith("=== RESPONSE")]
    assert sorted(ids) == sorted(f"r_{i}" for i in range(9))
    assert all(f"question {i}" in t for t in texts for i in range(9) if f"RESPONSE r_{i} " in t)
    loads = [sum(len(x) for x in t.split("TEST ANSWER")[1:]) for t in texts]
    assert max(loads) < 1.5 * min(loads)
    guide = (out / "GUIDE.md").read_text()
    assert "## What was labelled" in guide and "`secret_key`:" in guide and "`credit_card`:" in guide
    assert guide.count("\n- `") >= 15


def test_a_file_without_answers_is_refused_with_one_line(tmp_path, capsys):
    mod = _module()
    p = tmp_path / "responses.jsonl"
    p.write_text(json.dumps({"id": "r_1", "status": "no_code", "tests_text": ""}) + "\n")
    assert mod.main(["--responses", str(p), "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "nothing to label" in err
