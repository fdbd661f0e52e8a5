"""The ingest overview: one row per file and direction with its headline numbers, for display.

Display units (converted here, never stored): IOPS in 1/s, bandwidth in MiB/s, latencies in µs.
Across several jobs of one file: IOPS and bandwidth are summed, mean latency is weighted by each
job's IO count (unweighted when counts are absent), p99 is the worst job's.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .labels import str_isin

MIB = 1024 * 1024


def _agg(g: pd.DataFrame) -> pd.Series:
    m = g.pivot_table(index="job", columns="metric", values="value", aggfunc="first", observed=True)

    def col(*names: str) -> pd.Series | None:
        for n in names:
            if n in m.columns and m[n].notna().any():
                return m[n]
        return None

    out: dict[str, float] = {}
    iops = col("iops", "iops_mean")
    bw = col("bw", "bw_mean")
    out["iops"] = float(iops.sum()) if iops is not None else np.nan
    out["bw_MiB/s"] = float(bw.sum()) / MIB if bw is not None else np.nan
    lat = col("clat_mean", "lat_mean")
    n = col("total_ios", "clat_samples", "lat_samples", "ops_total")
    if lat is not None:
        w = n.reindex(lat.index) if n is not None else None
        ok = lat.notna()
        if w is not None and w[ok].notna().all() and w[ok].sum() > 0:
            out["lat_mean_us"] = float(np.average(lat[ok], weights=w[ok])) / 1000
        else:
            out["lat_mean_us"] = float(lat[ok].mean()) / 1000
    else:
        out["lat_mean_us"] = np.nan
    p99 = col("clat_p99", "lat_p99")
    out["p99_us"] = float(p99.max()) / 1000 if p99 is not None else np.nan
    out["jobs"] = float(len(m))
    return pd.Series(out)


def file_table(files: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """One row per (file, ddir): kind, tool version, status and the headline numbers."""
    base = files[["path", "kind", "tool_version", "status"]].copy()
    s = summary[str_isin(summary["source"], set(files["path"]))].copy()  # only the files listed
    s["source"] = s["source"].astype(str)
    s["ddir"] = s["ddir"].astype(str)
    s["metric"] = s["metric"].astype(str)
    s["job"] = s["job"].astype(str)
    if s.empty:
        return base.assign(ddir=None)
    heads = s.groupby(["source", "ddir"], sort=True).apply(_agg, include_groups=False).reset_index()
    out = base.merge(heads, left_on="path", right_on="source", how="left").drop(columns="source")
    cols = ["path", "kind", "tool_version", "status", "ddir", "jobs", "iops", "bw_MiB/s",
            "lat_mean_us", "p99_us"]
    return out[cols].sort_values(["path", "ddir"], na_position="last").reset_index(drop=True)


def crosscheck_table(files: pd.DataFrame) -> pd.DataFrame:
    """Each parsed file's check against the tool's own summary, from ``files.meta_json``.

    fio JSON: json+ percentiles recomputed from bins vs printed (max relative difference) and
    total_ios vs iops × runtime; fio logs: per-IO sample count vs fio's total_ios and log mean vs
    fio's mean (logs of averaged latency windows: a check of their own, indicative only, as their
    unweighted window mean is not fio's per-IO mean); rados bench: ops_total vs the per-second table.  ``worst`` is the largest relative
    deviation the check found (0 = exact; NaN where nothing numeric was compared), so many files
    roll up into one line (``crosscheck_rollup``).
    """
    import json

    rows = []
    for _, f in files.dropna(subset=["meta_json"]).iterrows():
        meta = json.loads(f["meta_json"])
        check, result, worst = None, None, np.nan
        if "percentile_check" in meta:
            check = "json+ bins → percentiles"
            worst = float(meta["percentile_check"]["max_rel_diff"])
            result = f"max rel diff {worst:.2g}"
        elif meta.get("identity_check", {}).get("n"):
            ic = meta["identity_check"]
            worst = float(ic["max_abs_dev"])
            check, result = "total_ios ≈ iops × runtime", f"max dev {worst:.2g}"
        elif "crosscheck" in meta:
            parts, devs = [], []
            # a log of averaged latency windows (fio log_avg_msec) carries no IO count per window: its
            # unweighted mean of window means strays from fio's per-IO mean wherever few, slow IOs fill
            # some windows (371 % in a throttled recovery+scrub run of qos-v2), so it is a check of its own
            unweighted = any("unweighted" in str(c.get("note", "")) for c in meta["crosscheck"].values())
            for ddir, c in meta["crosscheck"].items():
                if not c.get("compared", True):
                    parts.append(f"{ddir}: not comparable ({c.get('why', '')})")
                elif "log_samples" in c:
                    s = f"{ddir}: {c['log_samples']}/{c['json_total_ios']} IOs"
                    if c["json_total_ios"]:
                        devs.append(abs(c["log_samples"] / c["json_total_ios"] - 1))
                    if "mean_rel_diff" in c:
                        s += f", mean rel diff {c['mean_rel_diff']:.1g}"
                        devs.append(abs(c["mean_rel_diff"]))
                    parts.append(s)
                elif "rel_diff" in c:
                    parts.append(f"{ddir}: window mean vs fio {c['rel_diff']:.1%}")
                    devs.append(abs(c["rel_diff"]))
                elif "percentile_rel_diff" in c:
                    w = max(c["percentile_rel_diff"].values(), default=float("nan"))
                    parts.append(f"{ddir}: hist vs fio percentiles ≤ {w:.1%}")
                    devs.append(abs(w))
            check = "window latency vs fio (unweighted: indicative)" if unweighted else "log vs fio summary"
            result = "; ".join(parts) or "—"
            worst = max(devs) if devs else np.nan
        elif "check_ops_total_vs_table" in meta:
            c = meta["check_ops_total_vs_table"]
            check = "ops_total vs table"
            result = "ok" if c.get("ok") else f"MISMATCH {c}"
            worst = 0.0 if c.get("ok") else np.inf
        else:
            check, result = "no tool summary to compare", meta.get("latency_unit_source", "")
        rows.append({"path": f["path"], "kind": f["kind"], "check": check, "result": result, "worst": worst})
    return pd.DataFrame(rows, columns=["path", "kind", "check", "result", "worst"])


def crosscheck_rollup(cc: pd.DataFrame, depth: int = 2) -> pd.DataFrame:
    """``crosscheck_table`` rolled up by the first ``depth`` directories of each path, kind and check:
    files checked, files where nothing numeric could be compared, and the worst deviation among them
    (the file it came from is named, so a bad one can be looked up in the per-file table)."""
    if cc.empty:
        return pd.DataFrame(columns=["tree", "kind", "check", "files", "not_compared", "worst", "worst_file"])
    d = cc.assign(tree=cc["path"].map(lambda p: "/".join(p.split("/")[:depth]) if p.count("/") >= depth
                                      else "/".join(p.split("/")[:-1]) or "."))
    g = d.groupby(["tree", "kind", "check"], sort=True, dropna=False)
    out = g.agg(files=("path", "size"), not_compared=("worst", lambda w: int(w.isna().sum())),
                worst=("worst", "max"))
    idx = d.dropna(subset=["worst"]).groupby(["tree", "kind", "check"], dropna=False)["worst"].idxmax()
    out["worst_file"] = d.loc[idx].set_index(["tree", "kind", "check"])["path"]
    return out.reset_index()


def partial_reasons(meta_json: str | None) -> list[str]:
    """Why a reader marked a file ``partial``, from its ``meta_json`` (``incomplete``: btt, blkparse, PG
    timelines, sysutil; ``partial_reason``: rados bench, getput; fio: ``interrupted`` or ``job_errors``)."""
    import json
    try:
        meta = json.loads(meta_json) if meta_json else {}
    except (TypeError, ValueError):
        meta = {}
    why = meta.get("incomplete") or meta.get("partial_reason")
    if why:
        return [str(w) for w in why] if isinstance(why, list) else [str(why)]
    if meta.get("interrupted"):
        return ["fio terminated on a signal"]
    if meta.get("job_errors"):
        return ["a fio job reported an error"]
    return ["reason not recorded"]


def _n(k: int, one: str, many: str | None = None) -> str:
    return f"{k:,} {one if k == 1 else (many or one + 's')}"


def ingest_conclusion(files: pd.DataFrame, manifest_present: bool | None = None, examples: int = 3) -> str:
    """The closing section of the ingest notebook (Markdown), computed from ``files.parquet`` (one row per
    file): files per status; campaigns with their runs, and the files that belong to none; the partial files
    per kind with the reasons their readers gave; the failed files per kind with the first ``examples``
    errors as ``file:line: what``; the manifest check (files per ``manifest`` value; ``manifest_present``
    False: the tree had no ``MANIFEST.sha256``, nothing was verified; None: whether ``files`` lists one)."""
    lines = ["## Conclusions", ""]
    st = files["status"].astype(str).value_counts()
    order = [s for s in ("ok", "partial", "failed", "empty", "context") if s in st.index] + \
        sorted(s for s in st.index if s not in ("ok", "partial", "failed", "empty", "context"))
    readable = int(st.get("ok", 0) + st.get("partial", 0))
    lines.append(f"- **Files.** {len(files):,} in the tree: " + ", ".join(f"{int(st[s]):,} {s}" for s in order)
                 + f"; {readable:,} read into the tables (ok or partial).")
    if "campaign" in files and files["campaign"].notna().any():
        camp = files.dropna(subset=["campaign"])
        runs = (camp.dropna(subset=["run"]).groupby(camp["campaign"].astype(str))["run"].nunique()
                if "run" in camp else pd.Series(dtype=int))
        runs = runs.reindex(sorted(set(camp["campaign"].astype(str))), fill_value=0)
        runs = runs.sort_values(ascending=False, kind="stable")
        none = int(files["campaign"].isna().sum())
        lines.append(f"- **Campaigns.** {len(runs)} with {int(runs.sum()):,} runs: "
                     + ", ".join(f"`{c}` {int(n):,}" for c, n in runs.items())
                     + f"; {_n(none, 'file')} in no campaign.")
    else:
        lines.append("- **Campaigns.** No file names a campaign (no `run.json` or CBT configuration above it).")
    part = files[files["status"] == "partial"]
    if len(part):
        why = pd.Series([partial_reasons(m) for m in (part["meta_json"] if "meta_json" in part else [None] * len(part))],
                        index=part.index).explode()
        head = why.str.split(":").str[0]          # one reason, any numbers: "deep scrub of pool 'x' unfinished"
        by_kind = "; ".join(f"{k} {len(g)}" for k, g in part.groupby(part["kind"].astype(str), sort=True))
        said = []
        for h, w in why.groupby(head, sort=False):
            n = w.index.nunique()
            said.append(f"{h} in {n}" + (f" (e.g. {w.iloc[0].split(':', 1)[1].strip()})" if ":" in w.iloc[0] else ""))
        lines.append(f"- **Partial: {_n(len(part), 'file')}** ({by_kind}), values kept as the file holds them; "
                     "why: " + "; ".join(said) + ".")
    else:
        lines.append("- **Partial:** none.")
    failed = files[files["status"] == "failed"]
    if len(failed):
        by_kind = "; ".join(f"{k} {len(g)}" for k, g in failed.groupby(failed["kind"].astype(str), sort=True))
        shown = []
        for _, r in failed.head(examples).iterrows():
            line = f":{int(r['error_line'])}" if "error_line" in r and pd.notna(r["error_line"]) else ""
            shown.append(f"`{r['path']}{line}`: {r['error']}")
        more = f" (and {len(failed) - examples:,} more, listed above)" if len(failed) > examples else ""
        lines.append(f"- **Failed: {_n(len(failed), 'file')}** ({by_kind}), none of their rows in the tables: "
                     + "; ".join(shown) + more + ".")
    else:
        lines.append("- **Failed:** none.")
    if manifest_present is None:  # the manifest is a file of the tree (kind MANIFEST.sha256, status context)
        manifest_present = bool((files["kind"].astype(str) == "MANIFEST.sha256").any())
    if manifest_present is False:
        lines.append("- **Manifest.** The tree has no `MANIFEST.sha256`: no file's SHA-256 was checked.")
    elif "manifest" in files:
        m = files["manifest"].dropna().astype(str).value_counts()
        bad = {k: int(v) for k, v in m.items() if k != "ok"}
        lines.append(f"- **Manifest.** {int(m.get('ok', 0)):,} of {int(m.sum()):,} files match `MANIFEST.sha256`"
                     + (": " + ", ".join(f"{v:,} {k}" for k, v in bad.items()) + " (failed, or read under `--lenient`)"
                        if bad else ", none missing from it or changed") + ".")
    return "\n".join(lines)
