"""Library round k -> k+1: instances from confirmed leaks, division, clustering, merge (Sec. 5)."""

import pytest
import torch

from testleak.config import compose_dict, typed
from testleak.taxonomy import taxonomy_data
from testleak.library import load_library, parse_library
from testleak.library.clustering import get_encoder
from testleak.library.division import MaskedLMScorer
from testleak.library.rounds import build_round, leak_instances
from testleak.paths import Paths

from test_library_division import MINILM_DIR  # noqa: F401  (same packaged tokenizer)

TEST_CODE = '''def test_create_user():
    user = User()
    user.email = "nadia.okafor@mailhub.example"
    contact = {"phone": "+44 7700 900123"}
    assert user.is_valid()
'''


@pytest.fixture(scope="module")
def tiny_scorer(tmp_path_factory):
    from transformers import AutoModelForMaskedLM, AutoTokenizer, BertConfig

    torch.manual_seed(1)
    tok = AutoTokenizer.from_pretrained(MINILM_DIR)
    cfg = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=128)
    return MaskedLMScorer(AutoModelForMaskedLM.from_config(cfg), tok, batch_size=32)


def test_leak_instances_find_line_prefix_and_count_failures():
    email = "nadia.okafor@mailhub.example"
    s = TEST_CODE.index(email)
    confirmed = [{"candidate_id": "r1:0", "status": "confirmed"}, {"candidate_id": "r1:1", "status": "potential"},
                 {"candidate_id": "r1:2", "status": "confirmed"}, {"candidate_id": "zz", "status": "confirmed"}]
    cands = {"r1:0": {"id": "r1:0", "response_id": "r1", "attribute": "email", "value": email, "language": "python",
                      "evidence": {"span": [s, s + len(email)]}},
             "r1:2": {"id": "r1:2", "response_id": "r1", "attribute": "phone", "value": "+1 000", "language": "python",
                      "evidence": {"span": [0, 6]}}}
    inst, counts = leak_instances(confirmed, cands, {"r1": {"text": TEST_CODE}}, lambda r: r.get("text"), 2)
    assert dict(counts) == {"ok": 1, "not_confirmed": 1, "value_not_found": 1, "no_candidate": 1}
    ok = inst[0]
    assert ok["text"] == '    user.email = "nadia.okafor@mailhub.example"'
    assert ok["text"][slice(*ok["value_span"])] == email
    assert ok["prefix"] == "def test_create_user():\n    user = User()\n"


def test_build_round_adds_divided_items_with_their_run(tiny_scorer):
    params = compose_dict()
    lib_cfg = typed(params, "library")
    prior = load_library(Paths().library("prior"))
    slots = {k: v["slot"] for k, v in taxonomy_data(params)["attributes"].items()}
    phone = "+44 7700 900123"
    line = '    contact = {"phone": "+44 7700 900123"}'
    inst = [{"candidate_id": "r1:1", "attribute": "phone", "language": "python", "response_id": "r1", "status": "ok",
             "value": phone, "text": line, "value_span": [line.index(phone), line.index(phone) + len(phone)],
             "prefix": ""},
            {"candidate_id": "r1:9", "attribute": "email", "status": "value_not_found"}]
    doc, divisions, stats = build_round(inst, prior, tiny_scorer, get_encoder(lib_cfg.clustering), slots,
                                        lib_cfg.division, lib_cfg.clustering, "ours")
    assert [d["status"] for d in divisions] == ["divided"]
    assert divisions[0]["template"] == '    contact = {"phone": "<PHONE>"}'
    assert divisions[0]["fragments"][0] == {"text": phone, "start": 25, "end": 40, "by": "value"}
    lib = parse_library(doc)                  # the written document loads like any library
    assert stats["templates"]["new"] == 1 and stats["fragments"]["new"] == len(divisions[0]["fragments"])
    added = [e for b in lib.values() for e in b["templates"] if e.get("source_run") == "ours"]
    # the phone context is dense together with the prior's phone templates (include_prior) and is
    # filed by prototype similarity under phone, not noise and not another attribute
    assert stats["templates"]["added"] == 1 and stats["templates"]["noise"] == stats["templates"]["duplicate"] == 0
    assert len(added) == 1 and added[0]["record_attribute"] == "phone" and added[0]["similarity"] > 0.5
    assert added[0]["text"] == '    contact = {"phone": "<PHONE>"}'
    assert added[0]["text"] in [t["text"] for t in lib["phone"]["templates"]]
    assert all(added[0]["text"] not in [t["text"] for t in b["templates"]] for a, b in lib.items() if a != "phone")
    # the prior entries are all still there
    for a, b in prior.items():
        assert [t["text"] for t in lib[a]["templates"][:len(b["templates"])]] == [t["text"] for t in b["templates"]]
