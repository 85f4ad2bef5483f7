"""Figures of the library round (paper Figs. 3-5), privacy-safe: no text, only scores and points.

Fig. 3: distribution of token pseudo-NLL scores of template vs fragment tokens, dashed line at
the median per-instance Q1 threshold of the instances whose roles Q1 decided (``value_span:
score``); in anchor mode the value span decides the roles and no Q1 line is drawn. Figs. 4/5: 2-D projection (PCA or t-SNE) of fragment /
template embeddings coloured by the attribute they were filed under; noise in grey. No string
(raw or masked) is drawn, so nothing of a value can leave data/ through a figure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(plt, fig, path: str | Path) -> Path:
    fig.tight_layout()
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(p, dpi=120)
    plt.close(fig)
    return p


def q1_line(divisions: Sequence[dict]) -> float | None:
    """Where Fig. 3 draws the Q1 line: the median threshold of the divisions whose roles it decided.

    Only the paper's rule (policy ``score``) assigns roles by the threshold; in anchor mode the
    value span does, so anchored divisions contribute nothing and an all-anchor round has no line.
    """
    thr = [d["threshold"] for d in divisions if d.get("status") == "divided" and d.get("policy") == "score"]
    return float(np.median(thr)) if thr else None


def division_scores_figure(divisions: Sequence[dict], path: str | Path) -> Path:
    plt = _plt()
    tmp = [t["score"] for d in divisions if d.get("status") == "divided" for t in d["tokens"] if t["role"] == "template"]
    frag = [t["score"] for d in divisions if d.get("status") == "divided" for t in d["tokens"] if t["role"] == "fragment"]
    line = q1_line(divisions)
    anchored = sum(d.get("status") == "divided" and d.get("policy") != "score" for d in divisions)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    bins = np.linspace(0, max(tmp + frag + [1.0]), 30)
    ax.hist(tmp, bins=bins, alpha=0.6, label=f"template tokens (n={len(tmp)})")
    ax.hist(frag, bins=bins, alpha=0.6, label=f"fragment tokens (n={len(frag)})")
    if line is not None:
        ax.axvline(line, ls="--", color="k", label="Q1 threshold (median)")
    if anchored:
        ax.set_title(f"roles of {anchored} instance(s) from the value span (anchor), not from Q1", fontsize=8)
    ax.set_xlabel("token pseudo-NLL")
    ax.set_ylabel("tokens")
    ax.legend(fontsize=8)
    return _save(plt, fig, path)


def embedding_figure(emb: np.ndarray | None, attributes: Sequence[str | None], path: str | Path, title: str,
                     projection: str = "pca", seed: int = 0) -> Path:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5, 4))
    if emb is not None and len(emb) >= 2:
        if projection == "tsne" and len(emb) > 5:
            from sklearn.manifold import TSNE

            xy = TSNE(n_components=2, perplexity=min(30, len(emb) - 1), random_state=seed).fit_transform(emb)
        else:
            from sklearn.decomposition import PCA

            xy = PCA(n_components=2, random_state=seed).fit_transform(emb)
        for attr in sorted({a or "noise" for a in attributes}):
            m = np.array([(a or "noise") == attr for a in attributes])
            ax.scatter(xy[m, 0], xy[m, 1], s=14, label=attr, c="lightgrey" if attr == "noise" else None)
        ax.legend(fontsize=6, markerscale=0.8)
    else:
        ax.text(0.5, 0.5, "fewer than 2 items", ha="center", va="center", transform=ax.transAxes)
    ax.set_title(title, fontsize=9)
    return _save(plt, fig, path)
