"""Blind-MI-Diff (Hui et al., NDSS 2021) as the CodexLeaks code runs it, on numpy (no code of
theirs): the MMD over summed Gaussian kernels, the ``split`` and ``generated`` non-member
variants, and the perturbation that makes generated non-members (:mod:`.published`)."""

from __future__ import annotations

import math


#: widths of the Gaussian kernels summed in the MMD (the authors' list; k = exp(-d^2 / (2 s)))
MMD_SIGMAS = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 5, 10, 15, 20, 25, 30, 35, 100, 1e3, 1e4, 1e5, 1e6)
#: the MMD never drops below this (the authors' floor; an empty set gives the floor)
MMD_FLOOR = 1e-4


def _as_rows(x):
    import numpy as np

    a = np.asarray(x, dtype=np.float64)
    return a.reshape(-1, 1) if a.ndim == 1 else a


def kernel_matrix(x, y):
    """Sum over :data:`MMD_SIGMAS` of Gaussian kernels between the rows of x and y."""
    import numpy as np

    x, y = _as_rows(x), _as_rows(y)
    d = ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)
    return sum(np.exp(-d / (2.0 * s)) for s in MMD_SIGMAS)


def _mmd(saa: float, sbb: float, sab: float, na: int, nb: int) -> float:
    if na == 0 or nb == 0:
        return MMD_FLOOR
    return max(MMD_FLOOR, saa / na ** 2 + sbb / nb ** 2 - 2.0 * sab / (na * nb))


def mmd(x, y) -> float:
    """Biased squared MMD between two sample sets (rows), floored at :data:`MMD_FLOOR`."""
    x, y = _as_rows(x), _as_rows(y)
    if not len(x) or not len(y):
        return MMD_FLOOR
    return _mmd(float(kernel_matrix(x, x).sum()), float(kernel_matrix(y, y).sum()),
                float(kernel_matrix(x, y).sum()), len(x), len(y))


def _percentile_lower(values, q: float) -> float:
    """The ``lower`` percentile: the order statistic at floor(q * (n - 1))."""
    v = sorted(values)
    return v[int(math.floor(q * (len(v) - 1)))]


def band_split(features, band) -> list[bool]:
    """The initial members of the ``split`` variant: features strictly between the ``lower``
    percentiles ``band[0]`` and ``band[1]`` of all features."""
    lo, hi = _percentile_lower(features, band[0]), _percentile_lower(features, band[1])
    return [lo < f < hi for f in features]


def blind_mi_split(features, band, order, batch: int) -> tuple[list[bool], dict]:
    """Blind-MI-Diff without generated non-members, as the CodexLeaks code runs it: members
    start as :func:`band_split`; in each batch (samples in ``order``) every non-member in turn
    moves to the members if the MMD between the sets does not drop (else it moves back);
    passes repeat until one moves nobody. Returns the member flags (input order) and counts."""
    import numpy as np

    f = [float(x) for x in features]
    member = band_split(f, band) if f else []
    init = sum(member)
    passes = moves = 0
    for b0 in range(0, len(order), batch):
        idx = list(order[b0:b0 + batch])
        k = kernel_matrix([f[i] for i in idx], [f[i] for i in idx])
        m = np.array([member[i] for i in idx], dtype=bool)
        ra, rb = k[:, m].sum(1), k[:, ~m].sum(1)          # kernel row sums over members / non-members
        saa, sbb, sab = ra[m].sum(), rb[~m].sum(), ra[~m].sum()
        cur = _mmd(saa, sbb, sab, int(m.sum()), int((~m).sum()))
        moved = True
        while moved:
            moved, passes = False, passes + 1
            for j in range(len(idx)):
                if m[j]:
                    continue
                kjj = k[j, j]
                naa, nbb = saa + 2 * ra[j] + kjj, sbb - 2 * rb[j] + kjj
                nab = sab + rb[j] - kjj - ra[j]
                new = _mmd(naa, nbb, nab, int(m.sum()) + 1, int((~m).sum()) - 1)
                if new < cur:
                    continue
                m[j], moved, moves, cur = True, True, moves + 1, new
                saa, sbb, sab = naa, nbb, nab
                ra, rb = ra + k[:, j], rb - k[:, j]
        for j, i in enumerate(idx):
            member[i] = bool(m[j])
    return member, {"initial_members": init, "passes": passes, "moves": moves}


def blind_mi_generated(features, nonmember_features, order, batch: int) -> tuple[list[bool], dict]:
    """Blind-MI-Diff with generated non-members (Hui et al.'s Diff-w): in each batch every
    sample starts as a member; in a pass each member whose move to the generated non-member
    set would raise the MMD between that set and the remaining members (both taken at the
    start of the pass) is marked non-member; passes repeat until one marks nobody."""
    import numpy as np

    f = [float(x) for x in features]
    g = [float(x) for x in nonmember_features]
    member = [True] * len(f)
    passes = moves = 0
    for b0 in range(0, len(order), batch):
        idx = list(order[b0:b0 + batch])
        t = [f[i] for i in idx]
        k_tt, k_tg = kernel_matrix(t, t), kernel_matrix(t, g)
        sgg, ng = float(kernel_matrix(g, g).sum()), len(g)
        rg = k_tg.sum(1)                                   # kernel row sums over the generated set
        m = np.ones(len(idx), dtype=bool)
        marked = True
        while marked:
            marked, passes = False, passes + 1
            rm = k_tt[:, m].sum(1)
            smm, sgm, nm = float(rm[m].sum()), float(rg[m].sum()), int(m.sum())
            cur = _mmd(sgg, smm, sgm, ng, nm)
            nxt = m.copy()
            for j in np.flatnonzero(m):
                kjj = k_tt[j, j]
                new = _mmd(sgg + 2 * rg[j] + kjj, smm - 2 * rm[j] + kjj, sgm - rg[j] + rm[j] - kjj, ng + 1, nm - 1)
                if new > cur:
                    nxt[j], marked, moves = False, True, moves + 1
            m = nxt
        for j, i in enumerate(idx):
            member[i] = bool(m[j])
    return member, {"initial_members": len(f), "passes": passes, "moves": moves}


def perturb(text: str, rng) -> str:
    """A generated non-member of the same format: the text's characters in a random order."""
    chars = list(text)
    rng.shuffle(chars)
    return "".join(chars)
