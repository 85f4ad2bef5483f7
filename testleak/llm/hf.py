"""A GGUF model file as a transformers causal LM, for the code that needs weights and logits
(the division scorer, the canary fine-tune) rather than a served model.

transformers dequantizes a GGUF file and converts its tokenizer in Python: about 100 s for
the 270M scorer, more for the 0.5B model, paid by every process that loads it. The converted
model (safetensors), its config and tokenizer are therefore kept once next to the GGUF file,
in ``<models>/hf/<name>.<sha256 prefix>.<dtype>/``, and later loads read that (a few seconds).
The kept copy is the same tensors, bit for bit, and the same tokenizer (tests/test_llm_hf.py);
it is a cache: deleting it only costs the next load its conversion.
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

from ..errors import ConfigError

_SHARED: dict[tuple, tuple] = {}
_LOCK = threading.Lock()
DONE = "complete"       # written last: a directory without it is an interrupted conversion


def gguf_digest(path: Path) -> str:
    """The file's sha256: from the stamp :func:`testleak.llm.local.ensure_model` wrote when it
    assembled the file (while size and mtime still match), else computed."""
    from .local import sha256_file

    stamp = path.with_name(path.name + ".sha256")
    if stamp.is_file():
        digest, *rest = stamp.read_text(encoding="utf-8").split() or [""]
        st = path.stat()
        if len(digest) == 64 and rest == [str(st.st_size), str(int(st.st_mtime))]:
            return digest
    return sha256_file(path)


def converted_dir(path: Path, dtype: str) -> Path:
    """Where the converted copy of GGUF ``path`` at ``dtype`` is kept."""
    return path.parent / "hf" / f"{path.stem}.{gguf_digest(path)[:16]}.{dtype}"


def _convert(path: Path, dtype: str, dest: Path):
    """Load ``path`` with transformers' GGUF reader and keep the result in ``dest``."""
    import torch
    from safetensors.torch import save_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=getattr(torch, dtype))
    tmp = dest.with_name(f"{dest.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
        config = model.config.to_dict()
        config.pop("quantization_config", None)      # the kept copy holds plain tensors
        type(model.config).from_dict(config).save_pretrained(tmp)
        save_model(model, str(tmp / "model.safetensors"))
        tok.save_pretrained(tmp)
        (tmp / DONE).write_text(path.name + "\n", encoding="utf-8")
        if dest.exists() and not (dest / DONE).is_file():
            shutil.rmtree(dest)                        # left by hand without its marker
        tmp.rename(dest)
    except OSError:
        # a read-only models directory (convert on every load), or another process kept its copy first
        shutil.rmtree(tmp, ignore_errors=True)
    return model, tok


def _read(dest: Path, dtype: str):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(dest, dtype=getattr(torch, dtype))
    return model, AutoTokenizer.from_pretrained(dest)


def load_causal_lm(gguf_path: str | Path, dtype: str = "float32", shared: bool = True):
    """(model in eval mode, tokenizer) of a GGUF file. ``shared``: one object per process and
    (file, dtype), for readers; ``shared=False`` returns a model of the caller's own (to train)."""
    p = Path(gguf_path)
    if not p.is_file():
        raise ConfigError(f"model file {p} not found: it is assembled by testleak.llm.local.ensure_model")
    key = (str(p.resolve()), dtype)
    with _LOCK:
        if shared and key in _SHARED:
            return _SHARED[key]
        dest = converted_dir(p, dtype)
        model, tok = _read(dest, dtype) if (dest / DONE).is_file() else _convert(p, dtype, dest)
        model.eval()
        if shared:
            _SHARED[key] = (model, tok)
            return _SHARED[key]
        return model, tok
