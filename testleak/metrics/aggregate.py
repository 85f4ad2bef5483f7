"""Means over test models (paper Tables 2-4, Sec. 6.2): the paper reports a model family's mean
over its models and, for the whole study, the mean over the families (e.g. 92.6 confirmed =
(105.7 + 79.5) / 2; Table 4's reject rate 35.10 % = the mean of the families' 39.3 % and 30.9 %;
Table 3's Ours LP>=1 = the mean over the two families). Every number of a run's metrics is
averaged alike (counts, rates, LP/IL fractions, ablation scores), with :func:`category_mean`.

- :func:`mean_metrics`: the mean of several runs' metrics dicts, leaf by leaf: numbers are
  averaged, flags must all hold (``complete``), equal strings are kept and different ones joined
  with ``+``; lists (confirmed keys) are left out, they have no mean.
- :func:`family_means`: ``({family: mean over its models}, mean over the families)``.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from .steps import category_mean


def mean_metrics(items: Sequence[Mapping]) -> dict:
    """Leaf-by-leaf mean of metrics dicts (keys present in every item)."""
    items = list(items)
    if not items:
        return {}
    out: dict = {}
    for k in items[0]:
        vals = [m.get(k) for m in items if k in m]
        if len(vals) != len(items):
            continue
        if all(isinstance(v, bool) for v in vals):
            out[k] = all(vals)
        elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
            out[k] = category_mean(vals)
        elif all(isinstance(v, Mapping) for v in vals):
            out[k] = mean_metrics(vals)
        elif all(isinstance(v, str) for v in vals):
            out[k] = vals[0] if len(set(vals)) == 1 else "+".join(sorted(set(vals)))
        elif any(v is None for v in vals) and not any(isinstance(v, (list, Mapping)) for v in vals):
            out[k] = None
    return out


def family_means(by_model: Mapping[str, Mapping], family_of: Mapping[str, str]) -> tuple[dict[str, dict], dict]:
    """``by_model``: model -> metrics; ``family_of``: model -> family (``model.family`` of its
    config). Families in order of first appearance; the overall mean is the mean over families."""
    fams: dict[str, list] = {}
    for model, m in by_model.items():
        fams.setdefault(family_of[model], []).append(m)
    means = {f: mean_metrics(ms) for f, ms in fams.items()}
    return means, mean_metrics(list(means.values()))
