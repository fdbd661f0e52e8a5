"""The Bobtail IO-scheduler study's comparison, on the block campaigns: per-run throughput by workload
and scheduler, and per workload the tests the seed never gave (ANOVA, Kruskal–Wallis, Tukey pairs, repeats
needed).

Input: the tidy ``summary`` table of ``analysis.ingest`` over ``data/raw/block/`` — fio 3.33's own
``bw`` per run (``block-2026``) and rados bench's Bandwidth line (``rados-block-2026``).  Throughput in
MiB/s.  A *workload* is (campaign, target, op, bs, qd): ``target`` the device or file system under the
IO (``raw``, ``ext4``, ``xfs``, ``btrfs``; ``bluestore`` for rados bench), ``op`` ``write`` / ``read``
(rados bench's seq phase is a read).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from .cells import cell_values
from .consistency import ALPHA, posthoc, repeats_needed

WORKLOAD = ["campaign", "target", "op", "bs", "qd"]
#: the seed's schedulers (legacy, single-queue) → the blk-mq schedulers we run (see notebook 20)
LEGACY = {"bfq": "CFQ", "mq-deadline": "deadline", "none": "noop", "kyber": "(none)"}
SCHEDULERS = ["bfq", "mq-deadline", "none", "kyber"]
BS_ORDER = {"4k": 0, "128k": 1, "4m": 2}


def block_values(summary: pd.DataFrame, campaign: str) -> pd.DataFrame:
    """One row per run: ``campaign, target, op, bs, qd, io_scheduler, repeat, value`` (MiB/s).

    fio scenarios are named ``fio-<target>-<rw>-<bs>-qd<N>``, rados bench ones ``rados-<bs>-qd<N>`` (both
    phases in one run: ``ddir`` write / read).  fio's unused direction (zero) is dropped."""
    kind = "rados-bench" if campaign.startswith("rados") else "fio-json"
    v = cell_values(summary, campaign, kind, "bw")
    v = v[v["value"] > 0].copy()
    parts = v["scenario"].str.split("-")
    if kind == "fio-json":
        v["target"], v["op"] = parts.str[1], parts.str[2]
    else:
        v["target"], v["op"] = "bluestore", v["ddir"]
    v["bs"] = parts.str[-2]
    v["qd"] = parts.str[-1].str.removeprefix("qd").astype(int)
    v["value"] = v["value"] / 2**20
    return v[WORKLOAD + ["io_scheduler", "repeat", "value"]].sort_values(WORKLOAD + ["io_scheduler", "repeat"],
                                                                       key=_order).reset_index(drop=True)


def _order(col: pd.Series) -> pd.Series:
    return col.map(BS_ORDER) if col.name == "bs" else col


def workload_verdicts(values: pd.DataFrame, alpha: float = ALPHA, power: float = 0.8,
                      by: Sequence[str] = WORKLOAD, detail: bool = True) -> pd.DataFrame:
    """Per workload, over the schedulers' repeats: one-way ANOVA (``anova_p``, ``scipy.stats.f_oneway``),
    Kruskal–Wallis (``kw_p``), where the ANOVA rejects at ``alpha`` the Tukey HSD pairs that differ
    (``tukey_pairs``, e.g. ``none<mq-deadline``: the first has the lower mean; empty otherwise), ``best``/``worst`` scheduler by mean and
    ``spread`` = best mean / worst mean − 1, ``cv`` = the schedulers' root-mean-square coefficient of
    variation (sample std / mean), and ``repeats_needed``: repeats per scheduler for a two-sided t-test at
    ``alpha`` and ``power`` to separate best from worst if their true difference were the observed
    ``spread`` at this noise (:func:`analysis.stats.consistency.repeats_needed`).  ``repeats`` is the
    fewest repeats any scheduler has.  ``detail=False``: the ANOVA, best/worst, spread and noise only
    (``kw_p``, ``repeats_needed`` NaN, ``tukey_pairs`` empty): 60 workloads in tens of ms instead of 1.6 s,
    for the report's first section (:func:`analysis.findings.iosched_sentences`)."""
    rows = []
    for key, d in values.groupby(list(by), sort=False, observed=True):
        groups = {k: g["value"].to_numpy(float) for k, g in d.groupby("io_scheduler", sort=True, observed=True)}
        means = pd.Series({k: x.mean() for k, x in groups.items()})
        cvs = pd.Series({k: x.std(ddof=1) / x.mean() for k, x in groups.items() if len(x) > 1})
        ok = len(groups) >= 2 and min(len(x) for x in groups.values()) >= 2
        an = stats.f_oneway(*groups.values()) if ok else None
        kw = stats.kruskal(*groups.values()) if ok and detail else None
        # post-hoc only where the omnibus test rejects (Tukey's p-values integrate the studentized range:
        # ~0.15 s per workload)
        rejects = detail and an is not None and an.pvalue < alpha
        ph = posthoc(d.assign(test="w", round=d["io_scheduler"]), group="round", alpha=alpha) if rejects else pd.DataFrame()
        pairs = []
        for r in ph[ph["reject"].astype(bool)].itertuples(index=False) if len(ph) else []:
            lo, hi = (r.group1, r.group2) if r.stat > 0 else (r.group2, r.group1)
            pairs.append(f"{lo}<{hi}")
        spread = means.max() / means.min() - 1
        cv = float(np.sqrt((cvs ** 2).mean())) if len(cvs) else np.nan
        need = repeats_needed(cv, [spread], alpha, power)["n_per_arm"].iloc[0] if detail and np.isfinite(cv) \
            else np.nan
        rows.append((*key, min(len(x) for x in groups.values()), an.pvalue if an else np.nan,
                     kw.pvalue if kw else np.nan, " ".join(sorted(pairs)), means.idxmax(), means.idxmin(),
                     spread, cv, need))
    return pd.DataFrame(rows, columns=list(by) + ["repeats", "anova_p", "kw_p", "tukey_pairs", "best", "worst",
                                                  "spread", "cv", "repeats_needed"])


def campaign_summary(verdicts: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """Per campaign over :func:`workload_verdicts`: ``workloads``, how many reject at ``alpha`` by ANOVA
    (``anova_sig``) and Kruskal–Wallis (``kw_sig``), ``with_tukey_pair``, ``expected_by_chance`` (=
    alpha × workloads), and the median spread, noise and repeats needed (max too)."""
    out = verdicts.groupby("campaign").agg(workloads=("anova_p", "size"),
                                           anova_sig=("anova_p", lambda p: int((p < alpha).sum())),
                                           kw_sig=("kw_p", lambda p: int((p < alpha).sum())),
                                           with_tukey_pair=("tukey_pairs", lambda t: int((t != "").sum())),
                                           spread_median=("spread", "median"), cv_median=("cv", "median"),
                                           repeats_needed_median=("repeats_needed", "median"),
                                           repeats_needed_max=("repeats_needed", "max"))
    out.insert(4, "expected_by_chance", alpha * out["workloads"])
    return out


def conclusion(colours: pd.DataFrame, verdicts: pd.DataFrame, alpha: float = ALPHA, repeats: int = 6) -> str:
    """The closing section of the IO-scheduler comparison (Markdown), computed from the seed-rule colours
    (``analysis.stats.compare.seed_colour_table``, one row per workload × scheduler with ``colour``) and
    :func:`workload_verdicts`: how many workloads the seed's ±1σ rule colours; how many the ANOVA and
    Kruskal–Wallis reject against the count expected by chance; which scheduler is best and worst where
    the ANOVA rejects, named with its legacy counterpart (:data:`LEGACY`: the seed's CFQ/deadline/noop);
    and how many repeats per scheduler the observed spreads would need (``repeats``: what was run)."""
    keys = ["campaign", "target", "op", "bs", "qd"]
    coloured = colours.groupby(level=keys, observed=True)["colour"].apply(lambda c: (c != "").any())
    lines = ["## Conclusions", "",
             f"- **The seed's rule colours {int(coloured.sum())} of the {len(coloured)} workloads**"
             + (": " + ", ".join(f"{k}: {v}" for k, v in coloured[coloured].reset_index()
                                  .assign(w=lambda d: d["bs"].astype(str) + " QD " + d["qd"].astype(str))
                                  .groupby("w").size().sort_values(ascending=False).items()) if coloured.any() else "")
             + "."]
    per = []
    for camp, v in verdicts.groupby("campaign", sort=True, observed=True):
        per.append(f"`{camp}` ANOVA {int((v['anova_p'] < alpha).sum())} of {len(v)} (by chance "
                   f"{alpha * len(v):.1f}), Kruskal–Wallis {int((v['kw_p'] < alpha).sum())}")
    lines.append(f"- **Tests at α = {alpha}** — " + "; ".join(per) + ".")
    rej = verdicts[verdicts["anova_p"] < alpha]
    if len(rej):
        def named(s: pd.Series) -> str:
            return ", ".join(f"{k} ({LEGACY[k] if LEGACY.get(k, '(none)') != '(none)' else 'no counterpart'}) {n}"
                             for k, n in s.value_counts().items())
        top = rej.loc[rej["spread"].idxmax()]
        lines.append(f"- **Where the ANOVA rejects** ({len(rej)} workloads), best: {named(rej['best'])}; worst: "
                     f"{named(rej['worst'])} (blk-mq scheduler, the seed's counterpart in brackets). The widest "
                     f"spread: {top['campaign']} {top['target']} {top['op']} {top['bs']} QD {top['qd']}, "
                     f"{top['best']} over {top['worst']} by {100 * top['spread']:.0f} %.")
    need = verdicts["repeats_needed"].dropna()
    if len(need):
        lines.append(f"- **Repeats.** {repeats} per scheduler were run; the observed best-to-worst spreads would "
                     f"need a median of {np.median(need):.0f} per scheduler to confirm at power 0.8 "
                     f"({int((need <= repeats).sum())} of {len(need)} workloads need ≤ {repeats}, "
                     f"{int((need <= 20).sum())} need ≤ 20).")
    return "\n".join(lines)
