"""Figure 1 of the paper: confirmed privacy instances against the number of responses, one
panel per privacy category, one line per run (ours vs the baselines); its equal-cost variant
puts the completion tokens spent on the x axis (``x="completion_tokens"``).
matplotlib, Agg."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402


X_LABELS = {"responses": "number of responses", "completion_tokens": "completion tokens spent",
            "test_cases": "test cases", "tokens": "prompt + completion tokens spent", "usd": "USD at the model's price"}


def _step_panel(ax, lines: Sequence[tuple[str, list | None, list | None]], x: str, title: str) -> None:
    """One panel: a step line per ``(label, xs, ys)``; ``xs`` None draws only a dotted legend entry."""
    top = 0
    for lab, xs, ys in lines:
        if xs is None:
            ax.plot([], [], linestyle=":", label=lab)
            continue
        top = max([top, *ys])
        ax.plot(xs, ys, label=lab, drawstyle="steps-post")
    ax.set_title(title)
    ax.set_xlabel(X_LABELS.get(x, x))
    ax.set_ylabel("confirmed instances")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(0, max(1, top) * 1.08)  # counts: never below zero, a visible axis when all are 0
    ax.grid(alpha=0.3)


def _save(fig, axes, title: str, path: Path) -> Path:
    axes[0][0].legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def units_png(curves: Mapping[str, Sequence[Mapping] | None], units: Sequence[str], path: Path,
              labels: Mapping[str, str] | None = None, title: str = "", y: str = "all") -> Path:
    """One panel per budget unit (x: the unit spent, y: confirmed instances ``y``), one line per
    run, from the same curves (a run without that unit is drawn as "no data")."""
    labels = labels or {}
    fig, axes = plt.subplots(1, len(units), figsize=(3.9 * len(units), 3.4), squeeze=False)
    for ax, unit in zip(axes[0], units):
        lines = []
        for run, rows in curves.items():
            lab = labels.get(run, run)
            if not rows or rows[0].get(unit) in (None, ""):
                lines.append((f"{lab}: not run" if rows is None else f"{lab}: no data", None, None))
            else:
                lines.append((lab, [float(r[unit]) for r in rows], [int(r[y]) for r in rows]))
        _step_panel(ax, lines, unit, X_LABELS.get(unit, unit))
    return _save(fig, axes, title, path)


def figure1_png(curves: Mapping[str, Sequence[Mapping] | None], categories: Sequence[str], path: Path,
                labels: Mapping[str, str] | None = None, title: str = "", x: str = "responses") -> Path:
    """Write the PNG. ``curves`` maps run -> rows ``{responses, completion_tokens, <category>...}``
    (None: not run); ``x``: the column on the x axis (a curve without it is drawn as "no data")."""
    labels = labels or {}
    fig, axes = plt.subplots(1, len(categories), figsize=(4.2 * len(categories), 3.4), squeeze=False)
    for ax, cat in zip(axes[0], categories):
        lines = []
        for run, rows in curves.items():
            lab = labels.get(run, run)
            if not rows:
                lines.append((f"{lab}: not run" if rows is None else f"{lab}: 0 responses", None, None))
            elif rows[0].get(x) in (None, ""):
                lines.append((f"{lab}: no {X_LABELS.get(x, x)} (rerun its metrics)", None, None))
            else:
                lines.append((lab, [int(r[x]) for r in rows], [int(r[cat]) for r in rows]))
        _step_panel(ax, lines, x, cat.capitalize())
    return _save(fig, axes, title, path)
