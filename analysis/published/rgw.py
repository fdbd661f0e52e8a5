"""Every number the CBT RGW getput diary states, one tidy row each, with the sentence it came from.

Seed (read in place, never copied): ``../shared/seeds/cbt-rgw-getput-diary.txt`` (Mark Nelson's ceph-devel post
introducing CBT's getput benchmark: 4 MB PUTs through one or four radosgw against 4 OSD nodes of HDD filestore,
HDD + NVMe journals, NVMe).  File: ``data/published/rgw-getput-diary.csv``, columns :data:`COLUMNS`, as the QoS
studies' CSVs (:mod:`analysis.published_qos`) where they apply:

``seed, seed_line``  the seed file and the 1-based line holding ``sentence`` (a paragraph is one line)
``section``          the heading above it, as printed ("" for the introduction)
``setup``            :data:`SETUPS`: the cluster configuration the number belongs to ("" for the test bed)
``tool``             ``getput`` (PUTs through radosgw), ``rados_bench``, or ""
``arm``              what varies within a setup: bucket layout (``1bucket_0shards``, ``1bucket_8shards``,
                     ``64buckets_or_shards``, ``128buckets``, ``16buckets``, ``512buckets``) or the tcmalloc thread
                     cache (``threadcache_32MB``, ``threadcache_128MB``); "" when the text does not say
``clients``          client count where the text states it (``1`` for "a single client", ``4``), ``multi`` for
                     "multiple clients", else ""
``run``              ``1``/``2``/``3`` for the three listed runs, else ""
``metric``           :data:`METRICS` for measured/derived rows; a snake_case name for settings and environment
``printed``          the number as printed (``550-600MB/s``, ``~5%``, ``1.3M``, ``Three``, ``double``)
``value``            its number in ``unit``; a range gives two rows, ``bound`` ``low`` and ``high``
``unit``             ``MB/s`` as the diary prints it (rados bench's and getput's MB are MiB: obj_bencher and
                     getput divide by 1024*1024), ``GB/s``, ``%`` (CPU: 100 = one core), ``count``, ``MB``,
                     ``KB``, ``GB``, ``rpm``, ``Gb/s``, ``1``
``kind``             ``measured``, ``derived`` (relative to another number), ``setting``, ``environment``
``approx``           1 when hedged (~, about, around, roughly, approximately, over, appeared …), else 0
``bound``            ``low``/``high`` for the ends of a printed range, else ""
``relation``         derived rows: ``change_pct`` ((own / ref − 1) × 100), ``share_pct`` (own / ref × 100),
                     ``ratio`` (own / ref), ``per`` (ref / divisor: "56MB/s per drive")
``ref_setup, ref_tool, ref_arm, ref_clients, ref_metric``   derived rows: the reference quantity
``divisor``          ``per`` rows: the setting (same setup as the reference) divided by
``sentence``         the sentence verbatim from the seed line — :func:`check_provenance` checks it is there
``note``             how it was read, and contradictions or unverifiable statements in the text
``origin``           always ``published``

Numbers inside names are not rows (Xeon E5-2650v3, P3700, Constellation ES.2, the attachment's file name);
"single"/"no" that define an arm (a single bucket with no shards) are carried by ``arm``/``clients``, while
quantity words ("Three", "dual", "double", "an order of magnitude") are rows.  :func:`recompute_derived`
recomputes each derived row from the stated values (ranges as intervals) and says whether the text holds.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from .seeds import PUBLISHED, SEEDS, ProvenanceError, read_published, seed_rows  # noqa: F401 (ProvenanceError: raised by load)
SEED = "cbt-rgw-getput-diary.txt"
CSV = PUBLISHED / "rgw-getput-diary.csv"

COLUMNS = ["seed", "seed_line", "section", "setup", "tool", "arm", "clients", "run", "metric", "printed", "value",
           "unit", "kind", "approx", "bound", "relation", "ref_setup", "ref_tool", "ref_arm", "ref_clients",
           "ref_metric", "divisor", "sentence", "note", "origin"]
KINDS = ("measured", "derived", "setting", "environment")
SETUPS = ("",                  # the test bed
          "hdd",               # 24 HDD filestore OSDs, no SSD journals (data pool with 2048 PGs)
          "hdd_pg128",         # the same with a 128-PG buckets.data pool (index 2048 PGs), then PG splitting
          "hdd_nvme_journal",  # 24 OSDs, HDD data, NVMe journals
          "nvme",              # 16 NVMe OSDs, one radosgw
          "nvme_4gw")          # 16 NVMe OSDs, four radosgw, four clients
TOOLS = ("getput", "rados_bench", "")
METRICS = {
    "write_bw": "4 MB object write throughput (MB/s as printed; GB/s once)",
    "write_perf_4k": "4K object write performance (relative only)",
    "rgw_cpu": "radosgw CPU (%: 100 = one core)", "rgw_cpu_spike": "radosgw CPU spikes (%)",
    "rgw_cpu_peak": "radosgw CPU where it tops out (%)",
    "per_drive_bw": "write throughput per OSD drive (MB/s)", "per_gateway_bw": "write throughput per radosgw (MB/s)",
    "objects_at_split": "objects written when 4K write performance dropped (PG splitting)",
    "http_error": "HTTP status of the errors getput reported",
}
RELATIONS = ("change_pct", "share_pct", "ratio", "per")
#: a hedged derived statement ("roughly double") holds when within this relative distance of the recomputed value
APPROX_REL = 0.15


def load(path: str | Path = CSV) -> pd.DataFrame:
    """The published CSV with typed columns (``value`` float, ``seed_line`` and ``approx`` int, the rest text)."""
    return read_published(path, COLUMNS)


def sentences(line: str) -> list[str]:
    """A seed line (one paragraph) split into sentences at '.', '!' or '?' followed by a space and a capital."""
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z(])", line.strip()) if s]


def check_provenance(df: pd.DataFrame, seeds: str | Path = SEEDS, csv: str = "published CSV") -> list[str]:
    """Problems with rows of ``df`` ([] when every row is consistent with the seed and the schema): the sentence
    is one of the sentences of line ``seed_line``, ``printed`` is in it, the vocabularies hold, derived rows
    name their reference and ``per`` rows their divisor."""
    problems: list[str] = []
    for where, r, lines in seed_rows(df, seeds, csv, problems):
        if not 1 <= r.seed_line <= len(lines) or r.sentence not in sentences(lines[r.seed_line - 1]):
            problems.append(f"{where}: sentence is not a sentence of {r.seed} line {r.seed_line}")
        if r.printed not in r.sentence:
            problems.append(f"{where}: printed {r.printed!r} is not in its sentence")
        for col, vocab in (("kind", KINDS), ("setup", SETUPS), ("tool", TOOLS), ("bound", ("", "low", "high")),
                           ("relation", RELATIONS + ("",)), ("origin", ("published",))):
            if getattr(r, col) not in vocab:
                problems.append(f"{where}: {col} {getattr(r, col)!r} not in {vocab}")
        if r.kind in ("measured", "derived") and r.metric not in METRICS:
            problems.append(f"{where}: metric {r.metric!r} is not one of METRICS")
        if (r.kind == "derived") != bool(r.relation) or (r.kind == "derived" and not r.ref_metric):
            problems.append(f"{where}: derived rows (and only they) need relation and ref_metric")
        if (r.relation == "per") != bool(r.divisor):
            problems.append(f"{where}: a 'per' row (and only it) names its divisor")
    return problems


KEY = ["setup", "tool", "arm", "clients", "run", "metric"]


def stated_values(df: pd.DataFrame) -> pd.DataFrame:
    """One interval ``lo, hi`` per quantity (:data:`KEY`) of the measured and setting rows (a point: lo = hi),
    with the printed text of each end; where the text states a quantity twice, the unhedged statement wins."""
    a = df[df["kind"].isin(["measured", "setting", "environment"]) & df["value"].notna()].copy()
    a = a.sort_values("approx", kind="stable")
    line = a.groupby(KEY, sort=False)["seed_line"].transform("first")  # the least hedged statement's line
    g = a[a["seed_line"] == line].groupby(KEY, sort=False)
    out = pd.DataFrame({"lo": g["value"].min(), "hi": g["value"].max(),
                        "printed": g["printed"].first(), "approx": g["approx"].max()})
    return out


def _half_unit(printed: str) -> float:
    m = re.search(r"\d+(?:\.(\d+))?", printed)
    return 0.5 * 10.0 ** -(len(m.group(1)) if m and m.group(1) else 0) if m else 0.0


def recompute_derived(df: pd.DataFrame) -> pd.DataFrame:
    """Every derived row recomputed from the stated values: ``rec_lo``/``rec_hi`` (an interval when an input is a
    range), ``tolerance`` (half a unit of the printed value, plus the inputs' rounding propagated for ``per``),
    ``status``: ``ok`` (printed within the interval ± tolerance), ``approx`` (hedged and within
    :data:`APPROX_REL` of the nearest end), ``contradiction`` (otherwise), ``not stated`` (an input missing)."""
    vals = stated_values(df)
    rows = []
    for r in df[df["kind"] == "derived"].itertuples(index=False):
        ref_key = (r.ref_setup, r.ref_tool, r.ref_arm, r.ref_clients, "", r.ref_metric)
        own_key = tuple(getattr(r, k) for k in KEY)
        out = {k: getattr(r, k) for k in ("seed_line", "setup", "tool", "arm", "clients", "metric", "relation",
                                          "printed", "value", "sentence")}
        out.update(ref="/".join(x for x in ref_key if x), rec_lo=np.nan, rec_hi=np.nan, tolerance=np.nan,
                   status="not stated")
        ref = vals.loc[ref_key] if ref_key in vals.index else None
        if r.relation == "per":
            div_key = (r.ref_setup, "", "", "", "", r.divisor)
            div = vals.loc[div_key] if div_key in vals.index else None
            if ref is not None and div is not None:
                lo, hi = ref["lo"] / div["hi"], ref["hi"] / div["lo"]
                tol = _half_unit(r.printed) + _half_unit(ref["printed"]) / div["lo"]
                out.update(rec_lo=lo, rec_hi=hi, tolerance=tol)
        else:
            own = vals.loc[own_key] if own_key in vals.index else None
            if ref is not None and own is not None and ref["lo"] > 0:
                lo, hi = own["lo"] / ref["hi"], own["hi"] / ref["lo"]
                scale = {"change_pct": (100, -100), "share_pct": (100, 0), "ratio": (1, 0)}[r.relation]
                lo, hi = lo * scale[0] + scale[1], hi * scale[0] + scale[1]
                out.update(rec_lo=lo, rec_hi=hi, tolerance=_half_unit(r.printed))
        if not np.isnan(out["rec_lo"]):
            lo, hi, tol, v = out["rec_lo"], out["rec_hi"], out["tolerance"], r.value
            dist = max(lo - v, v - hi, 0.0)
            near = lo if v < lo else hi
            out["status"] = "ok" if dist <= tol + 1e-9 else (
                "approx" if r.approx and dist <= APPROX_REL * abs(near) else "contradiction")
        rows.append(out)
    return pd.DataFrame(rows)
