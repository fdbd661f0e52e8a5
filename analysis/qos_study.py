"""The two Quincy QoS studies as one notebook's parameter: what differs between them, and the conclusion
computed from the data.

``notebooks/30-qos-study.ipynb`` runs once per study (``study = "part1"`` → report section 30, ``"part2"`` →
31).  :data:`STUDIES` holds what is study-specific and does not come from our data: the seed, the title
and introduction, the set-up table (theirs beside ours), the scenarios and arms shown, and a note on the
text's own inconsistencies that the transcription found.  :func:`conclusions` writes the closing section
from the tables the notebook computed — the seed's statements recomputed (``published.qos.
recompute_derived``), the claims' verdicts (``stats.claims.claims_table``, the report's first table) and
our absolute values against theirs (``stats.reconcile``) — so it cannot go stale.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .published.qos import PART1_SEED, PART2_SEED
from .stats.claims import conclusion_lines


@dataclass(frozen=True)
class Study:
    key: str                        # part1 | part2 (claims.csv's ``study``)
    number: str                     # the report section it becomes
    seed: str
    title: str
    intro: str                      # Markdown
    setup: str                      # Markdown table: the study's set-up beside ours
    text_note: str                  # what the transcription found about the text itself (Markdown)
    scenarios: tuple[str, ...]      # our scenarios shown by default
    arms: tuple[str, ...] | None    # our arms shown by default (None: every arm of those scenarios)


_OURS = "ours (`qos-2026`, `capture/campaigns/qos-2026.yaml`)"
STUDIES: dict[str, Study] = {
    "part1": Study(
        "part1", "30", PART1_SEED, "mClock vs WPQ with snaptrim and recovery (study part 1)",
        "Sridhar Seshasayee's \"QoS in Quincy: Comparison of mClock and WPQ schedulers with background operations "
        "— Part 1\" (`../shared/seeds/mclock-vs-wpq-snaptrim-recovery-part1.zh.txt`, a Chinese translation) runs "
        "fio against an RBD pool while a snapshot's clones are trimmed (test A), while clones are trimmed and "
        "misplaced objects recovered (test B), and, on a 975-OSD cluster, while objects recover (scaled test), "
        "under WPQ and the mClock profiles high_client_ops, balanced and high_recovery_ops. Its Figures 1–23 are "
        "lost; the text states many of their values and three allocation tables.",
        f"| | the study (part 1) | {_OURS} |\n|---|---|---|\n"
        "| Ceph | 17.0.0 dev (Quincy), OSD capacity measured automatically | 16.2.15 (Pacific, Debian 12), mClock capacity fixed at 2500 IOPS per OSD |\n"
        "| machine | 2 × Xeon E5-2650 v3, 40 threads, 64 GiB, 4 × NVMe P3700 | 2-vCPU VM, 23.5 GiB, OSDs on sparse files on one virtual disk |\n"
        "| OSDs, replication | 4, size 3, 64-PG client pool | 4, size 3, 32-PG pools |\n"
        "| client | fio 4 KiB random read/write, QD 64, 300 s | fio rbd 4 KiB random read/write, QD 16, 60 s |\n"
        "| test A (snaptrim) | 100 k objects of 4 MiB, 80 % overwritten → 80 k clones, snapshot removed 30 s into the client run | 4000 objects of 64 KiB, 80 % overwritten → 3200 clones, removed at 30 s |\n"
        "| test B (+ recovery) | 30 k recovery objects of 4 MiB after an OSD down/out; 70 k clones; recovery enabled with the trim | 1000 objects of 256 KiB written while an OSD is out, recovery enabled at the trim |\n"
        "| scaled | 975 OSDs, 40 hosts (Gibba) | not reproducible here: published values only |\n"
        "| repeats | 3, averaged | 3, medians |\n\n"
        "Our background operations last tens of seconds (theirs minutes) and our client runs ~20× fewer IOPS. "
        "Absolute values cannot agree; relative claims (which scheduler is faster, by how much) are what we can "
        "test. mClock's allocations in Pacific 16.2.15 are those of its built-in profiles, not the study's tuned "
        "table (the custom arm uses part 2's custom allocations).",
        "What the transcription found: the balanced profile's clat during snaptrim is said to be 20 % lower than "
        "WPQ's in one paragraph and 18 % (5.074 vs 6.2 ms) in the table; WPQ's client throughput with snaptrim + "
        "recovery is \"43 % lower than the baseline\" where the stated numbers give 44.5 % (the baseline of that "
        "test may have been measured separately); the table's \"5.6 % lower\" overall clat is 5.4 %; and a "
        "\"18.7 % faster snaptrim rate\" for high_client_ops is its duration reduction (−18.7 %), while the "
        "stated rates (528 vs 431 objects/s) differ by 22.5 %.",
        ("baseline", "snaptrim", "snaptrim_recovery"),
        ("wpq", "high_client_ops", "balanced", "high_recovery_ops", "custom")),
    "part2": Study(
        "part2", "31", PART2_SEED, "mClock vs WPQ with deep scrub (study part 2)",
        "Aishwarya Mathuria's \"QoS in Quincy: Comparison of mClock and WPQ schedulers with background operations "
        "— Part 2\" (`../shared/seeds/mclock-vs-wpq-scrub-part2.txt`) runs fio 4 KiB random writes against an RBD "
        "pool while a deep scrub runs on another pool, under WPQ and each mClock profile; then tunes "
        "`osd_max_scrubs` (5 → 10) and `osd_scrub_cost` (50 → 20 MiB), tries a custom profile, and adds recovery "
        "to the scrub. Its charts are lost; the text states some of their values.",
        f"| | the study (part 2) | {_OURS} |\n|---|---|---|\n"
        "| Ceph | 17.2.0 (Quincy) | 16.2.15 (Pacific, Debian 12), mClock with the capacity fixed at 2500 IOPS per OSD |\n"
        "| machine | 2 × Xeon 8276M, 40 threads, 64 GiB, NVMe P4510 | 2-vCPU VM, 23.5 GiB, OSDs on sparse files on one virtual disk |\n"
        "| OSDs, replication | 4, size 3 | 4, size 3, 32-PG pools |\n"
        "| client | fio 4 KiB random write, QD 64, 840 s (scrub) / 540 s (scrub + recovery) | fio rbd 4 KiB random write, QD 16, 60 s |\n"
        "| scrub pool | 10 M objects of 32 KiB (scrub + recovery: 100 k of 4 MiB) | 8000 objects of 32 KiB, deep scrub requested at 10 s |\n"
        "| settings | osd_max_scrubs 5, osd_requested_scrub_priority 5 | the same; tuned arms: osd_max_scrubs 10, osd_scrub_cost 20 MiB, WPQ at priority 120, the seed's custom allocations |\n"
        "| repeats | 3, averaged | 3 (8 for WPQ and high_client_ops under scrub), medians |\n\n"
        "Our deep scrub of 256 MiB takes tens of seconds, theirs a large part of 14 minutes; our client is ~60× "
        "slower than theirs in absolute IOPS. Absolute values therefore cannot agree; relative claims (which "
        "scheduler is faster, by how much) are what we can test.",
        "What the transcription found: the \"half\" and the \"44 %\" decrease of the scrub duration with "
        "`osd_max_scrubs` 10 cannot both be against the same reference unless one is loose (−50 % vs −44 %); no "
        "scrub duration is stated, so this cannot be settled from the text. The transcription keeps both "
        "against high_client_ops at 5 scrubs and says so in its note.",
        ("baseline", "scrub", "recovery_scrub"), None),
}


def study(key: str) -> Study:
    """The study named by the notebook's ``study`` parameter; a clear error for anything else."""
    if key not in STUDIES:
        raise ValueError(f"study {key!r}: expected one of {', '.join(STUDIES)}")
    return STUDIES[key]


def heading(st: Study, campaign: str) -> str:
    """The section's title and introduction (Markdown): the report takes its title from this output."""
    return (f"# {st.number} · {st.title}\n\n{st.intro} This notebook puts every stated number beside the same "
            f"quantity measured on our campaign `{campaign}`, draws each figure twice (published values, our "
            f"runs), and says which claims hold here.")


def recompute_note(st: Study, rec: pd.DataFrame) -> str:
    """How the text's relative statements recompute from its own absolute values (counts from ``rec``,
    :func:`analysis.published.qos.recompute_derived`), then the transcription's note."""
    n = rec["status"].value_counts()
    parts = [f"{label} {int(n.get(k, 0))}" for k, label in
             (("ok", "recomputed within the printed rounding"), ("approx", "within 2 points where the text hedges"),
              ("contradiction", "contradicting the stated values"), ("not stated", "with an input the text does not state"))
             if n.get(k, 0)]
    return f"Of the {len(rec)} relative statements: " + "; ".join(parts) + ". " + st.text_note


def conclusions(st: Study, rec: pd.DataFrame, claims: pd.DataFrame, rc: pd.DataFrame, campaign: str,
                alpha: float) -> str:
    """The closing section (Markdown), computed: the text against itself (``rec``), our runs against the
    testable claims (``claims``: :func:`analysis.stats.claims.claims_table` rows of this study and
    campaign — the verdicts of the report's findings table), the claims a few more repeats would decide,
    and how far our absolute values are from theirs (``rc``: :func:`analysis.stats.reconcile.reconcile`)."""
    lines = ["## Conclusions", "", f"- **The text against itself.** {recompute_note(st, rec)}"]
    lines += conclusion_lines(claims, campaign, alpha, study=st.key)
    ab = rc[(rc["kind"] == "measured") & rc["ratio"].notna()]
    if len(ab):
        g = ab.groupby("metric")["ratio"].agg(["min", "max"])
        lines.append("- **Absolute values** (ours / theirs; different machines, so a measure of the set-ups' "
                     "distance, not of who is right): " + "; ".join(
                         f"{m} {row['min']:.2g}–{row['max']:.2g}×" if row['max'] > row['min'] * 1.005
                         else f"{m} {row['min']:.2g}×" for m, row in g.iterrows()) + ".")
    nr = rc[rc["verdict"] == "not reproducible"]
    if len(nr):
        figs = ", ".join(dict.fromkeys(nr["figure"].astype(str)))
        lines.append(f"- **Not reproducible here:** {len(nr)} published values ({figs}): published values only.")
    return "\n".join(lines)
