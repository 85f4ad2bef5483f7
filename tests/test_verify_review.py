"""Human review: the review loop with scripted answers (the same flow through the installed
`testleak` in a real terminal: tests/test_review_terminal.py), Cohen's kappa on a
hand-computed example, confirmation policies."""

from __future__ import annotations

import io
import json

import pytest
import yaml

from testleak.errors import ConfigError
from testleak.paths import Paths
from testleak.privacy import key_id, label_hash, mask, value_hash, value_key
from testleak.records import read_jsonl, write_jsonl
from testleak.cli import build_parser, main
from testleak.cli_review import run
from testleak.verify.review import agreement, confirm


def _hit(cid, outcome, run="ours"):
    return {"candidate_id": cid, "run": run, "attribute": "email", "value_hash": f"h{cid}", "backend": "github",
            "kept": True, "outcome": outcome, "k": 3 if outcome == "in_window" else 0, "repo_ids": [1, 2],
            "repos": ["a/b"], "paths": ["a/b/src/x.py"], "query": "q", "engine": "github-rest-legacy",
            "searched_at": "2026-01-01T00:00:00+00:00"}


@pytest.fixture
def project(tmp_path):
    root = tmp_path
    from testleak.config import compose_dict

    params = compose_dict(["experiment=tiny"])  # a full, valid params.yaml (stages and the UI validate it)
    params["review"] = {"policy": "both_yes", "reviewers": ["r1", "r2"], "labels_file": "data/labels/labels.jsonl"}
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    p = Paths(root)
    values = {"c1": "wei.zhang83@qq.com", "c2": "maria.lopez@uni-x.es", "c3": "k.tan@corp.cn", "c4": "a.b@c.de"}
    write_jsonl(p.candidates("ours"), [{"id": c, "response_id": "r", "run": "ours", "attribute": "email", "value": v,
                                        "value_hash": f"h{c}"} for c, v in values.items()], kind="candidate")
    write_jsonl(p.verified("ours"), [_hit("c1", "in_window"), _hit("c2", "out_of_window"), _hit("c3", "in_window"),
                                     _hit("c4", "in_window")], kind="hit")
    write_jsonl(p.judged("ours"), [{"candidate_id": c, "run": "ours", "attribute": "email", "value_hash": f"h{c}",
                                    "rules": {"ok": True, "reason": "valid email syntax"},
                                    "judge": {"ok": c != "c4", "reason": "r", "status": "ok"}, "kept": True}
                                   for c in values], kind="verdict")
    return root, values


def run_review(root, answers, *argv):
    it = iter(answers)

    def inp(_prompt):
        try:
            return next(it)
        except StopIteration:
            raise EOFError

    out = io.StringIO()
    rc = run(build_parser().parse_args(["review", "--root", str(root), *argv]), inp=inp, out=out)
    return rc, out.getvalue()


def test_labels_recorded_masked_display_and_resume(project):
    root, values = project
    rc, out = run_review(root, ["y", "q"], "--reviewer", "r1")
    assert rc == 0
    assert "3 of 3 in-window candidates" in out
    assert mask(values["c1"]) in out and values["c1"] not in out       # masked by default
    labels = read_jsonl(root / "data/labels/labels.jsonl", kind="label")
    key = value_key(Paths(root).cache)
    assert [(l["candidate_id"], l["reviewer"], l["label"], l["value_hash"], l["key_id"]) for l in labels] == \
        [("c1", "r1", "yes", label_hash(values["c1"], key), key_id(key))]   # keyed, not the record's value_hash
    # resume: c1 is done; reveal shows the raw value on request; bad keys are asked again
    rc, out = run_review(root, ["r", "maybe", "l", "n"], "--reviewer", "r1")
    assert "2 of 3 in-window candidates to label (1 done earlier)" in out
    assert values["c3"] in out and values["c2"] not in out            # c2 is out of window
    assert "unknown answer 'maybe'" in out
    labels = read_jsonl(root / "data/labels/labels.jsonl", kind="label")
    assert [(l["candidate_id"], l["label"]) for l in labels] == [("c1", "yes"), ("c3", "likely"), ("c4", "no")]
    rc, out = run_review(root, [], "--reviewer", "r1")
    assert "0 of 3" in out
    # second reviewer, then agreement
    run_review(root, ["y", "y", "n"], "--reviewer", "r2")
    rc, out = run_review(root, [], "--agreement")
    res = json.loads(out)
    assert (res["n"], res["observed_agreement"]) == (3, round(2 / 3, 4))


def test_review_needs_a_reviewer(project, capsys):
    root, _ = project
    rc = main(["review", "--root", str(root)])
    err = capsys.readouterr().err
    assert rc == 2 and "--reviewer NAME" in err and err.count("\n") == 1


def test_kappa_hand_computed():
    # r1: yes yes no no yes ; r2: yes no no no yes -> po = 4/5; pe = (3/5*2/5) + (2/5*3/5) = 12/25
    # kappa = (0.8 - 0.48) / (1 - 0.48) = 0.32/0.52 = 0.615385
    a = ["yes", "yes", "no", "no", "yes"]
    b = ["yes", "no", "no", "no", "yes"]
    labels = [{"candidate_id": f"c{i}", "reviewer": r, "label": l}
              for r, ls in (("r1", a), ("r2", b)) for i, l in enumerate(ls)]
    labels.append({"candidate_id": "c9", "reviewer": "r1", "label": "yes"})   # only one reviewer: ignored
    res = agreement(labels, ["r1", "r2"])
    assert res == {"reviewers": ["r1", "r2"], "n": 5, "kappa": 0.6154, "observed_agreement": 0.8}
    with pytest.raises(ConfigError, match="exactly two reviewers"):
        agreement(labels, ["r1"])


def test_policies():
    hits = [_hit("c1", "in_window"), _hit("c2", "in_window"), _hit("c3", "in_window"), _hit("c4", "out_of_window"),
            _hit("c5", "in_window")]
    verdicts = [{"candidate_id": c, "judge": {"ok": c != "c2", "status": "ok"}, "kept": c != "c2"}
                for c in ("c1", "c2", "c3", "c4", "c5")]
    labels = [{"candidate_id": "c1", "reviewer": "r1", "label": "yes"}, {"candidate_id": "c1", "reviewer": "r2", "label": "yes"},
              {"candidate_id": "c2", "reviewer": "r1", "label": "yes"}, {"candidate_id": "c2", "reviewer": "r2", "label": "likely"},
              {"candidate_id": "c3", "reviewer": "r1", "label": "no"}, {"candidate_id": "c3", "reviewer": "r1", "label": "yes"},
              {"candidate_id": "c3", "reviewer": "r2", "label": "no"}]
    st = lambda recs: [r["status"] for r in recs]  # noqa: E731
    assert st(confirm(hits, verdicts, labels, "both_yes", ["r1", "r2"])) == \
        ["confirmed", "potential", "rejected", "not_in_window", "potential"]
    assert st(confirm(hits, verdicts, labels, "yes_or_likely", ["r1", "r2"])) == \
        ["confirmed", "confirmed", "rejected", "not_in_window", "potential"]
    auto = confirm(hits, verdicts, labels, "auto")
    assert st(auto) == ["confirmed", "potential", "confirmed", "not_in_window", "confirmed"]
    assert {r["policy"] for r in auto} == {"auto"}
    with pytest.raises(ConfigError, match="known: both_yes, yes_or_likely, auto"):
        confirm(hits, verdicts, labels, "majority", ["r1"])
    with pytest.raises(ConfigError, match="needs review.reviewers"):
        confirm(hits, verdicts, labels, "both_yes", [])


def test_labels_migrate_rehashes_old_labels_with_the_project_key(project):
    """A label/1 file (plain record hashes) is rewritten as label/2 under the project's key by
    `testleak labels migrate`; a label whose candidate is gone refuses the migration until
    --drop-unavailable, and the readers name the command for an unmigrated file."""
    from testleak.errors import DataError
    from testleak.verify.review import read_labels

    root, values = project
    f = root / "labels" / "old.jsonl"
    f.parent.mkdir(exist_ok=True)
    old = [{"schema": "label/1", "candidate_id": c, "value_hash": value_hash(values[c]), "reviewer": "r1",
            "label": "yes", "at": "2026-01-01T00:00:00+00:00"} for c in ("c1", "c3")]
    gone = {**old[0], "candidate_id": "r_gone:0"}
    f.write_text("".join(json.dumps(r) + "\n" for r in [*old, gone]), encoding="utf-8")
    with pytest.raises(DataError, match="testleak labels migrate"):
        read_labels(f)
    before = f.read_bytes()
    assert main(["labels", "migrate", "--root", str(root), "--labels", str(f)]) == 2   # one label has no value
    assert f.read_bytes() == before
    assert main(["labels", "migrate", "--root", str(root), "--labels", str(f), "--drop-unavailable"]) == 0
    key = value_key(Paths(root).cache)
    got = read_labels(f)
    assert [(r["candidate_id"], r["value_hash"], r["key_id"], r["at"]) for r in got] == \
        [(c, label_hash(values[c], key), key_id(key), "2026-01-01T00:00:00+00:00") for c in ("c1", "c3")]
    assert not {value_hash(v) for v in values.values()} & {r["value_hash"] for r in got}
    assert main(["labels", "migrate", "--root", str(root), "--labels", str(f)]) == 0    # idempotent
    assert read_labels(f) == got
