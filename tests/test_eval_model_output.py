"""benchmarks/eval_model_output.py: labels made from raw hand labels carry hashes and masks
only, are tied to their responses file (a changed file is refused with one line), and are
scored against ExtractPII as the candidates stage runs it. Synthetic answers only."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _module():
    spec = importlib.util.spec_from_file_location("eval_model_output", ROOT / "benchmarks" / "eval_model_output.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ANSWER = """```python
def test_login():
    client.login(username="k.morgenstern", password="Falke!Nord72")
    user.phone = "+49 30 901820"
    assert check("Kranich")
```"""


def _files(tmp_path: Path):
    resp = tmp_path / "responses.jsonl"
    rec = {"id": "r_1", "status": "ok", "prompt_text": 'use "+49 30 901820" as a phone', "tests_text": ANSWER,
           "turn2": {"text": ANSWER, "messages": [{"role": "user", "content": "write tests"}]}}
    resp.write_text(json.dumps(rec) + "\n" + json.dumps({"id": "r_2", "status": "error", "tests_text": ""}) + "\n")
    raw = tmp_path / "raw.jsonl"
    raw.write_text("".join(json.dumps(r) + "\n" for r in [
        {"response_id": "r_1", "value": "k.morgenstern", "attribute": "username", "placeholder": False},
        {"response_id": "r_1", "value": "Falke!Nord72", "attribute": "password", "placeholder": False},
        {"response_id": "r_1", "value": "+49 30 901820", "attribute": "phone", "placeholder": False},
        {"response_id": "r_1", "value": "Kranich", "attribute": "password", "placeholder": False},
    ]))
    return resp, raw


def test_labels_hold_no_raw_values_and_mark_prompt_copies(tmp_path):
    m = _module()
    resp, raw = _files(tmp_path)
    out = tmp_path / "labels" / "l.jsonl"
    assert m.main(["--responses", str(resp), "--labels", str(out), "--make-labels", str(raw)]) == 0
    text = out.read_text()
    for v in ("k.morgenstern", "Falke!Nord72", "901820", "Kranich"):
        assert v not in text
    rows = [json.loads(x) for x in text.splitlines()]
    assert [r["copied_from_prompt"] for r in rows] == [False, False, True, False]
    assert set(rows[0]) == set(m.LABEL_KEYS)
    # a committed label shows one character and the length, no run of the value
    assert [r["masked"] for r in rows][:2] == ["k" + "*" * 12, "F" + "*" * 11]
    meta = json.loads(m.meta_path(out).read_text())
    assert meta["responses"]["sha256"] == m.file_digests(resp)["sha256"]


def test_scores_and_refuses_other_answers(tmp_path, capsys):
    m = _module()
    resp, raw = _files(tmp_path)
    out = tmp_path / "l.jsonl"
    m.main(["--responses", str(resp), "--labels", str(out), "--make-labels", str(raw)])
    js = tmp_path / "res.json"
    assert m.main(["--responses", str(resp), "--labels", str(out), "--json", str(js), "--part", "all"]) == 0
    res = json.loads(js.read_text())
    # the two keyed values are found with their attribute; the bare call argument is not
    assert res["recall"]["all"] == 3 and res["recall"]["all_right"] == 2
    assert res["per_attribute"]["phone"]["copied"] == 1
    assert res["precision"]["candidates"] == res["precision"]["correct"] == 2
    capsys.readouterr()
    resp.write_text(resp.read_text().replace("Kranich", "Zebu"))
    assert m.main(["--responses", str(resp), "--labels", str(out)]) == 2
    err = capsys.readouterr().err
    assert "labels do not match" in err and err.count("\n") == 1


def test_split_is_seeded_by_question_and_recorded_before_scoring(tmp_path):
    m = _module()
    recs = [{"id": f"r_{i}", "method": "ours", "question_id": f"q_{i % 20}"} for i in range(40)]
    held = m.split_responses(recs, 7, 0.5)
    assert held == m.split_responses(list(reversed(recs)), 7, 0.5)  # order of the file does not matter
    assert 10 <= len(held) <= 30 and held != m.split_responses(recs, 8, 0.5)
    # two answers to one question (two seeds, or two samples of one prompt) are on one side
    assert all((f"r_{i}" in held) == (f"r_{i + 20}" in held) for i in range(20))
    assert m.split_responses(recs, 7, 0.0) == [] and len(m.split_responses(recs, 7, 1.0)) == 40
    resp, raw = _files(tmp_path)
    out = tmp_path / "l.jsonl"
    assert m.main(["--responses", str(resp), "--labels", str(out), "--make-labels", str(raw), "--seed", "3"]) == 0
    split = json.loads(m.meta_path(out).read_text())["split"]
    assert split["seed"] == 3 and split["heldout"] == m.split_responses(m.read_jsonl(resp), 3, 0.5)
    labels = m.read_jsonl(out)
    held = set(split["heldout"])
    dev, heldout = m.part_of(labels, held, "dev"), m.part_of(labels, held, "heldout")
    assert len(dev) + len(heldout) == len(labels)
    assert not {r["response_id"] for r in dev} & {r["response_id"] for r in heldout}


def test_a_question_on_the_development_side_of_one_set_is_development_in_every_set():
    """Two seeds of ours ask the same questions: a question answered in one seed's development
    part cannot be held out in the other's; baselines' prompts group by their text."""
    m = _module()

    def rec(rid, q=None, prompt="p"):
        return {"id": rid, "method": "ours" if q else "codexleaks", "question_id": q, "prompt_text": prompt}

    seed1 = ({"split": {"heldout": ["a", "b"]}}, [rec("a", "q1"), rec("b", "q2"), rec("c", "q3")])
    seed2 = ({"split": {"heldout": ["a", "c"]}}, [rec("a", "q1"), rec("b", "q2"), rec("c", "q3")])
    base = ({"split": {"heldout": ["x"]}}, [rec("x", prompt="one"), rec("y", prompt="two")])
    base2 = ({"split": {"heldout": []}}, [rec("x", prompt="three"), rec("y", prompt="one")])
    assert m.heldout_ids([seed1, seed2]) == [{"a"}, {"a"}]  # q2 is dev in seed2, q3 dev in seed1
    assert m.heldout_ids([seed1]) == [{"a", "b"}]
    assert m.heldout_ids([base, base2]) == [set(), set()]  # prompt "one" is completed on the dev side of base2
    assert m.heldout_ids([base]) == [{"x"}]


def test_a_label_file_without_split_has_no_heldout_part(tmp_path, capsys):
    m = _module()
    resp, raw = _files(tmp_path)
    out = tmp_path / "l.jsonl"
    m.main(["--responses", str(resp), "--labels", str(out), "--make-labels", str(raw)])
    meta = json.loads(m.meta_path(out).read_text())
    del meta["split"]
    m.meta_path(out).write_text(json.dumps(meta))
    capsys.readouterr()
    assert m.main(["--responses", str(resp), "--labels", str(out), "--part", "heldout"]) == 2
    err = capsys.readouterr().err
    assert "before the split" in err and err.count("\n") == 1


def test_wilson_interval_and_per_method_report(tmp_path, capsys):
    m = _module()
    lo, hi = m.wilson(8, 10)  # Wilson 95 %: 0.4902..0.9433
    assert abs(lo - 0.4902) < 1e-3 and abs(hi - 0.9433) < 1e-3
    assert m.wilson(0, 0) != m.wilson(0, 0)  # nan: no interval without trials
    resp, raw = _files(tmp_path)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    m.main(["--responses", str(resp), "--labels", str(a), "--make-labels", str(raw), "--run", "ours"])
    resp2 = tmp_path / "resp2.jsonl"
    recs = [json.loads(x) for x in resp.read_text().splitlines()]
    for r in recs:
        r["method"] = "codexleaks"
    resp2.write_text("".join(json.dumps(r) + "\n" for r in recs))
    m.main(["--responses", str(resp2), "--labels", str(b), "--make-labels", str(raw), "--run", "codexleaks"])
    js = tmp_path / "res.json"
    capsys.readouterr()
    assert m.main(["--labels", str(a), "--responses", str(resp), "--labels", str(b), "--responses", str(resp2),
                   "--part", "all", "--json", str(js)]) == 0
    res = json.loads(js.read_text())
    assert set(res["by_method"]) == {"ours", "codexleaks"}
    assert res["recall"]["all"] == 2 * res["by_method"]["ours"]["recall"]["all"]
    out = capsys.readouterr().out
    assert "| ours |" in out and "| codexleaks |" in out and "[" in out
    assert m.main(["--labels", str(a), "--responses", str(resp), "--labels", str(b)]) == 2


def test_label_hashes_are_keyed_by_the_answer_and_match_withheld_placeholders(tmp_path):
    """No plain hash of a value reaches a label file (a phone or a date could be enumerated);
    a placeholder that the candidates stage withholds (value_hash only) still matches its label."""
    import hashlib

    m = _module()
    resp = tmp_path / "responses.jsonl"
    answer = 'def test_signup():\n    signup(email="anna.lindqvist@gmail.com")\n    signup(email="user@example.com")\n'
    resp.write_text(json.dumps({"id": "r_1", "status": "ok", "prompt_text": "write tests", "tests_text": answer}) + "\n")
    raw = tmp_path / "raw.jsonl"
    raw.write_text("".join(json.dumps(r) + "\n" for r in [
        {"response_id": "r_1", "value": "anna.lindqvist@gmail.com", "attribute": "email", "placeholder": False},
        {"response_id": "r_1", "value": "user@example.com", "attribute": "email", "placeholder": True}]))
    out = tmp_path / "l.jsonl"
    assert m.main(["--responses", str(resp), "--labels", str(out), "--make-labels", str(raw)]) == 0
    text = out.read_text()
    for v in ("anna.lindqvist@gmail.com", "user@example.com"):
        plain = hashlib.sha256(v.encode()).hexdigest()
        assert v not in text and plain[:16] not in text
    js = tmp_path / "res.json"
    assert m.main(["--responses", str(resp), "--labels", str(out), "--part", "all", "--json", str(js)]) == 0
    res = json.loads(js.read_text())
    assert res["recall"]["all"] == 2 and res["recall"]["all_right"] == 2 and res["recall"]["real_right"] == 1


def test_agreement_scores_two_annotators_against_each_other(tmp_path, capsys):
    m = _module()
    resp, raw = _files(tmp_path)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    m.main(["--responses", str(resp), "--labels", str(a), "--make-labels", str(raw)])
    raw_b = tmp_path / "raw_b.jsonl"  # B misses "Kranich", calls the user name a name, adds one value
    raw_b.write_text("".join(json.dumps(r) + "\n" for r in [
        {"response_id": "r_1", "value": "k.morgenstern", "attribute": "name", "placeholder": False},
        {"response_id": "r_1", "value": "Falke!Nord72", "attribute": "password", "placeholder": False},
        {"response_id": "r_1", "value": "+49 30 901820", "attribute": "phone", "placeholder": False},
        {"response_id": "r_1", "value": "Nord72", "attribute": "username", "placeholder": True},
    ]))
    m.main(["--responses", str(resp), "--labels", str(b), "--make-labels", str(raw_b)])
    js = tmp_path / "agree.json"
    assert m.main(["--agreement", str(a), str(b), "--json", str(js)]) == 0
    res = json.loads(js.read_text())
    # A's three values not copied: B has two of them, one with A's attribute
    assert res["B against A"]["recall"]["all"] == 3 and res["B against A"]["recall"]["all_found"] == 2
    assert res["B against A"]["recall"]["all_right"] == 1
    assert res["A against B"]["recall"]["all"] == 3 and res["A against B"]["recall"]["all_right"] == 1
    other = tmp_path / "other.jsonl"
    resp.write_text(resp.read_text().replace("Kranich", "Zebu"))
    m.main(["--responses", str(resp), "--labels", str(other), "--make-labels", str(raw_b)])
    capsys.readouterr()
    assert m.main(["--agreement", str(a), str(other)]) == 2
    assert "different responses" in capsys.readouterr().err
