"""Canary ground truth (issue 8): planting, values, fine-tune mechanics, GGUF write-back, recall."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from stdnum import iban, luhn

from testleak.canary.finetune import (FinetuneSettings, build_examples, memorization, merged_weights, train_lora)
from testleak.canary.gguf_io import hf_to_gguf_names, write_tuned_gguf
from testleak.canary.plant import SourceFile, plant, sample_files
from testleak.canary.recall import match_canary, run_recall
from testleak.canary.values import ATTRIBUTES, make_value
from testleak.config import compose_dict
from testleak.errors import ConfigError

TAX = compose_dict()["taxonomy"]

BODY = '''"""A module."""
import os


def f(x):
    return x + 1


class A:
    pass


def g():
    return os.sep
'''


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
    assert [f.path for f in sample_files(fs, 1, 0)] == ["a.py"]
    with pytest.raises(ConfigError, match="lower canary.files"):
        sample_files(fs, 2, 0)


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
    s = FinetuneSettings(epochs=25, batch_size=3, lr=3e-2, lora_r=8, lora_alpha=16, max_tokens=64, threads=1,
                         target_modules=("q_proj", "v_proj", "up_proj", "not_a_module"))
    peft_model, hist = train_lora(model, tok, examples, s)
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


def test_finetune_settings_reject_unknown_keys():
    with pytest.raises(ConfigError, match="unknown canary.finetune keys"):
        FinetuneSettings.from_config({"epochz": 3})
    assert FinetuneSettings.from_config({"epochs": 2}, seed=9).seed == 9


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
