"""Several test models per experiment (issue 12 item 3), fast: runs unrolled over
experiment.models at composition, each carrying its model; means per family and over the
families (the paper's aggregation) on hand-computed values; Tables 2-4 with those rows."""

from __future__ import annotations

import csv

import pytest

from testleak.config import compose_dict, run_model, unroll_runs
from testleak.taxonomy import taxonomy_data
from testleak.errors import ConfigError
from testleak.metrics import family_means, mean_metrics

LIB = "testleak/resources/prior_library.yaml"
ATTRS = list(taxonomy_data(compose_dict([]))["attributes"])


def test_one_model_keeps_the_run_names_and_names_the_model_group():
    cfg = compose_dict(["model=gpt-4o"])
    runs = cfg["experiment"]["runs"]
    assert list(runs) == ["ours", "codexleaks", "codebreaker", "codexleaks_shared", "codebreaker_shared"]  # experiment=quick
    # a run references its model (no copy: dvc exp show lists every key of params.yaml)
    assert all((spec["model"], spec["model_params"]) == ("gpt-4o", "model") for spec in runs.values())
    assert run_model(cfg, "codexleaks")["name"] == "gpt-4o"
    assert cfg["experiment"]["library_from"] == {"ours": {"library": LIB}}


def test_protocol_times_models_with_per_model_libraries():
    a, b = {"name": "a", "family": "x"}, {"name": "b", "family": "y"}
    protocol = {"ours": {"method": "ours", "round": 0, "library": LIB},
                "ours_r1": {"method": "ours", "round": 1, "library": "data/library/ours.json"}}
    out = unroll_runs(protocol, {"m-a": a, "m_b": b}, {"name": "unused"}, ["ours"])
    assert list(out["runs"]) == ["ours--m-a", "ours--m_b", "ours_r1--m-a", "ours_r1--m_b"]
    assert out["runs"]["ours_r1--m_b"] == {"method": "ours", "round": 1, "library": "data/library/ours--m_b.json",
                                           "model": "b", "model_params": "experiment.models.m_b"}
    assert out["runs"]["ours--m-a"]["library"] == LIB
    assert out["library_from"] == {"ours--m-a": {"library": LIB}, "ours--m_b": {"library": LIB}}
    with pytest.raises(ConfigError, match="experiment.libraries = \\['nope'\\]"):
        unroll_runs(protocol, {}, a, ["nope"])


def test_model_ids_and_names_are_checked_at_composition():
    with pytest.raises(ConfigError, match="experiment.models = .*distinct model names"):
        compose_dict(["experiment=tiny_two_models", "experiment.models.qwen-b.name=qwen2.5-coder-0.5b"])
    with pytest.raises(ConfigError, match="experiment.runs.ours.model = \\(missing\\)"):
        from testleak.settings import validate

        cfg = compose_dict([])
        del cfg["experiment"]["runs"]["ours"]["model"]
        validate(cfg)
    with pytest.raises(ConfigError, match="experiment.runs.ours.model = 'other'.*recompose"):
        cfg = compose_dict([])
        cfg["experiment"]["runs"]["ours"]["model"] = "other"
        validate(cfg)
    with pytest.raises(ConfigError, match="experiment.runs.ours.model .*recompose params.yaml"):
        cfg = compose_dict([])
        cfg["experiment"]["runs"]["ours"]["model"] = "other"
        run_model(cfg, "ours")


def test_family_means_and_the_mean_over_families():
    # gpt: two models, deepseek: one (as the paper's 3 + 2); the overall mean is over families
    by_model = {"g1": {"n": 10, "r": 0.2, "nested": {"x": 1}, "complete": True, "policy": "auto", "keys": [1]},
                "g2": {"n": 20, "r": 0.4, "nested": {"x": 3}, "complete": False, "policy": "auto", "keys": [2]},
                "d1": {"n": 40, "r": 0.9, "nested": {"x": 8}, "complete": True, "policy": "both_yes", "keys": []}}
    fams, overall = family_means(by_model, {"g1": "gpt", "g2": "gpt", "d1": "deepseek"})
    assert list(fams) == ["gpt", "deepseek"]
    assert fams["gpt"] == {"n": 15, "r": pytest.approx(0.3), "nested": {"x": 2}, "complete": False, "policy": "auto"}
    assert fams["deepseek"]["n"] == 40
    assert overall["n"] == pytest.approx(27.5) and overall["r"] == pytest.approx(0.6)   # not 70/3
    assert overall["nested"] == {"x": 5} and overall["policy"] == "auto+both_yes" and "keys" not in overall
    # the paper's Sec. 6.2: 92.6 confirmed = mean of the families' 105.7 and 79.5
    assert mean_metrics([{"c": 105.7}, {"c": 79.5}])["c"] == pytest.approx(92.6)


def _metrics(run, model, family, confirmed, refused, keys):
    cats = ("identifiable", "private", "secret")
    row = {"test_cases": 10, "accepted": 10 - refused, "candidates": confirmed, "judge": confirmed,
           "in_window": confirmed, "confirmed": confirmed, "confirmed_instances": confirmed,
           "permille": confirmed * 100.0}
    lv = {c: {"lp1": confirmed / 10, "lp2": 0.0, "lp3": 0.0, "il2": 0.0, "il3": 0.0} for c in (*cats, "all")}
    return {"run": run, "experiment": "x", "method": "ours", "variant": run.split("--")[0].replace("ours_", "")
            if "_" in run.split("--")[0] else "none", "round": 0, "model": model, "family": family,
            "policy": "auto", "verifier": "local", "complete": True,
            "responses": {"responses": 1, "refusal_rate": refused / 10, "accepted": 10 - refused, "test_cases": 10},
            "steps": {"attributes": {a: row for a in ATTRS}, "categories": {c: {**row, "permille_mean_attr": 0.0} for c in cats},
                      "total": row},
            "leakage": {**lv, "test_cases": {c: 10 for c in (*cats, "all")}}, "keys": keys}


def test_reports_show_models_families_and_the_mean(tmp_path):
    from testleak.report import ReportSettings, build_reports
    from testleak.taxonomy import Taxonomy

    params = compose_dict(["experiment=tiny_two_models"])
    a, b = params["experiment"]["models"]["qwen-a"], params["experiment"]["models"]["qwen-b"]
    c = {**a, "name": "third"}        # a second model of family qwen
    fl = {"name": "no_fl", "scenario_questions": True, "library_hints": False, "test_generation": True}
    runs = {}
    for mid, m in (("qwen-a", a), ("qwen-b", b), ("third", c)):
        runs[f"ours--{mid}"] = {"method": "ours", "round": 0, "library": LIB, "model": m,
                                "ablation": params["ablation"]}
        runs[f"ours_no_fl--{mid}"] = {"method": "ours", "round": 0, "library": LIB, "model": m, "ablation": fl}
    params["experiment"]["runs"] = runs
    k1, k2, k3 = ["email", "h1"], ["email", "h2"], ["email", "h3"]
    metrics = {"ours--qwen-a": _metrics("ours--qwen-a", a["name"], "qwen", 2, 1, [k1, k2]),
               "ours--third": _metrics("ours--third", "third", "qwen", 4, 3, [k1]),
               "ours--qwen-b": _metrics("ours--qwen-b", b["name"], "qwen-b", 1, 0, [k3]),
               "ours_no_fl--qwen-a": _metrics("ours_no_fl--qwen-a", a["name"], "qwen", 1, 0, [k1]),
               "ours_no_fl--third": _metrics("ours_no_fl--third", "third", "qwen", 1, 0, [k1]),
               "ours_no_fl--qwen-b": _metrics("ours_no_fl--qwen-b", b["name"], "qwen-b", 1, 0, [k1])}
    build_reports(ReportSettings.from_params(params), metrics, {r: None for r in runs}, Taxonomy.from_config(params),
                  tmp_path)

    with (tmp_path / "table3.csv").open(encoding="utf-8") as f:
        t3 = {(r[1], r[4]): r for r in csv.reader(f)}
    # family qwen = mean of 2 and 4 confirmed / 10 test cases; the overall mean is over the two
    # families: (300 + 100) / 2 = 200 permille, not the mean over the three models (233.33)
    assert t3[("ours--mean-qwen", "all")][2:4] == ["mean of family qwen", "qwen"]
    assert t3[("ours--mean-qwen", "all")][6] == "300.00‰" and t3[("ours--mean-qwen-b", "all")][6] == "100.00‰"
    assert t3[("ours--mean", "all")][6] == "200.00‰" and t3[("ours--third", "all")][6] == "400.00‰"

    with (tmp_path / "table2.csv").open(encoding="utf-8") as f:
        t2 = list(csv.reader(f))
    total = next(r for r in t2 if r[0] == "Total")
    assert total[2::7] == ["10", "10", "10", "10", "10", "10"]     # test cases of 3 models, 2 families, mean
    assert total[6::7] == ["2", "1", "4", "3", "1", "2"]          # confirmed: qwen-a, qwen-b, third, qwen, qwen-b, mean
    assert next(r for r in t2 if r[0] == "Refusal rate")[2::7] == ["10.0%", "0.0%", "30.0%", "20.0%", "0.0%", "10.0%"]

    with (tmp_path / "table4.csv").open(encoding="utf-8") as f:
        t4 = {(r[0], r[1]): r for r in csv.reader(f)}
    # no_fl against each model's own reference: qwen-a {k1} vs {k1,k2}: TP 1 FN 1; third {k1} vs {k1}: TP 1;
    # qwen-b {k1} vs {k3}: TP 0 FN 1 FP 1. Family qwen: TP 1, FN 0.5, recall (50 + 100) / 2 = 75 %
    assert t4[("no_fl", "qwen2.5-coder-0.5b")][6:9] == ["1", "1", "0"]
    assert t4[("no_fl", "mean of family qwen")][6:9] == ["1", "0.5", "0"]
    assert t4[("no_fl", "mean of family qwen")][10] == "75.0%"
    assert t4[("no_fl", "mean over families")][6:9] == ["0.5", "0.8", "0.5"]   # (1 + 0) / 2, (0.5 + 1) / 2, (0 + 1) / 2
    assert t4[("no_fl", "mean over families")][10] == "37.5%"
    text = (tmp_path / "paper_comparison.md").read_text(encoding="utf-8")
    assert "run `ours--mean`" in text and "third (family qwen)" in text


def test_prepare_assembles_every_local_model_of_the_experiment_once():
    """`python -m testleak.prepare` covers the runs' models, the judge and the questioner; one GGUF
    file under two names (tiny_two_models: the embedded model with another seed) is assembled once;
    a human-review policy whose labels file does not exist yet does not stop it."""
    from testleak.config import compose_dict
    from testleak.prepare import local_models

    def names(overrides):
        return [(role, m["name"]) for role, m in local_models(compose_dict(overrides, check_files=False))]

    assert names([]) == [("model", "qwen2.5-coder-0.5b")]
    assert names(["experiment=tiny_two_models"]) == [("model", "qwen2.5-coder-0.5b")]
    assert names(["model=qwen2.5-coder-1.5b"]) == [("model", "qwen2.5-coder-1.5b"), ("judge", "qwen2.5-coder-0.5b")]
    # experiment=paper: hosted test models, a local judge of another size
    assert names(["experiment=paper", "judge=qwen2.5-coder-1.5b", "questioner=gpt-4o"])[1:] == [
        ("judge", "qwen2.5-coder-1.5b")]
    with pytest.raises(ConfigError, match="labels_file"):
        compose_dict(["experiment=paper"])
