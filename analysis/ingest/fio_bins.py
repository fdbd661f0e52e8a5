"""fio's latency histogram layout (``stat.h``: FIO_IO_U_PLAT_BITS = 6, FIO_IO_U_PLAT_VAL = 64).

fio 2.x has 19 groups (1216 bins, values in µs); fio 3.x has 29 groups (1856 bins, values in ns).
Bin ``idx`` < 128 holds exactly the value ``idx``; above that, group ``g = idx >> 6`` has buckets
of width ``2**(g-1)`` starting at ``2**(g+5)``, and fio reports a bucket by its midpoint
(``plat_idx_to_val``).  Percentiles follow ``calc_clat_percentiles``: the value of the first bin whose
cumulative count reaches ``q/100 * N``.
"""

from __future__ import annotations

import numpy as np

PLAT_BITS = 6
PLAT_VAL = 1 << PLAT_BITS
NR_FIO2 = 19 * PLAT_VAL  # 1216
NR_FIO3 = 29 * PLAT_VAL  # 1856


def plat_idx_to_val(idx: np.ndarray | int) -> np.ndarray:
    """Bin index → the value fio reports for it (µs in fio 2.x, ns in fio 3.x), vectorised."""
    idx = np.asarray(idx, dtype=np.int64)
    error_bits = np.maximum((idx >> PLAT_BITS) - 1, 0)
    base = np.left_shift(np.int64(1), error_bits + PLAT_BITS)
    k = idx % PLAT_VAL
    # base + (k + 0.5) * 2**error_bits, truncated to an integer as fio's unsigned long long return does
    val = base + np.floor((k + 0.5) * np.left_shift(np.int64(1), error_bits)).astype(np.int64)
    return np.where(idx < (PLAT_VAL << 1), idx, val)


def percentiles_from_bins(values: np.ndarray, counts: np.ndarray, qs: np.ndarray) -> np.ndarray:
    """fio's percentile rule over one histogram: ``values`` sorted ascending, ``qs`` in percent."""
    cum = np.cumsum(np.asarray(counts, dtype=np.float64))
    thr = np.asarray(qs, dtype=np.float64) / 100.0 * cum[-1]
    pos = np.searchsorted(cum, thr, side="left")
    return np.asarray(values, dtype=np.float64)[np.minimum(pos, len(values) - 1)]


def layout_for(nbins: int) -> tuple[int, int, str] | None:
    """Histogram-log bin count → (full bin count, coarseness, unit); None if no fio layout fits.

    ``log_hist_coarseness=c`` sums every ``2**c`` adjacent bins, so fio 3.x logs 1856 >> c bins and
    fio 2.x 1216 >> c; the two families never coincide.
    """
    for full, unit in ((NR_FIO3, "ns"), (NR_FIO2, "µs")):
        for c in range(0, 7):
            if full >> c == nbins:
                return full, c, unit
    return None


def coarse_bin_values(full: int, coarseness: int) -> np.ndarray:
    """Representative value of each coarse bin: fio's value for the middle fine bin it spans."""
    stride = 1 << coarseness
    first = np.arange(0, full, stride, dtype=np.int64)
    return plat_idx_to_val(first + stride // 2 if stride > 1 else first).astype(np.float64)


def interval_percentiles(counts: np.ndarray, values: np.ndarray, qs: np.ndarray) -> np.ndarray:
    """Per-row percentiles of a (intervals × bins) count matrix — :func:`percentiles_from_bins` on each
    row — with NaN for empty intervals.

    Integer counts take one ``searchsorted`` over all rows: the row cumulative sums, each row shifted
    up by ``row × (largest total + 1)``, form one ascending array, and "the first bin whose cumulative
    count reaches ``q/100 × N``" is the first element ≥ ``ceil(q/100 × N)`` + the row's shift (the
    counts are whole numbers).  Float counts, or totals too large for that, take the row-by-row rule."""
    counts = np.asarray(counts)
    nrow, nbin = counts.shape
    out = np.full((nrow, len(qs)), np.nan)
    if nrow == 0 or nbin == 0:
        return out
    qs = np.asarray(qs, dtype=np.float64)
    if counts.dtype.kind in "iu":
        cum = np.cumsum(counts, axis=1, dtype=np.int64)
        total = cum[:, -1]
        span = int(total.max()) + 1
        if total.min() >= 0 and span * nrow < 2**53:
            nz = total > 0
            shift = np.arange(nrow, dtype=np.int64) * span
            flat = (cum + shift[:, None]).ravel()
            rows = np.flatnonzero(nz)
            thr = np.ceil(qs[None, :] / 100.0 * total[rows, None].astype(np.float64)).astype(np.int64)
            pos = np.searchsorted(flat, thr + shift[rows, None], side="left") - (rows * nbin)[:, None]
            out[rows] = values[np.minimum(pos, len(values) - 1)]
            return out
    for r in np.flatnonzero(counts.sum(axis=1) > 0):
        out[r] = percentiles_from_bins(values, counts[r], qs)
    return out
