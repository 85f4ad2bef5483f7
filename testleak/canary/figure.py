"""The canary report's figure: recall vs budget, one panel per unit."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

X_LABELS = {"responses": "responses (per seed)", "test_cases": "test cases (per seed)",
            "completion_tokens": "completion tokens (per seed)", "tokens": "prompt + completion tokens (per seed)"}


def budget_png(rows: Sequence[Mapping], path: Path) -> Path:
    """Rows of :func:`testleak.canary.tables.budget_curves`: per unit a panel of recall vs spend per
    method with its 95 % band (tuned model: solid, control: dotted)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    units = list(dict.fromkeys(r["unit"] for r in rows)) or ["completion_tokens"]
    fig, axes = plt.subplots(1, len(units), figsize=(4.2 * len(units), 3.8), squeeze=False)
    for ax, unit in zip(axes[0], units):
        mine = [r for r in rows if r["unit"] == unit]
        for model, key in dict.fromkeys((r["model"], r["method"]) for r in mine):
            pts = [r for r in mine if r["model"] == model and r["method"] == key]
            x = [p["spent"] for p in pts]
            line, = ax.step(x, [p["recall"] for p in pts], where="post", linestyle="-" if model == "tuned" else ":",
                            label=f"{key} ({model})")
            ax.fill_between(x, [p["recall_ci_low"] for p in pts], [p["recall_ci_high"] for p in pts], step="post",
                            alpha=0.15, color=line.get_color())
        ax.set_xlabel(X_LABELS.get(unit, unit))
        ax.set_ylim(0, 1.02)
    axes[0][0].set_ylabel("canary recall (canaries x seeds)")
    axes[0][-1].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
