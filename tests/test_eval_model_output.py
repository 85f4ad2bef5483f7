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
    assert login(username="test_user", password="password")
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
        # the candidates stage withholds these (placeholder, taxonomy word): still scored
        {"response_id": "r_1", "value": "test_user", "attribute": "username", "placeholder": True},
        {"response_id": "r_1", "value": "password", "attribute": "password", "placeholder": True},
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
    assert [r["copied_from_prompt"] for r in rows] == [False, False, True, False, False, False]
    assert set(rows[0]) == set(m.LABEL_KEYS)
    meta = json.loads(m.meta_path(out).read_text())
    assert meta["responses"]["sha256"] == m.file_digests(resp)["sha256"]
    # keyed with the answer: neither the plain hash nor a hash under any other key matches
    from testleak.privacy import keyed_hash, value_hash
    assert rows[0]["value_hmac"] == keyed_hash("k.morgenstern", ANSWER.encode())
    assert value_hash("k.morgenstern") not in text and keyed_hash("k.morgenstern", b"") not in text


def test_scores_and_refuses_other_answers(tmp_path, capsys):
    m = _module()
    resp, raw = _files(tmp_path)
    out = tmp_path / "l.jsonl"
    m.main(["--responses", str(resp), "--labels", str(out), "--make-labels", str(raw)])
    js = tmp_path / "res.json"
    assert m.main(["--responses", str(resp), "--labels", str(out), "--json", str(js)]) == 0
    res = json.loads(js.read_text())
    # the keyed values are found with their attribute (withheld ones too); the bare call argument is not
    assert res["recall"]["all"] == 5 and res["recall"]["all_right"] == 3
    assert res["recall"]["real"] == 3 and res["recall"]["real_right"] == 2
    assert res["per_attribute"]["phone"]["copied"] == 1
    assert res["precision"]["candidates"] == res["precision"]["correct"] == 3   # test_user (withheld) among them
    capsys.readouterr()
    resp.write_text(resp.read_text().replace("Kranich", "Zebu"))
    assert m.main(["--responses", str(resp), "--labels", str(out)]) == 2
    err = capsys.readouterr().err
    assert "labels do not match" in err and err.count("\n") == 1


def test_legacy_plain_hash_labels_still_score_with_a_note(tmp_path, capsys):
    from testleak.privacy import value_hash

    m = _module()
    resp, raw = _files(tmp_path)
    out = tmp_path / "l.jsonl"
    m.main(["--responses", str(resp), "--labels", str(out), "--make-labels", str(raw)])
    values = [json.loads(x)["value"] for x in raw.read_text().splitlines()]
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    for r, v in zip(rows, values):
        r["value_hash"] = value_hash(v)
        del r["value_hmac"]
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    js = tmp_path / "res.json"
    capsys.readouterr()
    assert m.main(["--responses", str(resp), "--labels", str(out), "--json", str(js)]) == 0
    assert "legacy file" in capsys.readouterr().err
    res = json.loads(js.read_text())
    assert res["recall"]["all"] == 5 and res["recall"]["all_right"] == 3
