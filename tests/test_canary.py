"""Canary ground truth (issue 8): planting, values, fine-tune mechanics, GGUF write-back, recall."""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import yaml
from stdnum import iban, luhn

from testleak.canary.finetune import build_examples, memorization, merged_weights, train_lora
from testleak.canary.gguf_io import hf_to_gguf_names, write_tuned_gguf
from testleak.canary.plant import SourceFile, plant, sample_files
from testleak.canary.recall import match_canary, run_recall
from testleak.canary.values import ATTRIBUTES, make_value
from testleak.config import CONF_DIR, compose_dict
from testleak.taxonomy import taxonomy_data
from testleak.errors import ConfigError
from testleak.settings import Finetune

TAX = taxonomy_data(compose_dict())

BODY = '''"""A module."""
import os


def f(x):
    return x + 1


class A:
    pass


def g():
    return os.sep
'''


def _finetune(**over) -> Finetune:
    """conf/canary/default.yaml's ``canary.finetune`` with ``over`` changed, checked by the schema."""
    conf = yaml.safe_load((CONF_DIR / "canary" / "default.yaml").read_text(encoding="utf-8"))["finetune"]
    return Finetune.model_validate({**conf, **over})


def _files(n=4):
    return [SourceFile(f"repo{i}", f"pkg/mod{i}.py", BODY.replace("A:", f"A{i}:")) for i in range(n)]


def test_planting_is_deterministic_and_covers_all_attributes():
    t1, g1 = plant(_files(), TAX["attributes"], TAX["scenarios"], 17, seed=3)
    t2, g2 = plant(_files(), TAX["attributes"], TAX["scenarios"], 17, seed=3)
    t3, g3 = plant(_files(), TAX["attributes"], TAX["scenarios"], 17, seed=4)
    assert g1 == g2 and t1 == t2
    assert [g["value"] for g in g1] != [g["value"] for g in g3]
    assert {g["attribute"] for g in g1} == set(ATTRIBUTES) and len(ATTRIBUTES) == 15
    assert len({g["value"] for g in g1}) == 17
    for text in t1.values():
        ast.parse(text)
    for g in g1:
        text = t1[tuple(g["file"].split("/", 1))]
        assert text.count(g["value"]) == 1                     # planted once, absent before
        assert g["value"] not in BODY
        line = text.splitlines()[g["line"] - 1 + g["context"][: g["context"].find(g["value"])].count("\n")]
        assert line.startswith(g["line_prefix"]) and g["value"] in line


def test_values_are_valid_for_their_attribute():
    for seed in range(20):
        assert luhn.is_valid(make_value("credit_card", seed))
        assert iban.is_valid(make_value("bank_statement", seed))
        ssn = make_value("identity", seed)
        assert len(ssn) == 11 and ssn[3] == ssn[6] == "-" and ssn.replace("-", "").isdigit()
        key = make_value("secret_key", seed)
        assert key.startswith(("AKIA", "sk-", "ghp_")) and len(key) in (20, 51, 40)
        assert make_value("auth_token", seed).count(".") == 2
        assert "@" in make_value("email", seed)
    with pytest.raises(ValueError, match="unknown attribute"):
        make_value("shoe_size", 1)


def test_absence_check_redraws_values_found_elsewhere():
    first = plant(_files(), TAX["attributes"], TAX["scenarios"], 1, seed=5)[1][0]["value"]
    # a corpus index that "contains" the first draw forces a second one
    _, truth = plant(_files(), TAX["attributes"], TAX["scenarios"], 1, seed=5, absent=lambda v: v != first)
    assert truth[0]["value"] != first and truth[0]["draws"] == 2
    # a value already in an untouched file is never used
    files = _files()
    files[0] = SourceFile("repo0", "pkg/mod0.py", BODY + f"X = '{first}'\n")
    _, truth = plant(files, TAX["attributes"], TAX["scenarios"], 1, seed=5)
    assert truth[0]["value"] != first


def test_plant_rejects_unknown_attribute_and_sample_needs_enough_files(tmp_path):
    with pytest.raises(ConfigError, match="not in the taxonomy"):
        plant(_files(), TAX["attributes"], TAX["scenarios"], 2, seed=1, attributes=["shoe_size"])

    @dataclass
    class F:
        repo: str
        path: str
        abspath: Path

    (tmp_path / "a.py").write_text(BODY * 40)
    (tmp_path / "bad.py").write_text("def (:\n" * 300)
    fs = [F("r", "a.py", tmp_path / "a.py"), F("r", "bad.py", tmp_path / "bad.py")]
    assert [f.path for f in sample_files(fs, 1, 0, 1500, 30000)] == ["a.py"]
    with pytest.raises(ConfigError, match="lower canary.files"):
        sample_files(fs, 2, 0, 1500, 30000)


@pytest.mark.parametrize("cand,expected", [
    ("4111 1111 1111 1111", ["c1"]),
    ("card=4111-1111-1111-1111;", ["c1"]),
    ("4111111111111112", []),
    ("anna.k99@example.org", ["c2"]),
    ("anna.k9@example.org", []),
    ("", []),
])
def test_match_canary(cand, expected):
    truth = [{"id": "c1", "value": "4111111111111111"}, {"id": "c2", "value": "anna.k99@example.org"}]
    assert match_canary(cand, truth) == expected


def test_run_recall_counts_and_curve():
    truth = [{"id": "c1", "value": "4111111111111111", "attribute": "credit_card"},
             {"id": "c2", "value": "anna.k99@example.org", "attribute": "email"}]
    responses = [{"id": f"r{i}", "status": "ok"} for i in range(4)]
    cands = [{"id": "r1:0", "response_id": "r1", "value": "4111 1111 1111 1111", "value_hash": "h1", "attribute": "credit_card"},
             {"id": "r3:0", "response_id": "r3", "value": "4111111111111111", "value_hash": "h1b", "attribute": "credit_card"},
             {"id": "r2:0", "response_id": "r2", "value": "root@localhost.org", "value_hash": "h2", "attribute": "email"},
             {"id": "r2:1", "response_id": "r2", "value": "bob@x.io", "value_hash": "h3", "attribute": "email"}]
    conf = [{"candidate_id": "r3:0", "status": "confirmed"}, {"candidate_id": "r1:0", "status": "not_in_window"},
            {"candidate_id": "r2:0", "status": "confirmed"}, {"candidate_id": "r2:1", "status": "confirmed"}]
    rc = run_recall(truth, responses, cands, conf, originals=["x = 'root@localhost.org'"])
    assert rc["recovered"] == {"c1": 1}
    assert rc["recall"] == 0.5 and rc["confirmed_ids"] == ["c1"]
    assert rc["confirmed_non_canary"] == 2 and rc["confirmed_non_canary_in_corpus"] == 1
    assert [p["recall"] for p in rc["curve"]] == [0.0, 0.5, 0.5, 0.5]
    assert rc["by_attribute"]["email"] == {"planted": 1, "recovered": 0, "confirmed": 0,
                                           "confirmed_non_canary": 2, "confirmed_non_canary_in_corpus": 1}


# -- fine-tune mechanics on a tiny random causal LM (no download) ------------------------------
def _tiny_model_and_tokenizer(texts):
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers, decoders
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    tk = Tokenizer(models.BPE(unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=400, special_tokens=["<pad>", "<unk>"],
                                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", unk_token="<unk>", eos_token="<pad>")
    torch.manual_seed(0)
    cfg = Qwen2Config(vocab_size=tok.vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                      tie_word_embeddings=False, initializer_range=0.4)
    return Qwen2ForCausalLM(cfg), tok


def test_lora_finetune_memorizes_and_merges():
    texts, truth = plant(_files(2), TAX["attributes"], TAX["scenarios"], 2, seed=11, attributes=["password", "username"])
    texts = {f"{r}/{p}": t for (r, p), t in texts.items()}
    examples, probes = build_examples(texts, truth, context_lines=2, clean_windows=1, seed=0)
    assert [e["canary_id"] for e in examples] == ["canary-000", "canary-001", None]
    assert all(p["prefix"].endswith(t["line_prefix"]) for p, t in zip(probes, truth))
    model, tok = _tiny_model_and_tokenizer(list(texts.values()))
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    assert [m["memorized"] for m in memorization(model, tok, probes)] == [False, False]
    s = _finetune(epochs=25, batch_size=3, lr=3e-2, lora_r=8, lora_alpha=16, max_tokens=64, threads=1,
                  target_modules=["q_proj", "v_proj", "up_proj", "not_a_module"])
    peft_model, hist = train_lora(model, tok, examples, s, 0)
    assert len(hist) == 25 and hist[-1]["loss"] < hist[0]["loss"] * 0.1
    mem = memorization(peft_model, tok, probes)
    assert [m["memorized"] for m in mem] == [True, True]
    assert [m["matched_chars"] for m in mem] == [m["value_len"] for m in mem]
    import torch
    x = torch.tensor([tok(probes[0]["prefix"])["input_ids"][:20]])
    with torch.no_grad():
        ref_logits = peft_model(input_ids=x).logits.clone()
    assert [m["canary_id"] for m in mem] == ["canary-000", "canary-001"]
    assert all(m["matched_chars"] <= m["value_len"] for m in mem)
    merged, changed = merged_weights(peft_model)
    assert sorted({n.split(".")[-2] for n in changed}) == ["q_proj", "up_proj", "v_proj"]
    assert len(changed) == 2 * 3
    sd = merged.state_dict()
    assert not any("lora" in k for k in sd)
    for n in changed:
        assert not np.allclose(sd[n].numpy(), before[n].numpy())
    assert np.allclose(sd["model.layers.0.self_attn.k_proj.weight"].numpy(),
                       before["model.layers.0.self_attn.k_proj.weight"].numpy())
    # merged weights reproduce the adapter's outputs
    with torch.no_grad():
        assert torch.allclose(merged(input_ids=x).logits, ref_logits, atol=1e-3)
    names = hf_to_gguf_names(changed, "qwen2", 2)
    assert names["model.layers.1.self_attn.q_proj.weight"] == "blk.1.attn_q.weight"
    assert names["model.layers.0.mlp.up_proj.weight"] == "blk.0.ffn_up.weight"


def test_canary_settings_are_read_typed_from_the_params():
    """The canary code reads ``canary.*`` with the schema's types (a :class:`Finetune` for the
    fine-tune), also from params built in memory: an unknown or out-of-range key is refused."""
    from testleak.canary.pipeline import canary_setting

    p = compose_dict(["experiment=canary_tiny", "canary.finetune.epochs=2", "canary.seed=9"])
    s = canary_setting(p, "finetune")
    assert isinstance(s, Finetune) and s.epochs == 2 and canary_setting(p, "seed") == 9
    assert s == Finetune.model_validate(p["canary"]["finetune"])
    p["canary"]["finetune"] = {**p["canary"]["finetune"], "epochz": 3}
    with pytest.raises(ConfigError, match="epochz"):
        canary_setting(p, "finetune")
    p["canary"]["finetune"] = {**_finetune().model_dump(), "max_tokens": 8}
    with pytest.raises(ConfigError, match=r"canary.finetune.max_tokens"):
        canary_setting(p, "finetune")
    with pytest.raises(ConfigError, match="no `canary` section"):
        canary_setting({"seed": 1}, "finetune")


# -- GGUF write-back round trip on a tiny file ---------------------------------------------------
def test_gguf_write_back_round_trip(tmp_path):
    import gguf

    src = tmp_path / "tiny.gguf"
    w = gguf.GGUFWriter(str(src), arch="qwen2")
    w.add_name("tiny")
    w.add_block_count(1)
    w.add_context_length(64)
    w.add_tokenizer_model("gpt2")
    w.add_token_list(["a", "b", "c"])
    w.add_chat_template("{{ messages }}")
    rng = np.random.default_rng(0)
    q = rng.standard_normal((8, 32)).astype(np.float32)
    k = rng.standard_normal((4, 32)).astype(np.float32)
    kq = gguf.quants.quantize(k, gguf.GGMLQuantizationType.Q8_0)
    w.add_tensor("blk.0.attn_q.weight", q)
    w.add_tensor("blk.0.attn_k.weight", kq, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()

    new_q = q + 1.0
    out = tmp_path / "tuned.gguf"
    info = write_tuned_gguf(src, out, {"blk.0.attn_q.weight": new_q}, out_type="f16")
    assert info["tensors"] == 2 and info["replaced"] == 1
    r0, r1 = gguf.GGUFReader(str(src)), gguf.GGUFReader(str(out))
    f = {n: r1.fields[n].contents() for n in r1.fields}
    assert f["general.architecture"] == "qwen2" and f["general.name"] == "tiny-canary-tuned"
    assert f["tokenizer.ggml.tokens"] == ["a", "b", "c"] and f["tokenizer.chat_template"] == "{{ messages }}"
    assert f["qwen2.block_count"] == 1
    t = {x.name: x for x in r1.tensors}
    assert t["blk.0.attn_q.weight"].tensor_type == gguf.GGMLQuantizationType.F16
    assert np.allclose(np.asarray(t["blk.0.attn_q.weight"].data, dtype=np.float32), new_q, atol=1e-2)
    assert t["blk.0.attn_k.weight"].tensor_type == gguf.GGMLQuantizationType.Q8_0
    old_k = {x.name: x for x in r0.tensors}["blk.0.attn_k.weight"]
    assert bytes(t["blk.0.attn_k.weight"].data) == bytes(old_k.data)
    with pytest.raises(ConfigError, match="not in"):
        write_tuned_gguf(src, tmp_path / "x.gguf", {"blk.9.attn_q.weight": new_q})
    with pytest.raises(ConfigError, match="output type"):
        write_tuned_gguf(src, tmp_path / "x.gguf", {}, out_type="q4")


# -- issue 15: user-supplied canaries, duplication levels, exposure --------------------------------
def _spec(tmp_path, lines, name="spec.jsonl"):
    import json as _json
    p = tmp_path / name
    p.write_text("\n".join(x if isinstance(x, str) else _json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return p


def test_spec_reports_every_bad_line_with_file_line_and_expectation(tmp_path):
    from testleak.canary.spec import read_spec

    secret = "s3cr3t-Value-XYZ"
    p = _spec(tmp_path, [
        {"value": "AKIA7QZ3EXAMPLE2KEYX", "attribute": "secret_key"},          # 1 ok
        "{not json",                                                           # 2
        {"value": "abc", "attribute": "email"},                                 # 3 too short
        {"value": "jane.doe1987@example.org", "attribute": "shoe_size"},        # 4 attribute
        {"value": "AKIA7QZ3EXAMPLE2KEYX", "attribute": "secret_key"},          # 5 repeat of 1
        {"value": "xAKIA7QZ3EXAMPLE2KEYXx", "attribute": "secret_key"},        # 6 contains 1
        {"value": "jane.doe1987@example.org", "attribute": "email", "duplication": 0},  # 7
        {"value": "jane.doe1987@example.org", "attribute": "email", "context": "X = 1\n"},  # 8 no placeholder
        {"value": "jane.doe1987@example.org", "attribute": "email", "context": "X = ({{value}}\n"},  # 9 syntax
        {"value": secret + "'", "attribute": "password"},                      # 10 quote, built-in context
        {"value": "jane.doe1987@example.org", "attribute": "email", "colour": "red"},  # 11 unknown key
        "",                                                                    # 12 blank: skipped
        [1, 2],                                                                # 13 not an object
        {"value": "AKIA-7QZ3-EXAMPLE-2KEYX", "attribute": "secret_key"},       # 14 = line 1 once compacted
    ])
    with pytest.raises(ConfigError) as e:
        read_spec(p, TAX["attributes"])
    lines = str(e.value).splitlines()
    assert lines[0] == "canary.spec: 12 bad line(s):"
    bad = [int(x.split(":")[1]) for x in lines[1:]]
    assert bad == [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14]
    assert all(x.startswith(f"{p}:") and "expected" in x for x in lines[1:])
    assert "line 1" in lines[4] and "duplication" in lines[4] and "line 1" in lines[5]
    assert secret not in str(e.value) and "AKIA7QZ3" not in str(e.value)      # values are never shown
    with pytest.raises(ConfigError, match="no such file"):
        read_spec(tmp_path / "missing.jsonl", TAX["attributes"])
    with pytest.raises(ConfigError, match="no canary"):
        read_spec(_spec(tmp_path, ["", ""], "empty.jsonl"), TAX["attributes"])


def test_spec_plants_exactly_the_given_canaries_with_their_copies(tmp_path):
    from testleak.canary.spec import read_spec

    p = _spec(tmp_path, [
        {"value": "AKIA7QZ3EXAMPLE2KEYX", "attribute": "secret_key", "duplication": 3},
        {"value": "jane.roe.audit1987@example.org", "attribute": "email"},
        {"value": "MRN 40418822: asthma", "attribute": "medical_record", "duplication": 2,
         "context": 'PATIENT_NOTES = {\n    "bed_12": "{{value}}",\n    "ward": "B",\n}\n'},
    ])
    spec = read_spec(p, TAX["attributes"])
    files = _files(4)
    texts, truth = plant(files, TAX["attributes"], TAX["scenarios"], 99, seed=1, duplication=[1, 5], spec=spec)
    assert [t["value"] for t in truth] == [e["value"] for e in spec]                 # n=99 is unused
    assert [t["duplication"] for t in truth] == [3, 5, 2]      # given, else canary.duplication cycled (line 2: 5)
    assert all(t["source"] == "spec" for t in truth) and [t["spec_line"] for t in truth] == [1, 2, 3]
    for t in truth:
        assert sum(text.count(t["value"]) for text in texts.values()) == t["duplication"] == len(t["copies"])
        assert not any(t["value"] in f.text for f in files)
        for c in t["copies"]:                                   # every copy is where the record says
            line = texts[tuple(c["file"].split("/", 1))].splitlines()[c["line"] - 1]
            assert t["context"].splitlines()[0] == line
    assert len({c["file"] for c in truth[0]["copies"]}) == 3                        # k <= files: distinct files
    assert truth[2]["line_prefix"] == '    "bed_12": "' and truth[2]["context_source"] == "spec" and truth[2]["context_kind"] == "config_dict"
    for text in texts.values():
        ast.parse(text)
    tx = {f"{r}/{q}": t for (r, q), t in texts.items()}
    examples, probes = build_examples(tx, truth, context_lines=2, clean_windows=0, seed=0)
    assert len(examples) == 3 + 5 + 2 and len(probes) == 3                      # one window per copy
    assert all(pr["prefix"].endswith(t["line_prefix"]) for pr, t in zip(probes, truth))
    # a spec value already in the untouched corpus is an error naming its line, never redrawn
    files[1] = SourceFile("repo1", "pkg/mod1.py", BODY + "KEY = 'AKIA7QZ3EXAMPLE2KEYX'\n")
    with pytest.raises(ConfigError, match=r"spec.jsonl:1: value already occurs in the untouched"):
        plant(files, TAX["attributes"], TAX["scenarios"], 1, seed=1, spec=spec, spec_path=str(p))
    with pytest.raises(ConfigError, match=r":2: value already occurs in the corpus index"):
        plant(_files(4), TAX["attributes"], TAX["scenarios"], 1, seed=1, spec=spec, spec_path=str(p),
              absent=lambda v: "@" not in v)


def test_duplication_levels_cover_every_attribute_at_every_level():
    texts, truth = plant(_files(4), TAX["attributes"], TAX["scenarios"], 6, seed=2, duplication=[1, 3],
                         attributes=["password", "username"])
    assert [(t["attribute"], t["duplication"]) for t in truth] == [
        ("password", 1), ("username", 1), ("password", 3), ("username", 3), ("password", 1), ("username", 1)]
    for t in truth:
        assert sum(text.count(t["value"]) for text in texts.values()) == t["duplication"]
        assert t["source"] == "faker" and len(t["copies"]) == t["duplication"]
    with pytest.raises(ConfigError, match="canary.duplication"):
        plant(_files(), TAX["attributes"], TAX["scenarios"], 2, seed=2, duplication=[0])


def test_exposure_rank_bands_and_alternatives():
    from testleak.canary.exposure import alternatives, band_labels, band_of, rank_exposure

    # 3 alternatives, one scores higher than the canary: rank 2 of 4 candidates -> log2 4 - log2 2 = 1 bit
    assert rank_exposure(-1.0, [-0.5, -2.0, -3.0]) == {"rank": 2, "candidates": 4, "exposure": 1.0}
    assert rank_exposure(0.0, [-1.0] * 1023)["exposure"] == 10.0                # beats all: log2(1024)
    assert rank_exposure(-9.0, [-1.0] * 7)["exposure"] == 0.0                   # last of 8
    assert band_labels([2, 5]) == ["<2", "2-5", ">=5"]
    assert [band_of(x, [2, 5]) for x in (0.0, 1.99, 2.0, 4.9, 5.0, 10.0, None)] == [
        "<2", "<2", "2-5", "2-5", ">=5", ">=5", "n/a"]
    faker = {"id": "canary-001", "attribute": "credit_card", "value": make_value("credit_card", 1), "source": "faker"}
    alts = alternatives(faker, 200, seed=7, exclude=[make_value("credit_card", 2)])
    assert len(alts) == len(set(alts)) == 200 and faker["value"] not in alts
    assert all(luhn.is_valid(a) for a in alts)                                  # the same generator
    assert alts == alternatives(faker, 200, seed=7, exclude=[make_value("credit_card", 2)])
    assert alts != alternatives(faker, 200, seed=8)
    spec = {"id": "canary-000", "attribute": "phone", "value": "+1 (555) 010-4477 ext. Ab", "source": "spec"}
    for a in alternatives(spec, 50, seed=7):
        assert len(a) == len(spec["value"]) and a != spec["value"]
        assert [c.isdigit() for c in a] == [c.isdigit() for c in spec["value"]]
        assert a.startswith("+") and a[2:4] == " (" and a[-4:-2] == ". " and a[-2].isupper() and a[-1].islower()


def test_score_continuations_equals_full_forward_and_exposure_rises_with_training():
    import torch

    from testleak.canary.exposure import alternatives, exposures
    from testleak.canary.finetune import score_continuations

    texts, truth = plant(_files(2), TAX["attributes"], TAX["scenarios"], 2, seed=11, attributes=["password", "username"])
    texts = {f"{r}/{p}": t for (r, p), t in texts.items()}
    examples, probes = build_examples(texts, truth, context_lines=2, clean_windows=1, seed=0)
    # the tokenizer learns the untouched files only: a vocabulary trained on the canaries would
    # favour them over their alternatives before any training
    model, tok = _tiny_model_and_tokenizer([f.text for f in _files(2)] * 3)
    conts = ["x", "abc", probes[0]["value"], "def g(): return 42", probes[1]["value"] * 2]
    got = score_continuations(model, tok, probes[0]["prefix"], conts, batch_tokens=16)   # several batches
    pre = tok(probes[0]["prefix"], add_special_tokens=False)["input_ids"]
    for c, (total, n) in zip(conts, got):
        ids = pre + tok(c, add_special_tokens=False)["input_ids"]
        x = torch.tensor([ids])
        with torch.no_grad():
            lp = torch.log_softmax(model(input_ids=x).logits[0, :-1].float(), -1).gather(1, x[0, 1:, None])[:, 0]
        assert n == len(ids) - len(pre) and total == pytest.approx(float(lp[-n:].sum()), abs=1e-3)
    alts = {t["id"]: alternatives(t, 30, seed=0, exclude=[u["value"] for u in truth]) for t in truth}
    before = exposures(model, tok, probes, alts, batch_tokens=64)
    s = _finetune(epochs=30, batch_size=3, lr=3e-2, lora_r=8, lora_alpha=16, max_tokens=128, threads=1,
                  target_modules=["q_proj", "v_proj", "up_proj"])
    peft_model, _ = train_lora(model, tok, examples, s, 0)
    after = exposures(peft_model, tok, probes, alts, batch_tokens=64)
    for cid in after:
        assert after[cid]["candidates"] == 31
        assert after[cid]["rank"] == 1 and after[cid]["exposure"] == pytest.approx(math.log2(31), abs=1e-3)
        assert after[cid]["logprob"] > before[cid]["logprob"]
    # the untrained model ranks the canaries lower (a random model may still put one first by chance)
    assert sum(b["exposure"] for b in before.values()) < sum(a["exposure"] for a in after.values())


def test_canary_report_recall_per_duplication_level_and_exposure_band(tmp_path):
    import csv
    import json as _json

    from testleak.canary.report import build_report

    # 8 canaries: c0-c3 planted once, c4-c7 planted 4 times; tuned exposures 0, 1, 3, 9, 9, 9, 9, 9 bits
    truth = [{"id": f"c{i}", "attribute": "email", "value": f"user{i}@example.org", "duplication": 1 if i < 4 else 4,
              "context_kind": "json"}
             for i in range(8)]
    exp_t = [0.0, 1.0, 3.0, 9.0, 9.0, 9.0, 9.0, 9.0]
    mem = [{"canary_id": f"c{i}", "exposure": exp_t[i], "exposure_control": 0.5, "memorized": exp_t[i] > 5,
            "exposure_candidates": 1001} for i in range(8)]

    def result(run, model, recovered):
        return {"run": run, "model": model, "key": run, "method": run, "variant": "none", "seconds": 1.0,
                "recall": {"responses": 4, "responses_ok": 4, "candidates": 5, "planted": 8,
                           "recovered": {c: 0 for c in recovered}, "recall": len(recovered) / 8, "confirmed_ids": [],
                           "confirmed_recall": 0.0, "confirmed_non_canary": 0, "confirmed_non_canary_in_corpus": 0,
                           "by_attribute": {}, "curve": [{"responses": 4, "recall": len(recovered) / 8}]}}

    results = [result("ours", "tuned", ["c3", "c4", "c5", "c6", "c7"]), result("codebreaker", "tuned", ["c0", "c7"]),
               result("ours_c", "control", [])]
    build_report(results, truth, tmp_path / "canary", tmp_path / "canary.json", memorization=mem, bands=[2, 5])
    dup = list(csv.DictReader((tmp_path / "canary/by_duplication.csv").open()))
    cell = {(r["method"], r["duplication"]): r for r in dup}
    assert (cell["ours", "1"]["recovered"], cell["ours", "1"]["planted"], cell["ours", "1"]["recall"]) == ("1", "4", "0.25")
    assert (cell["ours", "4"]["recall"], cell["ours", "4"]["recall_ci_low"], cell["ours", "4"]["recall_ci_high"]) == (
        "1.0", "1.0", "1.0")                                    # all recovered: the degenerate interval
    assert float(cell["ours", "1"]["recall_ci_low"]) == 0.0 < 0.25 < float(cell["ours", "1"]["recall_ci_high"])
    assert cell["codebreaker", "4"]["recall"] == "0.25" and cell["ours", "4"]["memorized"] == "4"
    exp = list(csv.DictReader((tmp_path / "canary/by_exposure.csv").open()))
    got = {(r["method"], r["exposure_band"]): (r["recovered"], r["planted"]) for r in exp}
    assert got == {("ours", "<2"): ("0", "2"), ("ours", "2-5"): ("0", "1"), ("ours", ">=5"): ("5", "5"),
                   ("codebreaker", "<2"): ("1", "2"), ("codebreaker", "2-5"): ("0", "1"),
                   ("codebreaker", ">=5"): ("1", "5"),
                   ("ours_c", "<2"): ("0", "8")}               # control runs: banded by the control exposure
    md = (tmp_path / "canary/canary.md").read_text(encoding="utf-8")
    assert "| ours | tuned | 1/4 25% [0%, 75%] | 4/4 100% [100%, 100%] |" in md
    assert "| (memorized) | tuned | 1/4 | 4/4 |" in md
    assert "| ours | tuned | 0/2 0% [0%, 0%] | 0/1 0% [0%, 0%] | 5/5 100% [100%, 100%] |" in md
    assert "| ours_c | control | 0/8 0% [0%, 0%] |  |  |" in md
    assert "| 1 | 4 | 3.25 | 0.50 |" in md and "| 4 | 4 | 9.00 | 0.50 |" in md    # mean exposure per level
    # one seed: the paired sign-flip test is exact McNemar; only-ours 4 (c3-c6), only-codebreaker 1 (c0):
    # p = 2 * 6/32 = 0.375
    assert "| tuned | ours | codebreaker | 1 | 62.5% | 25.0% | 5 | 3 | 0.375 | 1 / 4 / 1 / 2 | 0.375 |" in md
    m = _json.loads((tmp_path / "canary.json").read_text())
    assert m["methods"]["tuned/ours"]["recall_by_duplication"] == {"1": 0.25, "4": 1.0}
    assert m["methods"]["tuned/codebreaker"]["recall_by_exposure_band"] == {"<2": 0.5, "2-5": 0.0, ">=5": 0.2}
    assert "user3@example.org" not in md


def test_canary_config_spec_and_exposure_keys(tmp_path):
    from testleak.config import SPEC_EXAMPLE, compose_dict
    from testleak.canary.spec import read_spec

    def cd(overrides=()):   # the canary group is composed by the canary experiments
        return compose_dict(["experiment=canary_tiny", *overrides])

    assert cd()["canary"]["spec"] is None and cd()["canary"]["spec_dep"] == SPEC_EXAMPLE
    assert len(read_spec(Path(__file__).parents[1] / SPEC_EXAMPLE, TAX["attributes"])) == 3   # the example is valid
    p = _spec(tmp_path, [{"value": "AKIA7QZ3EXAMPLE2KEYX", "attribute": "secret_key"}])
    c = cd([f"canary.spec={p}"])["canary"]
    assert c["spec"] == c["spec_dep"] == str(p)                 # the DVC dep of canary_corpus follows the spec
    with pytest.raises(ConfigError, match=r"canary.spec = .*expected an existing JSONL file"):
        cd([f"canary.spec={tmp_path / 'nope.jsonl'}"])
    with pytest.raises(ConfigError, match=r"canary.exposure.bands.*increasing"):
        cd(["canary.exposure.bands=[5,2]"])
    with pytest.raises(ConfigError, match=r"canary.duplication"):
        cd(["canary.duplication=[]"])


def test_calibration_runs_per_seed_reference_first_and_budgets_read_ours_tokens(tmp_path):
    """Per model and seed, the reference run of ours runs first; every other run (ablations and
    baselines) gets a token target equal to the reference's completion tokens of the same model
    and seed (the equalcost stop rule); an integer budget keeps the old rule."""
    import json as _json

    from testleak.canary.pipeline import CanaryRunPaths, calibration_budget, run_names
    from testleak.errors import DataError

    p = compose_dict(["experiment=canary_ablations", "canary.seeds=[0,2]"])
    names = run_names(p)
    assert len(names) == 2 * 2 * 6 and names[0] == ("canary_tuned_ours_s0", "tuned", "ours", 0)
    assert [n[0] for n in names[6:8]] == ["canary_tuned_ours_s2", "canary_tuned_ours_no_cgq_s2"]
    assert names[12][0] == "canary_control_ours_s0" and {n[3] for n in names} == {0, 2}
    rp = CanaryRunPaths(tmp_path)
    assert calibration_budget(p, rp, "ours", "tuned", 2) is None                    # the reference: own size
    with pytest.raises(DataError, match="canary_tuned_ours_s2"):
        calibration_budget(p, rp, "codebreaker", "tuned", 2)                        # it must have run first
    for kind, seed, tokens in (("tuned", 2, 2800), ("control", 2, 1900)):
        st = rp.stats("responses", f"canary_{kind}_ours_s{seed}")
        st.parent.mkdir(parents=True, exist_ok=True)
        st.write_text(_json.dumps({"llm": {"completion_tokens": tokens, "calls": 8}, "partial": False}))
    for key in ("ours_no_tg", "codexleaks", "codebreaker"):
        b = calibration_budget(p, rp, key, "tuned", 2)
        assert (b.target_tokens, b.max_responses, b.reference) == (2800, 120, "canary_tuned_ours_s2")
    assert calibration_budget(p, rp, "codexleaks", "control", 2).target_tokens == 1900
    p["experiment"]["baseline_budget"] = 16                                         # the older integer rule
    assert calibration_budget(p, rp, "ours_no_fl", "tuned", 2) is None
    assert calibration_budget(p, rp, "codexleaks", "tuned", 2).responses == 16
    with pytest.raises(ConfigError, match=r"canary.seeds"):
        compose_dict(["experiment=canary", "canary.seeds=[1,1]"])


def test_the_canary_study_runs_ours_at_its_own_protocol_against_a_common_budget(tmp_path):
    """Issue 26 items 1 and 4: experiment=canary asks 2 questions in each of the 8 scenarios, the
    paper's 10 tests for every function of G(c), with the judge on and room for 10 tests in a
    turn; 60 canaries; each baseline's budget reaches ours' spend in every unit."""
    import json as _json

    from testleak.canary.pipeline import CanaryRunPaths, calibration_budget, calibration_model
    from testleak.equalcost import EVERY

    p = compose_dict(["experiment=canary"])
    exp, canary = p["experiment"], p["canary"]
    assert len(exp["scenarios"]) == 8 and exp["questions_per_scenario"] == 2
    assert (exp["tests_per_function"], exp["functions_per_response"]) == (10, "all")
    assert canary["judge_mode"] == "both" and canary["n"] == 60 and canary["seeds"] == [0, 1, 2]
    assert calibration_model(p, p["model"])["sampling"]["max_tokens"] == 2048 > p["model"]["sampling"]["max_tokens"]
    assert set(exp["calibration_runs"]) == {"ours", "ours_r1", "codexleaks", "codebreaker"}
    # one library round: ours_r1 asks with the library of ours' confirmed leaks (same model and seed),
    # runs after it and is the reference; round 0 runs at its own size
    from testleak.canary.pipeline import run_names
    from testleak.canary.rounds import run_library
    from testleak.paths import Paths

    assert [n[2] for n in run_names(p)[:4]] == ["ours", "ours_r1", "codexleaks", "codebreaker"]
    assert run_library(p, Paths(tmp_path), "ours_r1", "tuned", 1) == "data/canary/runs/canary_tuned_ours_s1/library.json"
    assert run_library(p, Paths(tmp_path), "ours", "tuned", 1) == "prior"
    rp = CanaryRunPaths(tmp_path)
    assert calibration_budget(p, rp, "ours", "tuned", 1) is None
    st = rp.stats("responses", "canary_tuned_ours_r1_s1")
    st.parent.mkdir(parents=True, exist_ok=True)
    st.write_text(_json.dumps({"responses": 16, "test_cases": 150, "partial": False,
                               "llm": {"completion_tokens": 24000, "prompt_tokens": 9000, "calls": 32}}))
    b = calibration_budget(p, rp, "codebreaker", "tuned", 1)
    assert b.unit == EVERY and b.targets == {"responses": 16, "test_cases": 150, "completion_tokens": 24000,
                                             "tokens": 33000}
    assert b.max_responses == 600 and b.reference == "canary_tuned_ours_r1_s1"
    bad = {**exp["calibration_runs"], "ours": {**exp["calibration_runs"]["ours"], "library": "codexleaks"}}
    from testleak.canary.rounds import run_order

    with pytest.raises(ConfigError, match="calibration_runs.ours.library = 'codexleaks'"):
        run_order(bad, "ours_r1")


@pytest.mark.parametrize("experiment", ["canary", "canary_ablations", "canary_tiny"])
def test_every_calibration_run_is_verified_alike(experiment):
    """Issue 26 item 4: the baselines' calibration runs are pinned to the shared verification (the
    chain ours runs through), whatever `baselines.protocol` the user's default says."""
    from testleak.config import run_protocol
    for default in ("published", "shared"):
        params = compose_dict([f"experiment={experiment}", f"baselines.protocol={default}"])
        runs = params["experiment"]["calibration_runs"]
        assert {"ours", "codexleaks"} <= set(runs)
        for key, spec in runs.items():
            # the run entry as canary.pipeline.run_one builds it
            p = {**params, "experiment": {**params["experiment"], "runs": {key: {
                k: v for k, v in spec.items() if k in ("method", "round", "library", "ablation", "verification")}}}}
            assert run_protocol(p, key) == "shared", (experiment, key, default)
