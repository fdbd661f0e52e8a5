"""Verdict rules for a published relative claim: direction and size, after a false-discovery step.

The rules (docs/verdicts.md; the same for the QoS studies' claims and the RGW diary's):

``reproduced``               q < α, our change has the published direction and the published value lies
                             inside our 95 % CI
``same direction, smaller``  q < α, the published direction, the published value beyond our CI (ours smaller)
``same direction, larger``   q < α, the published direction, the published value short of our CI (ours larger)
``contradicted``             q < α in the opposite direction; or q ≥ α while our CI lies wholly short of the
                             published value (we rule out the published size and cannot tell ours from zero)
``undecided``                q ≥ α and the published value inside our CI (or short of it: a CI wholly beyond
                             the published value that BH does not keep); the data cannot tell, and the
                             repeats the pre-registered model needs go beside it
``not measurable here``      no test on our data (counted apart, never as decided)

q is the Benjamini–Hochberg adjusted p over one campaign's distinct tests (:func:`bh`); the CI is the
unadjusted 95 % t interval of the same estimate.  All values on the log scale (a change of c % is
log(1 + c/100); a share s % of its reference is log(s/100)).
"""

from __future__ import annotations

import numpy as np
from statsmodels.stats.multitest import multipletests

REPRODUCED, SMALLER, LARGER = "reproduced", "same direction, smaller", "same direction, larger"
CONTRADICTED, UNDECIDED, NOT_MEASURABLE = "contradicted", "undecided", "not measurable here"
#: every verdict, in the order tables show them
VERDICTS = (REPRODUCED, SMALLER, LARGER, CONTRADICTED, UNDECIDED, NOT_MEASURABLE)
#: verdicts that decide a claim (its direction and its size are known)
DECIDED = (REPRODUCED, SMALLER, LARGER, CONTRADICTED)
#: from least to most support for the claim: a distinct test whose claims (same data, different published
#: values) get different verdicts is counted once, under the first of these its claims have
CONSERVATIVE = (CONTRADICTED, UNDECIDED, SMALLER, LARGER, REPRODUCED, NOT_MEASURABLE)


def bh(p) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values (q) of ``p`` (``statsmodels`` ``multipletests``, ``fdr_bh``),
    NaN kept as NaN and left out of the count m."""
    p = np.asarray(p, float)
    q = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if ok.any():
        q[ok] = multipletests(p[ok], method="fdr_bh")[1]
    return q


def rule(q, est, lo, hi, published, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(verdict, direction, size) per claim, vectorised; every argument on the log scale except ``q``.

    ``direction``: ``same`` / ``opposite`` (q < α) or ``not significant``; ``size``: where the published
    value lies against our CI — ``inside``, ``ours smaller`` (beyond the CI, away from zero),
    ``ours larger`` (between zero and the CI) or ``opposite side`` (the CI is wholly on the other side of
    zero); empty where there is no test (verdict ``not measurable here``)."""
    q, est, lo, hi, pub = (np.asarray(x, float) for x in np.broadcast_arrays(q, est, lo, hi, published))
    tested = np.isfinite(q) & np.isfinite(est) & np.isfinite(pub) & np.isfinite(lo) & np.isfinite(hi)
    # in the published direction's coordinates: the claim is +|pub|, our CI [a, b]
    s = np.where(pub < 0, -1.0, 1.0)
    a, b, p = np.minimum(s * lo, s * hi), np.maximum(s * lo, s * hi), np.abs(pub)
    inside, larger, opposite = (a <= p) & (p <= b), a > p, b < 0
    size = np.select([~tested, inside, larger, opposite], ["", "inside", "ours larger", "opposite side"],
                     "ours smaller")
    sig = tested & (q < alpha)
    same = sig & (s * est > 0)
    direction = np.select([~tested, same, sig], ["", "same", "opposite"], "not significant")
    verdict = np.select(
        [~tested, same & inside, same & larger, same, sig, inside | larger],
        [NOT_MEASURABLE, REPRODUCED, LARGER, SMALLER, CONTRADICTED, UNDECIDED], CONTRADICTED)
    return verdict, direction, size


def conservative(verdicts) -> str:
    """The verdict a distinct test is counted under when its claims have ``verdicts`` (:data:`CONSERVATIVE`)."""
    have = set(verdicts)
    return next(v for v in CONSERVATIVE if v in have)
