"""The kept transformers copy of a GGUF model (testleak/llm/hf.py) is the model transformers'
GGUF reader gives, bit for bit: the same tensors, tokenizer and logits, on the real division
scorer (Gemma 3 270M, the default run's)."""

from __future__ import annotations

import pytest
import torch

from testleak.config import ROOT
from testleak.errors import ConfigError
from testleak.llm import hf

GGUF = ROOT / ".cache" / "models" / "gemma-3-270m-q4_k_m.gguf"
TEXT = "def register(user, password='x'):\n    send(user.email, 'alice@example.com')  # ünïcode 東京"


@pytest.mark.slow
def test_the_kept_copy_is_the_gguf_readers_model_bit_for_bit(tmp_path):
    if not GGUF.exists():
        pytest.skip("scorer model not assembled: python -m testleak.prepare")
    dest = hf.converted_dir(GGUF, "bfloat16")
    assert dest == GGUF.parent / "hf" / f"{GGUF.stem}.{hf.gguf_digest(GGUF)[:16]}.bfloat16"
    # the GGUF reader's model, converted and kept: in the project's models directory when it has no
    # copy yet (this test runs first, tests/conftest.py, so the tests after it read this copy)
    target = tmp_path / dest.name if (dest / hf.DONE).is_file() else dest
    ref, ref_tok = hf._convert(GGUF, "bfloat16", target)
    assert (target / hf.DONE).is_file() and (target / "model.safetensors").is_file()
    kept, tok = hf._read(target, "bfloat16")
    assert kept is not ref and not ref.training
    a, b = ref.state_dict(), kept.eval().state_dict()
    assert a.keys() == b.keys() and all(a[k].dtype == b[k].dtype and torch.equal(a[k], b[k]) for k in a)
    e1, e2 = (t(TEXT, return_offsets_mapping=True) for t in (ref_tok, tok))
    assert e1["input_ids"] == e2["input_ids"] and e1["offset_mapping"] == e2["offset_mapping"]
    for attr in ("bos_token_id", "eos_token_id", "pad_token_id", "mask_token_id"):
        assert getattr(ref_tok, attr) == getattr(tok, attr), attr
    ids = torch.tensor([e1["input_ids"]])
    with torch.no_grad():
        assert torch.equal(ref(ids).logits, kept(ids).logits)
    # readers share one object per process, in eval mode; a trainer gets a model of its own
    shared = hf.load_causal_lm(GGUF, "bfloat16")
    own, _ = hf.load_causal_lm(GGUF, "bfloat16", shared=False)
    assert hf.load_causal_lm(GGUF, "bfloat16") is shared and own is not shared[0] and not shared[0].training
    assert torch.equal(own.state_dict()["model.embed_tokens.weight"], a["model.embed_tokens.weight"])


def test_a_missing_model_file_says_how_to_get_it(tmp_path):
    with pytest.raises(ConfigError, match="not found: it is assembled by testleak.llm.local.ensure_model"):
        hf.load_causal_lm(tmp_path / "absent.gguf")
