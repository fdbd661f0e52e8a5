"""Change points in a benchmark history: E-divisive means with a Student t test per split (Otava's method).

The method is the one Apache Otava (formerly Hunter, MongoDB's lineage) runs, written here because every
maintained package of it would break this environment (``../shared/notes/change-point-libraries.md``:
apache-otava 0.8 pins numpy 2.2, MongoDB's signal-processing-algorithms needs numpy < 2; ruptures
installs but has no significance test).  References: Matteson & James, "A nonparametric approach for
multiple change point analysis of multivariate data", JASA 109 (2014) — the E-divisive statistic;
Fleming et al., "Hunter: Using Change Point Detection to Hunt for Performance Regressions", ICPE 2023
(arXiv 2301.03034) — the t test in place of the permutation test, and weak change points filtered.

Here:

* **A point** is one build / night / capture of the benchmark; its **repeats** are the runs of that point.
  The point's value is the mean of its repeats' log values (the geometric mean); repeats are kept for the
  medians and the counts.  The unit of every test is the point: repeats of one point share its
  conditions, so pooling them as independent would understate the noise between points.
* **Candidates**: binary segmentation; in a segment the split τ maximising the E-divisive statistic
  Q(τ) = mn/(m+n)·(2/(mn)·Σ|xᵢ−yⱼ| − C(m,2)⁻¹·Σ|xᵢ−xₖ| − C(n,2)⁻¹·Σ|yⱼ−yₖ|) (α = 1, the right end fixed
  at the segment's end, as Otava does) over splits leaving ≥ ``min_segment`` points on each side; it is
  kept as a candidate when Welch's t test between the two sides has p ≤ ``weak_p``, and both sides are
  searched again.  O(T²) per series from one 2-D prefix sum of |xᵢ − xⱼ|.
* **Filter**: each candidate is tested against its neighbours only (the points between the previous and
  the next candidate): Welch's t test on the two sides' point values → p, the change
  exp(mean after − mean before) − 1 with its 95 % Welch CI.  While some candidate has p > ``max_p`` or
  |change| < ``min_change``, the one with the largest p (then the smallest |change|) is dropped and its
  neighbours are tested again.  The p-value is that of the t test at a split chosen to maximise the
  difference, so it is optimistic; ``max_p`` (default 0.001, Otava's) is set low for that reason, and the
  false-change rate on shuffled null histories is measured (docs/history.md).
* Deterministic: no permutations, no random numbers; ties go to the earliest split.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

#: defaults: the project's minimum interesting change (5 %), Otava's p threshold, a segment of 3 points
MIN_CHANGE, MAX_P, WEAK_P, MIN_SEGMENT = 0.05, 0.001, 0.05, 3


@dataclass(frozen=True)
class Split:
    """A change between point ``at - 1`` and point ``at`` (0-based: ``at`` is the first point after it),
    tested on the points ``lo`` … ``at - 1`` against ``at`` … ``hi - 1``.  ``change`` is a fraction
    (−0.06 = 6 % lower), ``lo_ci``/``hi_ci`` its 95 % CI, ``p`` Welch's two-sided p."""
    at: int
    lo: int
    hi: int
    change: float
    ci_lo: float
    ci_hi: float
    p: float


def _moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Prefix sums of x − mean(x) and of its square (centred: no cancellation for log values near 10)."""
    c = x - x.mean() if len(x) else x
    return np.r_[0.0, np.cumsum(c)], np.r_[0.0, np.cumsum(c * c)]


def _welch_at(mom: tuple[np.ndarray, np.ndarray], lo, at, hi) -> tuple[np.ndarray, ...]:
    """Welch's t test of points ``lo``…``at``−1 against ``at``…``hi``−1, vectorised over arrays of bounds:
    (difference of means after − before, its 95 % CI low and high, two-sided p).  With no spread on either
    side the difference is exact (CI a point, p 0 when it differs, 1 when not)."""
    s1, s2 = mom
    lo, at, hi = (np.asarray(v, dtype=np.int64) for v in (lo, at, hi))
    na, nb = (at - lo).astype(float), (hi - at).astype(float)
    sa, sb = s1[at] - s1[lo], s1[hi] - s1[at]
    ma, mb = sa / na, sb / nb
    with np.errstate(divide="ignore", invalid="ignore"):
        va = np.where(na > 1, np.maximum(s2[at] - s2[lo] - sa * ma, 0.0) / (na - 1), 0.0)
        vb = np.where(nb > 1, np.maximum(s2[hi] - s2[at] - sb * mb, 0.0) / (nb - 1), 0.0)
        ea, eb = va / na, vb / nb
        se2 = ea + eb
        den = np.where(na > 1, ea * ea / (na - 1), 0.0) + np.where(nb > 1, eb * eb / (nb - 1), 0.0)
        df = np.where(den > 0, se2 * se2 / den, na + nb - 2)
        se = np.sqrt(se2)
        d = mb - ma
        ok = se2 > 0
        half = np.where(ok, special.stdtrit(np.where(ok, df, 1.0), 0.975) * se, 0.0)
        p = np.where(ok, 2 * special.stdtr(np.where(ok, df, 1.0), -np.abs(d) / np.where(ok, se, 1.0)),
                     np.where(d != 0, 0.0, 1.0))
    return d, d - half, d + half, p


def _welch(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float, float]:
    """:func:`_welch_at` on two samples (the two sides as arrays)."""
    x = np.r_[np.asarray(a, float), np.asarray(b, float)]
    return tuple(float(v) for v in _welch_at(_moments(x), 0, len(a), len(x)))


def _prefix(x: np.ndarray) -> np.ndarray:
    """P[i, j] = Σ |x_k − x_l| over k < i, l < j (a (T+1)² array)."""
    d = np.abs(x[:, None] - x[None, :])
    p = np.zeros((len(x) + 1, len(x) + 1))
    np.cumsum(np.cumsum(d, axis=0), axis=1, out=p[1:, 1:])
    return p


def _block(p: np.ndarray, r0, r1, c0, c1):
    return p[r1, c1] - p[r0, c1] - p[r1, c0] + p[r0, c0]


def best_split(p: np.ndarray, lo: int, hi: int, min_segment: int) -> int | None:
    """The split τ in [lo + min_segment, hi − min_segment] maximising the E-divisive Q on points
    lo … hi − 1 (prefix sums ``p`` of :func:`_prefix`); None when the segment is too short."""
    m0 = max(min_segment, 1)
    taus = np.arange(lo + m0, hi - m0 + 1)
    if not len(taus):
        return None
    m, n = (taus - lo).astype(float), (hi - taus).astype(float)
    cross = _block(p, lo, taus, taus, hi)
    left = _block(p, lo, taus, lo, taus) / 2
    right = _block(p, taus, hi, taus, hi) / 2
    with np.errstate(divide="ignore", invalid="ignore"):  # one point on a side: no pairs, that term is 0
        wl = np.where(m > 1, left / (m * (m - 1) / 2), 0.0)
        wr = np.where(n > 1, right / (n * (n - 1) / 2), 0.0)
    q = m * n / (m + n) * (2 * cross / (m * n) - wl - wr)
    return int(taus[int(np.argmax(q))])


def _split(mom, lo: int, at: int, hi: int) -> Split:
    d, a, b, pv = (float(v) for v in _welch_at(mom, lo, at, hi))
    return Split(at, lo, hi, float(np.expm1(d)), float(np.expm1(a)), float(np.expm1(b)), pv)


def candidates(x: np.ndarray, min_segment: int = MIN_SEGMENT, weak_p: float = WEAK_P) -> list[int]:
    """The weak change points of the point values ``x`` (log scale) by binary segmentation (module
    docstring), sorted."""
    x = np.asarray(x, float)
    if len(x) < 2 * max(min_segment, 1):
        return []
    p, mom = _prefix(x), _moments(x)
    out, todo = [], [(0, len(x))]
    while todo:
        lo, hi = todo.pop()
        tau = best_split(p, lo, hi, min_segment)
        if tau is None or float(_welch_at(mom, lo, tau, hi)[3]) > weak_p:
            continue
        out.append(tau)
        todo += [(lo, tau), (tau, hi)]
    return sorted(out)


def changes(x, min_change: float = MIN_CHANGE, max_p: float = MAX_P, min_segment: int = MIN_SEGMENT,
            weak_p: float = WEAK_P) -> list[Split]:
    """The change points of the point values ``x`` (log of each point's geometric mean, in time order)
    that survive the filter (module docstring): p ≤ ``max_p`` and |change| ≥ ``min_change`` (a fraction)
    against their neighbouring change points.  Each round drops the failing candidate with the largest p
    (then the smallest |change|, then the latest) and re-tests only its two neighbours."""
    x = np.asarray(x, float)
    cps = candidates(x, min_segment, max(weak_p, max_p))
    if not cps:
        return []
    mom = _moments(x)
    at = np.array(cps, dtype=np.int64)
    b = np.r_[0, at, len(x)]
    d, _, _, p = _welch_at(mom, b[:-2], at, b[2:])
    keep = np.ones(len(at), bool)
    d, p = d.copy(), p.copy()
    while True:
        bad = keep & ((p > max_p) | (np.abs(np.expm1(d)) < min_change))
        if not bad.any():
            break
        idx = np.flatnonzero(bad)
        i = idx[np.lexsort((idx, -np.abs(d[idx]), p[idx]))[-1]]
        keep[i] = False
        live = np.flatnonzero(keep)
        k = np.searchsorted(live, i)
        for j in (k - 1, k):  # the neighbours before and after the dropped one
            if 0 <= j < len(live):
                lo = at[live[j - 1]] if j > 0 else 0
                hi = at[live[j + 1]] if j + 1 < len(live) else len(x)
                dj, _, _, pj = _welch_at(mom, lo, at[live[j]], hi)
                d[live[j]], p[live[j]] = float(dj), float(pj)
    live = np.flatnonzero(keep)
    bounds = np.r_[0, at[live], len(x)]
    return [_split(mom, int(bounds[k]), int(bounds[k + 1]), int(bounds[k + 2])) for k in range(len(live))]
