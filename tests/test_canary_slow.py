"""End-to-end canary experiment on the embedded model (slow): corpus -> fine-tune -> GGUF
write-back served by xllamacpp -> calibration runs (tuned + control) and the prefix probe -> recall
report. The positive control (issue 26 item 3): the served tuned model gives back at least one canary
from its own context prefix, the control model none."""

from __future__ import annotations

import csv
import itertools
import json
import math
import os

import pytest

from testleak.canary import make_canary_corpus, read_ground_truth, report_calibration, run_calibration, run_finetune
from testleak.canary.pipeline import CanaryPaths, CanaryRunPaths
from testleak.config import ROOT, compose_dict

METHODS = ("ours", "ours_r1", "codexleaks", "prefix")   # the calibration runs of canary_tiny and the probe
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
    # the auditing-team path (issue 15): the canaries come from a spec file, one with its own
    # context, planted 1 and 3 times; exposure against 20 alternatives each; a fine-tune long enough
    # to memorize (16 epochs of 2 steps; windows of 2 lines before the snippet fit in 128 tokens)
    spec = tmp_path / "canaries.jsonl"
    spec.write_text(json.dumps({"value": "Zq8!vR2#mT5wLp", "attribute": "password"}) + "\n"
                    + json.dumps({"value": "4929 1731 8845 2207", "attribute": "credit_card", "duplication": 3,
                                  "context": 'BILLING_CARD = {"number": "{{value}}", "holder_id": 7}\n'}) + "\n")
    params = compose_dict(["experiment=canary_tiny", f"canary.spec={spec}", "canary.duplication=[1]",
                           "canary.exposure.alternatives=20", "canary.files=2", "canary.finetune.epochs=16",
                           "canary.finetune.clean_windows=1", "canary.finetune.max_tokens=128",
                           "canary.finetune.context_lines=2",
                           "canary.finetune.target_modules=[q_proj,v_proj]", "model.sampling.max_tokens=256",
                           "canary.seeds=[0]",    # one elicitation seed here (CI time); more: tests/test_stats.py
                           # no corpus index in this test (DVC's canary_corpus depends on `index`)
                           "canary.check_index=false"])
    paths = Paths(tmp_path)
    cp = CanaryPaths(paths)
    rp = CanaryRunPaths(tmp_path)   # calibration runs live under data/canary/runs/RUN

    stats = make_canary_corpus(params, paths, files=iter_site_packages([".py"]))
    truth = read_ground_truth(cp.ground_truth)
    assert stats["absence_checked_in_index"] is False
    assert stats["canaries"] == 2 and [t["attribute"] for t in truth] == ["password", "credit_card"]
    assert stats["source"] == "spec" and stats["copies_planted"] == 4 and stats["by_duplication"] == {"1": 1, "3": 1}
    # the value without a context takes the first built-in kind; the one with its own is classified
    assert [(t["context_kind"], t["context_source"]) for t in truth] == [("kv_line", "builtin"), ("config_dict", "spec")]
    assert [t["value"] for t in truth] == ["Zq8!vR2#mT5wLp", "4929 1731 8845 2207"]     # exactly the given ones
    assert sum(1 for _ in cp.corpus.rglob("*.py")) == 2 == sum(1 for _ in cp.original.rglob("*.py"))
    for t in truth:
        planted = sum(p.read_text().count(t["value"]) for p in cp.corpus.rglob("*.py"))
        assert planted == t["duplication"] == len(t["copies"])
        assert not any(t["value"] in p.read_text() for p in cp.original.rglob("*.py"))

    ft = run_finetune(params, paths, log=None)
    assert ft["steps"] == 16 * 2 and ft["epochs_run"] == 16 and ft["canaries"] == 2 and ft["examples"] == 4 + 1
    assert ft["gguf"]["replaced"] == 2 * 24 and ft["gguf"]["tensors"] == 291
    assert ft["exposure"]["alternatives"] == 20 and ft["exposure"]["candidates_min"] == 21
    mem = read_jsonl(cp.memorization)
    assert [m["canary_id"] for m in mem] == ["canary-000", "canary-001"] and [m["duplication"] for m in mem] == [1, 3]
    assert all("value" not in m for m in mem)
    for m in mem:
        for kind in ("", "_control"):
            assert 1 <= m[f"rank{kind}"] <= 21 and 0.0 <= m[f"exposure{kind}"] <= math.log2(21) + 1e-9
            assert m[f"exposure{kind}"] == pytest.approx(math.log2(21) - math.log2(m[f"rank{kind}"]), abs=1e-3)
    model_cfg = json.loads(cp.tuned_cfg.read_text())
    assert model_cfg["gguf"]["sha256"] == ft["gguf"]["sha256"]

    summaries = run_calibration(params, paths, log=None)
    # per model: ours (round 0), then its library round ours_r1 (the reference), then the baseline
    assert [s["run"] for s in summaries] == [f"canary_{k}_{r}_s0" for k in ("tuned", "control")
                                             for r in ("ours", "ours_r1", "codexleaks")] + [
        "canary_tuned_prefix_s0", "canary_control_prefix_s0"]
    assert all(s["responses"] >= 1 for s in summaries)
    probes, summaries = summaries[6:], summaries[:6]      # the probe: one request per canary, responses only
    # the library round: ours' confirmed leaks and the prior make the library ours_r1 asks with
    for kind in ("tuned", "control"):
        r0 = next(s for s in summaries if s["run"] == f"canary_{kind}_ours_s0")
        lib = json.loads((tmp_path / r0["library"]).read_text())
        assert r0["library"] == f"data/canary/runs/canary_{kind}_ours_s0/library.json" and lib["base"] == "prior"
        r0_resps = read_jsonl(rp.responses(r0["run"]), kind="response")
        r1 = read_jsonl(rp.responses(f"canary_{kind}_ours_r1_s0"), kind="response")
        # the rounds share their code turn (sample 0), so the same questions reach the test turn
        hinted = [r for r in r1 if r.get("hints")]
        assert len(hinted) == sum(bool(r.get("hints")) for r in r0_resps)
        assert all(r["hints"]["library"] == r0["library"] for r in hinted if r["hints"]["enabled"])
    for s in probes:
        resps = read_jsonl(rp.responses(s["run"]), kind="response")
        assert [r["canary_id"] for r in resps] == ["canary-000", "canary-001"] and s["responses"] == 2
        assert s["spend"]["calls"] == 2 and s["spend"]["completion_tokens"] > 0
        assert all(r["prompt_text"].endswith(t["line_prefix"]) for r, t in zip(resps, truth))
    # equal tokens: codexleaks matched ours' completion tokens of the same model and seed (match_ours)
    for kind in ("tuned", "control"):
        ref = next(s for s in summaries if s["run"] == f"canary_{kind}_ours_r1_s0")
        b = next(s for s in summaries if s["run"] == f"canary_{kind}_codexleaks_s0")
        assert ref["budget"] is None and ref["spend"]["completion_tokens"] > 0
        assert b["budget"]["target_completion_tokens"] == ref["spend"]["completion_tokens"]
        assert b["budget"]["reference"] == f"canary_{kind}_ours_r1_s0" and b["budget"]["stop"] in ("target reached",
                                                                                              "max_responses")
        assert b["spend"]["completion_tokens"] == b["budget"]["completion_tokens"]
        assert (b["budget"]["stop"] == "target reached") == (b["spend"]["completion_tokens"] >= ref["spend"]["completion_tokens"])
        assert b["responses"] <= 4
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
    rep = report_calibration(params, paths, summaries + probes)
    assert rep["files"] == ["by_attribute.csv", "by_attribute_method.csv", "by_context.csv", "by_duplication.csv",
                            "by_exposure.csv", "canary.md", "control.csv", "curves.csv", "methods.csv",
                            "paired_tests.csv", "recall.csv", "recall_at_ours_spend.csv", "recall_vs_budget.csv",
                            "recall_vs_budget.png"]
    # ours' questions were asked for the seed (one file per elicitation seed)
    assert read_jsonl(cp.questions / "s0.jsonl", kind="question")
    # the positive control: the tuned model gives back a canary from its own prefix, the control none
    ceiling = {(m["model"], m["method"]): m for m in rep["methods"] if m["method"] == "prefix"}
    assert ceiling[("tuned", "prefix")]["recovered_cells"] >= 1, "the tuned model gave back no canary from its prefix"
    assert ceiling[("control", "prefix")]["recovered_cells"] == 0, "the control model gave back a canary"
    assert all(m["ceiling_recall"] == ceiling[(m["model"], "prefix")]["recall"] for m in rep["methods"])
    by_ctx = list(csv.DictReader((cp.report_dir / "by_context.csv").open()))
    assert {(r["model"], r["context_kind"]) for r in by_ctx} == {(k, c) for k in ("tuned", "control")
                                                                 for c in ("kv_line", "config_dict")}
    by_dup = list(csv.DictReader((cp.report_dir / "by_duplication.csv").open()))
    assert {(r["model"], r["method"], r["duplication"], r["planted"]) for r in by_dup} == {
        (k, m, d, "1") for k in ("tuned", "control") for m in METHODS for d in ("1", "3")}
    by_exp = list(csv.DictReader((cp.report_dir / "by_exposure.csv").open()))
    assert all(sum(int(r["planted"]) for r in by_exp if (r["model"], r["method"]) == (k, m)) == 2
               for k in ("tuned", "control") for m in METHODS)
    rows = list(csv.DictReader((cp.report_dir / "recall.csv").open()))
    assert [r["run"] for r in rows] == [s["run"] for s in summaries + probes]
    assert all(r["planted"] == "2" and r["seed"] == "0" for r in rows)
    assert [int(r["completion_tokens"]) for r in rows] == [s["spend"]["completion_tokens"] for s in summaries + probes]
    # recall is computed against the ground-truth file: a run whose candidates contain a canary counts it
    for r, s in zip(rows, summaries):
        cands = read_jsonl(rp.candidates(s["run"]))
        hits = {t["id"] for t in truth for c in cands if t["value"] in c.get("value", "")}
        assert int(r["recovered"]) >= len(hits)
    by_attr = list(csv.DictReader((cp.report_dir / "by_attribute.csv").open()))
    assert {(r["run"], r["attribute"]) for r in by_attr} >= {(s["run"], a) for s in summaries
                                                              for a in ("password", "credit_card")}
    # the new sections (issue 15 item 4): methods with intervals, paired tests, curves with bands, control
    methods = list(csv.DictReader((cp.report_dir / "methods.csv").open()))
    assert {(m["model"], m["method"]) for m in methods} == {(k, m) for k in ("tuned", "control")
                                                            for m in METHODS}
    for m in methods:
        assert float(m["recall_ci_low"]) <= float(m["recall"]) <= float(m["recall_ci_high"]) and m["seeds"] == "1"
    tests = list(csv.DictReader((cp.report_dir / "paired_tests.csv").open()))
    assert {(t["model"], t["method_a"], t["method_b"]) for t in tests} == {
        (k, a, b) for k in ("tuned", "control") for a, b in itertools.combinations(METHODS, 2)}
    assert all(0 < float(t["p"]) <= 1 and t["p"] == t["p_mcnemar_any_seed"] for t in tests)   # one seed: McNemar
    curve = [r for r in csv.DictReader((cp.report_dir / "recall_vs_budget.csv").open()) if r["model"] == "tuned"]
    for unit in ("responses", "test_cases", "completion_tokens", "tokens"):    # every budget unit (issue 26 item 4)
        for m in ("ours", "codexleaks"):
            rec = [float(r["recall"]) for r in curve if r["method"] == m and r["unit"] == unit]
            assert rec == sorted(rec) and len(rec) >= 2, (unit, m)
    at = {(r["method"], r["unit"]): r for r in csv.DictReader((cp.report_dir / "recall_at_ours_spend.csv").open())}
    assert {u for _, u in at} == {"responses", "test_cases", "completion_tokens", "tokens"}
    # within its own spend the reference recovers what its whole run recovered (the spend accounting adds up)
    ref_recall = {m["method"]: m["recall"] for m in rep["methods"] if m["model"] == "tuned"}["ours_r1"]
    assert all(float(at[("ours_r1", u)]["recall"]) == ref_recall for u in ("responses", "test_cases", "tokens"))
    assert "In every budget unit, recall within ours' spend: responses" in rep["answer"]
    control = list(csv.DictReader((cp.report_dir / "control.csv").open()))
    assert {c["method"] for c in control} == set(METHODS)
    assert sum(int(c["false_recoveries"]) for c in control) == len(rep["bugs"])
    md = (cp.report_dir / "canary.md").read_text()
    assert md.splitlines()[2] == f"**Answer.** {rep['answer']}" and "vs CodexLeaks" in rep["answer"]
    assert " [" in rep["answer"] and "p = " in rep["answer"] and "What would change it:" in md
    for sec in ("## Methods", "## Recall per attribute beside the ceiling", "## Recall per context kind beside the ceiling",
                "## Paired tests", "## False recoveries on the control model", "## Runs"):
        assert sec in md
    for t in truth:
        assert t["value"] not in md and t["value"] not in (cp.report_dir / "recall.csv").read_text()
    assert ("Control check passed" in md) == (not rep["bugs"])
    m = json.loads(cp.report_metrics.read_text())
    assert m["planted"] == 2 and set(m["runs"]) == {s["run"] for s in summaries + probes} and m["answer"] == rep["answer"]
    assert set(m["methods"]) == {f"{k}/{x}" for k in ("tuned", "control") for x in METHODS}
    assert m["ceiling"]["tuned"] > 0 and m["ceiling"]["control"] == 0
