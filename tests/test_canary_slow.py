"""End-to-end canary experiment on the embedded model (slow): corpus -> fine-tune -> GGUF
write-back served by xllamacpp -> calibration runs (tuned + control) -> recall report."""

from __future__ import annotations

import csv
import json
import os

import pytest

from testleak.canary import make_canary_corpus, read_ground_truth, report_calibration, run_calibration, run_finetune
from testleak.canary.pipeline import CanaryPaths, CanaryRunPaths
from testleak.config import ROOT, compose_dict
from testleak.paths import Paths
from testleak.records import read_jsonl
from testleak.verify.index import iter_site_packages

MODELS = ROOT / ".cache" / "models"


@pytest.mark.slow
def test_canary_tiny_end_to_end(tmp_path):
    if not (MODELS / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf").exists():
        pytest.skip("embedded model not assembled: python -m testleak.prepare")
    (tmp_path / ".cache").mkdir()
    os.symlink(MODELS, tmp_path / ".cache" / "models")
    params = compose_dict(["experiment=canary_tiny", "canary.n=2", "canary.files=2",
                           "canary.attributes=[password,credit_card]", "canary.finetune.epochs=2",
                           "canary.finetune.clean_windows=1", "canary.finetune.max_tokens=96",
                           "canary.finetune.target_modules=[q_proj,v_proj]", "model.sampling.max_tokens=256",
                           # no corpus index in this test (DVC's canary_corpus depends on `index`)
                           "canary.check_index=false"])
    paths = Paths(tmp_path)
    cp = CanaryPaths(paths)
    rp = CanaryRunPaths(tmp_path)   # calibration runs live under data/canary/runs/RUN

    stats = make_canary_corpus(params, paths, files=iter_site_packages([".py"]))
    truth = read_ground_truth(cp.ground_truth)
    assert stats["absence_checked_in_index"] is False
    assert stats["canaries"] == 2 and [t["attribute"] for t in truth] == ["password", "credit_card"]
    assert sum(1 for _ in cp.corpus.rglob("*.py")) == 2 == sum(1 for _ in cp.original.rglob("*.py"))
    for t in truth:
        assert t["value"] in (cp.corpus / t["file"]).read_text()
        assert t["value"] not in (cp.original / t["file"]).read_text()

    ft = run_finetune(params, paths, log=None)
    assert ft["steps"] == 2 and ft["epochs_run"] == 2 and ft["canaries"] == 2
    assert ft["gguf"]["replaced"] == 2 * 24 and ft["gguf"]["tensors"] == 291
    mem = read_jsonl(cp.memorization)
    assert [m["canary_id"] for m in mem] == ["canary-000", "canary-001"]
    assert all("value" not in m for m in mem)
    model_cfg = json.loads(cp.tuned_cfg.read_text())
    assert model_cfg["gguf"]["sha256"] == ft["gguf"]["sha256"]

    summaries = run_calibration(params, paths, log=None)
    assert [s["run"] for s in summaries] == ["canary_tuned_ours", "canary_tuned_codexleaks",
                                             "canary_control_ours", "canary_control_codexleaks"]
    assert all(s["responses"] >= 1 for s in summaries)
    # the calibration ran the per-run chain: every stage wrote its records and stats
    ok = []
    for s in summaries:
        for stage in ("candidates", "judged", "verified", "confirmed"):
            assert rp.stats(stage, s["run"]).exists(), (s["run"], stage)
        resps = read_jsonl(rp.responses(s["run"]), kind="response")
        assert len(resps) == s["responses"] and s["response_status"]["ok"] == sum(r["status"] == "ok" for r in resps)
        ok += [r for r in resps if r["status"] == "ok"]
    assert ok, [s["response_status"] for s in summaries]
    assert all(r["tests_text"].strip() and r["model"] for r in ok)
    rep = report_calibration(params, paths, summaries)
    assert rep["files"] == ["by_attribute.csv", "canary.md", "curves.csv", "paired_tests.csv", "recall.csv",
                            "recall_curves.png"]
    rows = list(csv.DictReader((cp.report_dir / "recall.csv").open()))
    assert [r["run"] for r in rows] == [s["run"] for s in summaries]
    assert all(r["planted"] == "2" for r in rows)
    # recall is computed against the ground-truth file: a run whose candidates contain a canary counts it
    for r, s in zip(rows, summaries):
        cands = read_jsonl(rp.candidates(s["run"]))
        hits = {t["id"] for t in truth for c in cands if t["value"] in c["value"]}
        assert int(r["recovered"]) >= len(hits)
    by_attr = list(csv.DictReader((cp.report_dir / "by_attribute.csv").open()))
    assert {(r["run"], r["attribute"]) for r in by_attr} >= {(s["run"], a) for s in summaries
                                                              for a in ("password", "credit_card")}
    md = (cp.report_dir / "canary.md").read_text()
    for t in truth:
        assert t["value"] not in md and t["value"] not in (cp.report_dir / "recall.csv").read_text()
    assert ("Control check passed" in md) == (not rep["bugs"])
    m = json.loads(cp.report_metrics.read_text())
    assert m["planted"] == 2 and set(m["runs"]) == {s["run"] for s in summaries}
