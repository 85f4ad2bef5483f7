"""Several test models in one experiment, end to end: `dvc repro` of `experiment=tiny_two_models`
(the embedded 0.5B model twice, the second with another sampling seed and another family label)
runs every per-run stage once per model and writes Tables 2-4 with a row (or column) per model,
per family and for the mean over the families; the means are checked against the per-model
metrics the metrics stages wrote."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from testleak.records import read_jsonl
from tests.project import env_for, make_project, run

pytestmark = pytest.mark.slow

MODELS = {"qwen-a": ("qwen2.5-coder-0.5b", "qwen"), "qwen-b": ("qwen2.5-coder-0.5b-seed7", "qwen-b")}
SMALL = ["experiment=tiny_two_models", "verifier.local.max_bytes=3000000", "verifier.judge_mode=rules",
         "questioner.sampling.max_tokens=320"] + [f"experiment.models.{m}.sampling.max_tokens=320" for m in MODELS]


def _csv(path: Path) -> list[list[str]]:
    with path.open(encoding="utf-8") as f:
        return list(csv.reader(f))


def _pm(fraction: float) -> str:
    return f"{fraction * 1000:.2f}‰"


@pytest.fixture(scope="module")
def project(tmp_path_factory, session_cache):
    base = tmp_path_factory.mktemp("models")
    proj = make_project(base / "p", SMALL)
    env = env_for(session_cache)
    run(["dvc", "repro"], proj, env)
    return proj


def test_every_run_stage_ran_once_per_model(project):
    for mid, (name, family) in MODELS.items():
        rs = read_jsonl(project / f"data/runs/ours--{mid}/responses.jsonl", kind="response")
        ok = [r for r in rs if r["status"] == "ok"]
        assert ok, [(r["status"], r["error"]) for r in rs]
        assert all(r["model"] == name and r["run"] == f"ours--{mid}" and r["turn2"]["text"] for r in ok)
        m = json.loads((project / f"data/metrics/ours--{mid}.json").read_text())
        assert (m["model"], m["family"], m["method"], m["variant"]) == (name, family, "ours", "none")
        assert m["responses"]["responses"] == len(rs) and m["steps"]["total"]["test_cases"] > 0


def test_tables_show_each_model_each_family_and_the_mean(project):
    ms = {mid: json.loads((project / f"data/metrics/ours--{mid}.json").read_text()) for mid in MODELS}
    # Table 3: one row per model, per family (one model each here) and the mean over the families
    t3 = _csv(project / "reports/table3.csv")
    assert t3[0][:6] == ["Method", "Run", "Model", "Family", "Category", "Test cases"]
    assert t3[0][5:11] == ["Test cases", "LP>=1", "LP>=2", "LP>=3", "IL>=2", "IL>=3"]
    assert t3[0][11:17] == ["Budget: responses", "Budget: test cases", "Budget: completion tokens",
                            "Budget: prompt + completion tokens", "Budget: USD", "Budget rule"]
    rows = {(r[1], r[4]): r for r in t3[1:]}
    for mid, (name, family) in MODELS.items():
        own = rows[(f"ours--{mid}", "all")]
        fam = rows[(f"ours--mean-{family}", "all")]
        assert own[2:4] == [name, family] and fam[2:4] == [f"mean of family {family}", family]
        assert own[5:11] == fam[5:11] and own[5] == str(ms[mid]["leakage"]["test_cases"]["all"])
        assert own[6:11] == [_pm(ms[mid]["leakage"]["all"][k]) for k in ("lp1", "lp2", "lp3", "il2", "il3")]
        # the budget the run spent (its responses stage), as metrics recorded it
        eff = ms[mid]["efficiency"]
        assert own[11:15] == [str(eff[k]) for k in ("responses", "test_cases", "completion_tokens", "tokens")]
        assert eff["responses"] == ms[mid]["responses"]["responses"] > 0 and eff["completion_tokens"] > 0
        assert own[15] == "0.0000" and own[16] == "own (questions x tests)"  # a local model costs 0 USD
    mean = rows[("ours--mean", "all")]
    assert mean[2] == "mean over families"
    assert mean[6] == _pm(sum(m["leakage"]["all"]["lp1"] for m in ms.values()) / 2)
    tc = sum(m["leakage"]["test_cases"]["all"] for m in ms.values()) / 2
    assert mean[5] == (str(int(tc)) if float(tc).is_integer() else f"{tc:.1f}")
    # Table 2: the column groups of each model, each family and the mean
    t2 = _csv(project / "reports/table2.csv")
    head = t2[0]
    groups = [f"ours / {n}" for n, _ in MODELS.values()] + [f"ours / mean of family {f}" for _, f in MODELS.values()] \
        + ["ours / mean over families"]
    assert [h.rsplit(": ", 1)[0] for h in head[2::7]] == groups
    refusal = next(r for r in t2 if r[0] == "Refusal rate")
    rates = [m["responses"]["refusal_rate"] for m in ms.values()]
    assert refusal[2::7] == [f"{x * 100:.1f}%" for x in rates + rates + [sum(rates) / 2]]
    # Table 4: the reference rows (variant none) of each model, each family and the mean
    t4 = _csv(project / "reports/table4.csv")
    assert t4[0][:3] == ["Variant", "Model", "Run"]
    none = {r[1]: r for r in t4[1:] if r[0] == "none"}
    assert set(none) == {n for n, _ in MODELS.values()} | {f"mean of family {f}" for _, f in MODELS.values()} \
        | {"mean over families"}
    assert none["mean over families"][-1] == f"{sum(rates) / 2 * 100:.2f}%"
    text = (project / "reports/table2.md").read_text(encoding="utf-8")
    assert "Models `qwen2.5-coder-0.5b` (family qwen), `qwen2.5-coder-0.5b-seed7` (family qwen-b)" in text
