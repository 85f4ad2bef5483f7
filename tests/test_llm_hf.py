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
    models = tmp_path / "models"
    models.mkdir()
    gguf = models / GGUF.name
    gguf.symlink_to(GGUF)
    dest = hf.converted_dir(gguf, "bfloat16")
    assert dest == models / "hf" / f"{GGUF.stem}.{hf.gguf_digest(GGUF)[:16]}.bfloat16"
    ref, ref_tok = hf.load_causal_lm(gguf, "bfloat16", shared=False)      # converts: the GGUF reader's model
    assert (dest / hf.DONE).is_file() and (dest / "model.safetensors").is_file()
    kept, tok = hf.load_causal_lm(gguf, "bfloat16", shared=False)         # read from the kept copy
    assert kept is not ref and not kept.training and not ref.training
    a, b = ref.state_dict(), kept.state_dict()
    assert a.keys() == b.keys() and all(a[k].dtype == b[k].dtype and torch.equal(a[k], b[k]) for k in a)
    e1, e2 = (t(TEXT, return_offsets_mapping=True) for t in (ref_tok, tok))
    assert e1["input_ids"] == e2["input_ids"] and e1["offset_mapping"] == e2["offset_mapping"]
    for attr in ("bos_token_id", "eos_token_id", "pad_token_id", "mask_token_id"):
        assert getattr(ref_tok, attr) == getattr(tok, attr), attr
    ids = torch.tensor([e1["input_ids"]])
    with torch.no_grad():
        assert torch.equal(ref(ids).logits, kept(ids).logits)
    # readers share one object per process; a trainer gets its own
    shared = hf.load_causal_lm(gguf, "bfloat16")
    assert hf.load_causal_lm(gguf, "bfloat16") is shared and shared[0] is not kept


def test_a_missing_model_file_says_how_to_get_it(tmp_path):
    with pytest.raises(ConfigError, match="not found: it is assembled by testleak.llm.local.ensure_model"):
        hf.load_causal_lm(tmp_path / "absent.gguf")
