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
    """Per-row percentiles of a (intervals × bins) count matrix; NaN for empty intervals."""
    counts = np.asarray(counts, dtype=np.float64)
    cum = np.cumsum(counts, axis=1)
    total = cum[:, -1]
    out = np.full((counts.shape[0], len(qs)), np.nan)
    nz = total > 0
    if not nz.any():
        return out
    c = cum[nz]
    for j, q in enumerate(np.asarray(qs, dtype=np.float64)):
        thr = q / 100.0 * c[:, -1]
        pos = (c < thr[:, None]).sum(axis=1)  # first index with cum >= thr
        out[nz, j] = values[np.minimum(pos, len(values) - 1)]
    return out
