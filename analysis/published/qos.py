"""Every number the two mClock-vs-WPQ studies state, one tidy row each, with the sentence it came from.

Seeds (read in place from ``../shared/seeds``, never copied): ``mclock-vs-wpq-snaptrim-recovery-part1.zh.txt``
(part 1: snaptrim, snaptrim + recovery, a 975-OSD scaled cluster; Figures 1–23) and
``mclock-vs-wpq-scrub-part2.txt`` (part 2: scrub, scrub + recovery, osd_max_scrubs 10, osd_scrub_cost 20 MiB,
a custom profile; its charts are not numbered).  Files: ``data/published/qos-part1.csv`` and
``data/published/qos-part2.csv``, columns :data:`COLUMNS`:

``seed``          seed file name
``seed_line``     1-based line of the seed holding ``sentence``
``section``       the nearest heading above it, as printed (Chinese for part 1)
``figure``        ``Figure 5`` / ``Figure 8a`` (part 1's numbering), ``Chart N`` for part 2's unnumbered
                  charts (numbered in order of appearance, see ``analysis.figures.qos_studies.FIGURES``),
                  ``Table: <what>`` for a printed table, or empty when the number is in prose only
``test``          :data:`TESTS`, or empty for environment numbers that belong to no test
``scheduler``     ``wpq`` / ``mclock_scheduler`` / empty
``profile``       :data:`PROFILES` or empty (WPQ rows: empty)
``service``       allocation tables only: ``client`` / ``background_recovery`` / ``background_best_effort``
``metric``        for ``kind`` measured/derived: one of :data:`METRICS`; for settings and environment: the
                  Ceph option name where it is one (``osd_max_scrubs``), else a snake_case description
``printed``       the number exactly as printed (``17520.63``, ``~64000``, ``25%``, ``MAX``, ``100K``)
``value``         its number in ``unit`` (``100K`` objects → 100000; ``MAX`` → empty)
``unit``          ``IOPS``, ``MiB/s``, ``ms``, ``s``, ``objects/s``, ``objects``, ``%``, ``MiB``, ``KiB``,
                  ``GiB``, ``TiB``, ``GHz``, ``count``, ``1`` (unitless)
``kind``          ``measured`` (a result the study reports), ``derived`` (a statement relative to another
                  number: "27% lower than WPQ"), ``setting`` (a configuration value: allocations, options,
                  test-step sizes and durations), ``environment`` (hardware/software of the test bed)
``approx``        1 when the text hedges the number (~, about, around, roughly, nearly, over, 约, 近, 接近,
                  超过, 大约, 几乎, 左右), else 0
``relation``      derived rows: ``change_pct`` (value = (this / reference − 1) × 100, signed: "27% lower"
                  → −27) or ``share_pct`` (value = this / reference × 100: "45% of the baseline")
``ref_test``, ``ref_scheduler``, ``ref_profile``, ``ref_metric``   derived rows: the reference quantity
``sentence``      the sentence (or printed table row) verbatim from the seed — :func:`check_provenance`
                  asserts it is in the seed (whitespace-normalized) and that ``printed`` is in it
``note``          how the row was read when that is not obvious (e.g. "faster" taken as shorter duration)
``origin``        always ``published``

A derived row's own quantity is its ``test, scheduler, profile, metric``: "balanced: 18998.55 IOPS (8.4%
higher than WPQ)" is a measured row (client_iops 18998.55) plus a derived row (client_iops, change_pct 8.4,
ref wpq client_iops of the same test).  :func:`recompute_derived` recomputes every derived row whose two
absolute values are both stated and lists contradictions, rounding aside.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from .seeds import PUBLISHED, SEEDS, ProvenanceError, read_published, seed_rows  # noqa: F401 (ProvenanceError: raised by load)
PART1_SEED = "mclock-vs-wpq-snaptrim-recovery-part1.zh.txt"
PART2_SEED = "mclock-vs-wpq-scrub-part2.txt"
FILES = {PART1_SEED: PUBLISHED / "qos-part1.csv", PART2_SEED: PUBLISHED / "qos-part2.csv"}

COLUMNS = ["seed", "seed_line", "section", "figure", "test", "scheduler", "profile", "service", "metric",
           "printed", "value", "unit", "kind", "approx", "relation", "ref_test", "ref_scheduler",
           "ref_profile", "ref_metric", "sentence", "note", "origin"]
KINDS = ("measured", "derived", "setting", "environment")
TESTS = ("baseline",            # the fio-only baseline before the tests
         "snaptrim",            # part 1 test A: client + snaptrim
         "snaptrim_recovery",   # part 1 test B: client + snaptrim + recovery
         "scaled_recovery",     # part 1: the 975-OSD Gibba cluster, client + recovery
         "scrub",               # part 2: client + deep scrub (osd_max_scrubs 5, requested priority 5)
         "scrub_maxscrubs10",   # part 2: osd_max_scrubs 10
         "scrub_cost20m",       # part 2: osd_scrub_cost 20 MiB for mClock, WPQ at priority 120
         "scrub_custom",        # part 2: the custom profile experiment
         "scrub_recovery")      # part 2: client + scrub + recovery
PROFILES = ("high_client_ops", "balanced", "high_recovery_ops", "custom")
SERVICES = ("client", "background_recovery", "background_best_effort")
METRICS = {
    "client_iops": "average client IOPS over the whole fio run",
    "client_bw": "average client bandwidth over the whole fio run (MiB/s)",
    "clat_mean": "average client completion latency over the whole run (ms)",
    "clat_during": "average client completion latency while the test's background operation is active (ms)",
    "clat_p95": "95th percentile clat (ms)", "clat_p99": "99th percentile clat (ms)",
    "clat_p99.5": "99.5th percentile clat (ms)",
    "snaptrim_rate": "objects trimmed per second", "snaptrim_duration": "snaptrim duration (s)",
    "snaptrim_objects": "objects (clones) trimmed",
    "recovery_rate": "misplaced objects recovered per second", "recovery_duration": "recovery time (s)",
    "recovery_objects": "objects recovered",
    "scrub_rate": "scrub throughput (MiB/s)", "scrub_duration": "deep-scrub duration (s)",
    "reservation": "mClock reservation (% of OSD capacity)", "weight": "mClock weight (1)",
    "limit": "mClock limit (% of OSD capacity)",
}


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def load(path: str | Path) -> pd.DataFrame:
    """One published CSV with typed columns (``value`` float, ``approx`` int, the rest text)."""
    return read_published(path, COLUMNS, approx_default="0")


def load_all(published: str | Path = PUBLISHED) -> pd.DataFrame:
    """Both studies' rows (``qos-part1.csv`` then ``qos-part2.csv``)."""
    return pd.concat([load(Path(published) / p.name) for p in FILES.values()], ignore_index=True)


def check_provenance(df: pd.DataFrame, seeds: str | Path = SEEDS, csv: str = "published CSV") -> list[str]:
    """Problems with rows of ``df`` (empty list: every row is consistent with its seed and the schema).

    Checks: the sentence is in the seed (whitespace-normalized) on or near ``seed_line`` (±2 lines);
    ``printed`` is in the sentence (for ``K`` / ``%`` / ``~`` forms, its digits are); vocabulary of
    ``kind``, ``test``, ``profile``, ``service``, ``metric`` (measured/derived), ``relation``; derived
    rows name a reference metric."""
    problems: list[str] = []
    for where, r, lines in seed_rows(df, seeds, csv, problems):
        lo, hi = max(0, r.seed_line - 3), min(len(lines), r.seed_line + 2)
        near = _norm(" ".join(lines[lo:hi]))
        if not r.sentence or _norm(r.sentence) not in near:
            problems.append(f"{where}: sentence not found in {r.seed} near line {r.seed_line}")
        digits = re.sub(r"^[~≈]|[%KkMx×]+$", "", r.printed.strip())
        if r.printed != "MAX" and digits not in r.sentence and r.printed not in r.sentence:
            problems.append(f"{where}: printed {r.printed!r} is not in its sentence")
        for col, vocab in (("kind", KINDS), ("test", TESTS + ("",)), ("profile", PROFILES + ("",)),
                           ("service", SERVICES + ("",)), ("scheduler", ("wpq", "mclock_scheduler", ""))):
            if getattr(r, col) not in vocab:
                problems.append(f"{where}: {col} {getattr(r, col)!r} not in {vocab}")
        if r.kind in ("measured", "derived") and r.metric not in METRICS:
            problems.append(f"{where}: metric {r.metric!r} is not one of METRICS")
        if r.kind == "derived" and (r.relation not in ("change_pct", "share_pct") or not r.ref_metric):
            problems.append(f"{where}: derived rows need relation change_pct/share_pct and ref_metric")
        if r.origin != "published":
            problems.append(f"{where}: origin {r.origin!r}, expected 'published'")
    return problems


def _decimals(printed: str) -> int:
    m = re.search(r"\.(\d+)", printed)
    return len(m.group(1)) if m else 0


def _significant(printed: str) -> int:
    return len(re.sub(r"[^0-9]", "", printed).lstrip("0"))


def stated_values(df: pd.DataFrame) -> pd.DataFrame:
    """One absolute value per quantity (``test, scheduler, profile, metric``) of the ``measured`` and
    ``setting`` rows: where the text states a quantity more than once ("about 23K", "23323.71 IOPS"),
    the unhedged statement with the most significant digits wins, whatever the row order."""
    a = df[df["kind"].isin(["measured", "setting"]) & df["value"].notna()].copy()
    a["_sig"] = a["printed"].map(_significant)
    a = a.sort_values(["approx", "_sig"], ascending=[True, False], kind="stable")
    return a.drop_duplicates(["test", "scheduler", "profile", "metric"]).drop(columns="_sig")


def recompute_derived(df: pd.DataFrame) -> pd.DataFrame:
    """Every derived row recomputed from the stated absolute values, where both are stated.

    For each derived row: its own quantity (``test, scheduler, profile, metric``) and the reference
    (``ref_*``) are looked up with :func:`stated_values` (the most precise statement of each).  ``recomputed`` = (own / ref − 1) × 100 (``change_pct``) or own / ref × 100
    (``share_pct``).  ``status``: ``ok`` when |recomputed − printed| is within half a unit of the printed
    last digit plus the rounding of the two inputs (propagated), ``approx`` when outside that but the text
    hedges (``approx`` = 1) and within 2 percentage points, ``contradiction`` otherwise, ``not stated``
    when an input is missing.  Columns: the derived row's keys, ``printed``, ``value``, ``own``, ``ref``,
    ``recomputed``, ``tolerance``, ``status``, ``sentence``.
    """
    keys = ["test", "scheduler", "profile", "metric"]
    first = stated_values(df).set_index(keys)
    rows = []
    for r in df[df["kind"] == "derived"].itertuples(index=False):
        own_key = (r.test, r.scheduler, r.profile, r.metric)
        ref_key = (r.ref_test, r.ref_scheduler, r.ref_profile, r.ref_metric)
        own = first.loc[own_key] if own_key in first.index else None
        ref = first.loc[ref_key] if ref_key in first.index else None
        out = {"seed": r.seed, "seed_line": r.seed_line, "test": r.test, "scheduler": r.scheduler,
               "profile": r.profile, "metric": r.metric, "relation": r.relation,
               "ref": "/".join(x for x in ref_key if x), "printed": r.printed, "value": r.value,
               "own_value": np.nan, "ref_value": np.nan, "recomputed": np.nan, "tolerance": np.nan,
               "status": "not stated", "sentence": r.sentence}
        if own is not None and ref is not None and ref["value"] != 0:
            a, b = float(own["value"]), float(ref["value"])
            rec = (a / b - 1) * 100 if r.relation == "change_pct" else a / b * 100
            # half a printed unit of each input, propagated to the ratio (percent)
            da, db = 0.5 * 10 ** -_decimals(own["printed"]), 0.5 * 10 ** -_decimals(ref["printed"])
            tol = 0.5 * 10 ** -_decimals(r.printed) + 100 * abs(a / b) * (da / abs(a) + db / abs(b))
            diff = abs(rec - r.value)
            status = "ok" if diff <= tol + 1e-9 else ("approx" if r.approx and diff <= 2 + tol else "contradiction")
            out.update(own_value=a, ref_value=b, recomputed=rec, tolerance=tol, status=status)
        rows.append(out)
    return pd.DataFrame(rows)
