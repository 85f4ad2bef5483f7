"""Write a fine-tuned model back to GGUF so that llama.cpp (xllamacpp) serves it.

Method: read the original GGUF with ``gguf.GGUFReader``; copy every metadata field
(architecture, hyper-parameters, tokenizer, chat template) as the ``gguf`` package's own
``gguf_new_metadata`` script does; copy every tensor byte for byte except those the LoRA
merge changed, which are written in F16 (or F32). HF parameter names map to GGUF tensor
names through ``gguf.get_tensor_name_map`` (the converter's own table), so no name table
is hand-written. Unchanged tensors keep their original quantization, so the tuned model
differs from the served base exactly in the merged weights.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

import numpy as np

from ..errors import ConfigError

OUT_TYPES = ("f16", "f32")


def hf_to_gguf_names(hf_names, arch: str, n_blocks: int) -> dict[str, str]:
    """HF parameter name -> GGUF tensor name for the given architecture (e.g. ``qwen2``)."""
    import gguf

    archs = {v: k for k, v in gguf.MODEL_ARCH_NAMES.items()}
    if arch not in archs:
        raise ConfigError(f"unknown GGUF architecture {arch!r}")
    tmap = gguf.get_tensor_name_map(archs[arch], n_blocks)
    out = {}
    for n in hf_names:
        g = tmap.get_name(n, try_suffixes=(".weight", ".bias"))
        if g is None:
            raise ConfigError(f"no GGUF tensor name for HF parameter {n!r} (architecture {arch})")
        out[n] = g
    return out


def _field_value(reader, name: str):
    f = reader.fields.get(name)
    return None if f is None else f.contents()


def write_tuned_gguf(original: str | os.PathLike, out: str | os.PathLike, replaced: Mapping[str, np.ndarray],
                     out_type: str = "f16", name_suffix: str = "canary-tuned") -> dict:
    """Copy ``original`` to ``out`` with the tensors in ``replaced`` (GGUF name -> array of
    the HF shape ``[out, in]``) substituted. Returns {tensors, replaced, bytes}."""
    import gguf

    if out_type not in OUT_TYPES:
        raise ConfigError(f"unknown GGUF output type {out_type!r}; known: {', '.join(OUT_TYPES)}")
    reader = gguf.GGUFReader(str(original))
    arch = _field_value(reader, gguf.Keys.General.ARCHITECTURE)
    names = {t.name for t in reader.tensors}
    missing = sorted(set(replaced) - names)
    if missing:
        raise ConfigError(f"tensors {missing[:5]} are not in {original}: the model and the GGUF file differ")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    writer = gguf.GGUFWriter(str(tmp), arch=arch, endianess=reader.endianess)
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        val_type = field.types[0]
        sub_type = field.types[-1] if val_type == gguf.GGUFValueType.ARRAY else None
        value = field.contents()
        if field.name == gguf.Keys.General.NAME:
            value = f"{value}-{name_suffix}"
        writer.add_key_value(field.name, value, val_type, sub_type=sub_type)
    dtype = np.float16 if out_type == "f16" else np.float32
    qtype = gguf.GGMLQuantizationType.F16 if out_type == "f16" else gguf.GGMLQuantizationType.F32
    payload = []
    for t in reader.tensors:
        if t.name in replaced:
            arr = np.ascontiguousarray(np.asarray(replaced[t.name], dtype=np.float32).astype(dtype))
            want = tuple(int(x) for x in reversed(t.shape.tolist()))
            if arr.shape != want and arr.size != int(np.prod(want)):
                raise ConfigError(f"tensor {t.name}: new shape {arr.shape} does not match {want}")
            arr = arr.reshape(want)
            writer.add_tensor_info(t.name, arr.shape, arr.dtype, arr.nbytes, qtype)
            payload.append(arr)
        else:
            writer.add_tensor_info(t.name, t.data.shape, t.data.dtype, t.data.nbytes, t.tensor_type)
            payload.append(t.data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for arr in payload:
        writer.write_tensor_data(arr, tensor_endianess=reader.endianess)
    writer.close()
    os.replace(tmp, out)
    return {"tensors": len(reader.tensors), "replaced": len(replaced), "bytes": out.stat().st_size}
