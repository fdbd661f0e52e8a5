"""``analysis.ingest.fio_bins.interval_percentiles``: per-interval percentiles of a histogram log, held
to fio's rule applied row by row (:func:`percentiles_from_bins`, the plain reference)."""

import numpy as np
import pytest

from analysis.ingest.fio_bins import (NR_FIO3, coarse_bin_values, interval_percentiles,
                                      percentiles_from_bins)

QS = np.array([1.0, 50.0, 90.0, 95.0, 99.0, 99.9, 100.0])


def _reference(counts: np.ndarray, values: np.ndarray) -> np.ndarray:
    out = np.full((len(counts), len(QS)), np.nan)
    for r, row in enumerate(counts):
        if row.sum() > 0:
            out[r] = percentiles_from_bins(values, row, QS)
    return out


@pytest.mark.parametrize("coarseness", [0, 2])
def test_interval_percentiles_equal_fios_rule_row_by_row(coarseness):
    rng = np.random.default_rng(7)
    values = coarse_bin_values(NR_FIO3, coarseness)
    counts = np.zeros((60, len(values)), dtype=np.int64)
    for r in range(60):  # sparse rows, as real intervals are: a few hundred bins hold the IOs
        bins = rng.integers(0, len(values), size=rng.integers(1, 40))
        counts[r, bins] = rng.integers(1, 5000, size=len(bins))
    counts[[3, 17]] = 0                     # empty intervals → NaN
    counts[21] = 0
    counts[21, -1] = 9                      # everything in the last bin
    counts[22] = 0
    counts[22, 0] = 1                       # one IO in the first bin
    counts[23, :] = 0
    counts[23, [5, 6]] = [1, 1]             # thresholds that fall exactly on a cumulative count
    got = interval_percentiles(counts, values, QS)
    want = _reference(counts, values)
    np.testing.assert_array_equal(got, want)
    assert np.isnan(got[3]).all() and got[22, 0] == values[0] and got[21, -1] == values[-1]
    assert got[23, 1] == values[5] and got[23, -1] == values[6]  # p50 of {5, 6} is 5's value
    # Fortran-ordered counts (what the scanner returns) and float counts (the row-by-row path) agree
    np.testing.assert_array_equal(interval_percentiles(np.asfortranarray(counts), values, QS), want)
    np.testing.assert_array_equal(interval_percentiles(counts.astype(np.float64), values, QS), want)


def test_interval_percentiles_of_no_rows_and_zero_rows():
    values = coarse_bin_values(NR_FIO3, 0)
    assert interval_percentiles(np.zeros((0, len(values)), np.int64), values, QS).shape == (0, len(QS))
    assert np.isnan(interval_percentiles(np.zeros((2, len(values)), np.int64), values, QS)).all()


def _as_scanned(counts: np.ndarray) -> np.ndarray:
    """The layout read_int_table returns: a row slice of an over-allocated Fortran-ordered table, 3 leading
    columns (time, ddir, bs) before the bins."""
    n, b = counts.shape
    tab = np.zeros((n + 5, b + 3), dtype=np.int64, order="F")
    tab[:n, 3:] = counts
    return tab[:n, 3:]


@pytest.mark.parametrize("coarseness", [0, 3])
def test_the_numpy_rule_on_a_table_as_scanned(coarseness):
    """The rule the reader uses (the C pass ``hist_percentiles`` was retired in issue 49: numpy was within
    0.3 s over all 348 shipped histogram logs), on a column-major table as the scanner returns it: empty
    intervals NaN, two single counts in bins 2 and 3 give bin 2 up to the median and bin 3 above."""
    rng = np.random.default_rng(11)
    values = coarse_bin_values(NR_FIO3, coarseness)
    counts = np.zeros((40, len(values)), dtype=np.int64)
    for r in range(40):
        bins = rng.integers(0, len(values), size=rng.integers(1, 30))
        counts[r, bins] = rng.integers(1, 3000, size=len(bins))
    counts[[0, 9]] = 0
    counts[12] = 0
    counts[12, [2, 3]] = [1, 1]
    qs = np.array([99.9, 50.0, 100.0, 1.0, 90.0])  # any order
    got = interval_percentiles(_as_scanned(counts), values, qs)
    np.testing.assert_array_equal(got, interval_percentiles(counts, values, qs))
    assert np.isnan(got[[0, 9]]).all()
    np.testing.assert_array_equal(got[12], values[[3, 2, 3, 2, 3]])
    for r in (5, 20):  # the first bin whose cumulative count reaches ceil(q/100 x N), row by row
        c = np.cumsum(counts[r])
        want = [values[np.searchsorted(c, np.ceil(q / 100 * c[-1]))] for q in qs]
        np.testing.assert_array_equal(got[r], want)
