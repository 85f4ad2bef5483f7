"""Semantic entropy of a prompt's responses (Codebreaker selection feature; Han et al. 2025,
paper Sec. 6.1 / App. A.2), re-implemented from the description: TF-IDF vectors of the m
responses to one prompt, DBSCAN over cosine distance, Shannon entropy of the cluster sizes.
Low entropy = the model keeps saying the same thing = a memorisation signal.

Decisions (documented, tested):
- Noise points of DBSCAN count as clusters of their own (a response unlike every other one is
  its own meaning). With ``min_samples=2`` this makes the clustering equal to single-linkage
  at distance ``eps``.
- Tokens are ``\\w+`` runs (single characters included: digits in values matter), lowercased.
- Responses without any token (empty, whitespace or punctuation only) form one shared cluster;
  they have no TF-IDF vector for DBSCAN to compare.
- Entropy in bits by default (``base``); an empty set of responses has entropy 0.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Sequence

from ..formats import shannon_entropy

TOKEN = re.compile(r"\w+")


def cluster_labels(texts: Sequence[str], eps: float = 0.5, min_samples: int = 2) -> list[int]:
    """A cluster id per text: DBSCAN clusters, every noise point its own id, token-less texts one id."""
    from sklearn.cluster import DBSCAN
    from sklearn.feature_extraction.text import TfidfVectorizer

    idx = [i for i, t in enumerate(texts) if TOKEN.search(t or "")]
    labels = [-2] * len(texts)  # -2: no tokens
    if idx:
        vec = TfidfVectorizer(token_pattern=r"(?u)\b\w+\b", lowercase=True)
        X = vec.fit_transform([texts[i] for i in idx])
        db = DBSCAN(eps=eps, min_samples=min_samples, metric="cosine").fit(X)
        nxt = int(max(db.labels_.max(), -1)) + 1
        for i, lab in zip(idx, db.labels_):
            if lab == -1:
                lab, nxt = nxt, nxt + 1
            labels[i] = int(lab)
    if -2 in labels:
        empty_id = max(labels) + 1
        labels = [empty_id if lab == -2 else lab for lab in labels]
    return labels


def semantic_entropy(texts: Sequence[str], eps: float = 0.5, min_samples: int = 2, base: float = 2) -> float:
    """Shannon entropy of the cluster sizes of ``texts`` (see module docstring)."""
    if not texts:
        return 0.0
    return shannon_entropy(list(Counter(cluster_labels(texts, eps, min_samples)).values()), base)
