"""Command line: ``python -m analysis ingest|manifest|report|run-notebook|deps|failures|claims|pilot|cbt-pilot|compare|history|stale|dictionary`` (``--help`` on each)."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path


def _out_inside(args: argparse.Namespace) -> str | None:
    """Why ``--out`` cannot be used for ``ingest DIR``: it is DIR or a folder below it (the next ingest would
    read the tables as data), else None."""
    from .ingest.discovery import shown
    data, out = Path(args.dir).resolve(), Path(args.out).resolve()
    if data.is_dir() and (out == data or data in out.parents):
        return (f"--out {shown(args.out)} is inside the folder being ingested, {shown(str(data))}: the next ingest "
                "would read the tables as data (expected an output folder outside it)")
    return None


def _ingest_dask(args: argparse.Namespace) -> int:
    """``ingest --dask``: the same exit codes and messages as :func:`_ingest` (nothing readable: 2, the
    previous tables kept; an unwritable --out: 3)."""
    from .ingest.base import IngestError
    from .ingest.discovery import shown
    from .ingest.scale import ingest_batches
    from .ingest.walk import check_writable
    why = _out_inside(args)
    if why:
        print(f"error: {why}", file=sys.stderr)
        return 2
    try:
        check_writable(args.out)
    except OSError as e:
        print(f"error: cannot write tables to {args.out}: {e.strerror or e}", file=sys.stderr)
        return 3
    try:
        res = ingest_batches(args.dir, args.out, dask=True, address=args.dask or None, workers=args.workers,
                             progress=None if not args.no_progress else False, lenient=args.lenient,
                             keep_previous=True)
    except IngestError as e:
        print(f"error: {shown(str(e))}", file=sys.stderr)
        return 2
    except OSError as e:
        kept = (Path(args.out) / "tables.json").is_file()
        print(f"error: cannot write tables to {args.out}: {e.strerror or e} ("
              + ("the previous tables are unchanged)" if kept else "no complete table set is left there: "
                 "readers refuse it until an ingest succeeds)"), file=sys.stderr)
        return 3
    if not res.installed:
        _outcome(res.files, res.failed, f"0 summary rows, 0 series rows: nothing written to {args.out}")
        print(f"error: {shown(args.dir)}: nothing readable: no fio, rados bench, blktrace/blkparse/btt, sysutil or "
              f"cephqos-pg-timeline output below it; the previous tables in {args.out} are unchanged", file=sys.stderr)
        return 2
    rc = _outcome(res.files, res.failed,
                  f"{res.rows['summary']} summary rows, {res.rows['series']} series rows in {res.batches} "
                  f"batches on {res.workers} dask worker(s), {res.seconds:.1f} s → "
                  f"{args.out}/{{files.parquet,summary/,series/}}")
    if not res.rows.get("summary") and not res.rows.get("series"):
        print(f"error: {shown(args.dir)}: nothing readable: no fio, rados bench, blktrace/blkparse/btt, sysutil or "
              "cephqos-pg-timeline output below it", file=sys.stderr)
        return 2
    return rc


def _outcome(files, failed: list[tuple[str, str]], tables_line: str) -> int:
    """Print the files per status, the tables line and each failure (file:line: what); the exit code.  Names
    and messages are printed as :func:`~analysis.ingest.discovery.shown` writes them (never a raw control
    character of a file's name)."""
    from .ingest.discovery import shown
    counts = files["status"].value_counts().to_dict() if len(files) else {}
    print(f"{len(files)} files: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    print(tables_line)
    if len(files) and "manifest" in files and (files["manifest"] == "absent").any():
        print(f"warning: no MANIFEST.sha256 in the tree: {int((files['manifest'] == 'absent').sum())} files "
              "read unchecked (`python -m analysis manifest DIR` writes one)", file=sys.stderr)
    for status in ("empty", "unrecognised"):  # not read, not failures (--lenient; fio's empty logs): named
        names = files.loc[files["status"] == status, "path"].astype(str).tolist() if len(files) else []
        if names:
            print(f"{len(names)} {status} (not read): " + ", ".join(map(shown, names[:5]))
                  + (" …" if len(names) > 5 else ""), file=sys.stderr)
    for state, what in (("missing", "not in MANIFEST.sha256"), ("MISMATCH", "changed since MANIFEST.sha256")):
        names = files.loc[(files["manifest"] == state) & (files["status"] != "failed"), "path"].astype(str).tolist() \
            if len(files) and "manifest" in files else []
        if names:  # only --lenient reads these (strict, they failed and are listed below)
            print(f"warning: {len(names)} file(s) {what}, read (--lenient): " + ", ".join(map(shown, names[:5]))
                  + (" …" if len(names) > 5 else ""), file=sys.stderr)
    part = files[files["status"] == "partial"] if len(files) else files
    if len(part):  # read, but incomplete: each with the reader's why
        from .overview import partial_reasons
        print(f"{len(part)} partial (read, incomplete):", file=sys.stderr)
        metas = part["meta_json"] if "meta_json" in part else [None] * len(part)
        for path, meta in list(zip(part["path"].astype(str), metas))[:10]:
            print(f"  {shown(path)}: {shown('; '.join(partial_reasons(meta)) or 'the reader marked it incomplete')}",
                  file=sys.stderr)
        if len(part) > 10:
            print(f"  … {len(part) - 10} more (files.parquet, status partial)", file=sys.stderr)
    if failed:
        print(f"\n{len(failed)} file(s) failed:", file=sys.stderr)
        for _, err in failed:
            print(f"  {shown(str(err))}", file=sys.stderr)
        return 1
    return 0


def _ingest(args: argparse.Namespace) -> int:
    if args.dask is not None:
        return _ingest_dask(args)
    from .ingest.base import IngestError
    from .ingest.executors import WorkerDied
    from .ingest.scale import ingest_batches
    from .ingest.walk import check_writable, ingest, write_tables
    from .ingest.discovery import shown
    why = _out_inside(args)
    if why:  # before check_writable, which makes the folder
        print(f"error: {why}", file=sys.stderr)
        return 2
    try:
        check_writable(args.out)  # before the ingest, not after it: a read-only or full --out fails at once
    except OSError as e:
        print(f"error: cannot write tables to {args.out}: {e.strerror or e}", file=sys.stderr)
        return 3
    progress = None if not args.no_progress else False
    jobs = args.jobs or _cores()
    try:
        if Path(args.dir).is_dir():  # bounded memory: batches written as parts, merged one at a time
            res = ingest_batches(args.dir, args.out, jobs=jobs, lenient=args.lenient, progress=progress,
                                 keep_previous=True)  # nothing readable: the previous tables stay
            files, failed, rows, installed = res.files, res.failed, res.rows, res.installed
            where = (", ".join(str(Path(args.out) / f"{t}.parquet") for t in rows)
                     + f" ({len(files)} files in {res.batches} batches on {res.workers} process(es): read "
                     f"{res.stages['read']:.1f} s, merge {res.stages['merge']:.1f} s)")
        else:  # one file: in memory
            inputs = _one_file_inputs(Path(args.dir))  # stat'ed before it is read (ingest.freshness.stale)
            one = ingest(args.dir, progress=progress, jobs=1, lenient=args.lenient)
            files, failed = one.files, one.failed
            rows = {"summary": len(one.summary), "series": len(one.series)}
            # nothing readable: the previous tables stay (without any, the empty set says what was found)
            installed = bool(rows["summary"] or rows["series"]) or not (Path(args.out) / "tables.json").is_file()
            if installed:
                inputs["files"][0][2] = str(files["sha256"].iloc[0]) if "sha256" in files and len(files) \
                    and isinstance(files["sha256"].iloc[0], str) else None
                where = ", ".join(str(p) for p in write_tables(one, args.out, inputs=inputs).values())
    except IngestError as e:
        print(f"error: {shown(str(e))}", file=sys.stderr)
        return 2
    except WorkerDied as e:
        print(f"error: {e}", file=sys.stderr)
        return 4
    except OSError as e:
        kept = (Path(args.out) / "tables.json").is_file()  # withdrawn only once the tables began to be replaced
        print(f"error: cannot write tables to {args.out}: {e.strerror or e} ("
              + ("the previous tables are unchanged)" if kept else "no complete table set is left there: "
                 "readers refuse it until an ingest succeeds)"), file=sys.stderr)
        return 3
    if not installed:  # nothing readable (an empty or unmounted folder): the previous set is kept as it was
        _outcome(files, failed, f"0 summary rows, 0 series rows: nothing written to {args.out}")
        print(f"error: {shown(args.dir)}: nothing readable: no fio, rados bench, blktrace/blkparse/btt, sysutil or "
              f"cephqos-pg-timeline output below it; the previous tables in {args.out} are unchanged", file=sys.stderr)
        return 2
    rc = _outcome(files, failed, f"{rows.get('summary', 0)} summary rows, {rows.get('series', 0)} series rows → {where}")
    if not rows.get("summary") and not rows.get("series"):
        print(f"error: {shown(args.dir)}: nothing readable: no fio, rados bench, blktrace/blkparse/btt, sysutil or "
              "cephqos-pg-timeline output below it", file=sys.stderr)
        return 2
    return rc


def _one_file_inputs(path: Path) -> dict:
    """:func:`analysis.store.inputs_record` of an ingest of the one file ``path`` (its folder's manifest entry
    for it, as :func:`analysis.ingest.walk.ingest` checks it), its SHA-256 to be filled in once it was read."""
    import time
    from .ingest.manifest import load_manifest
    from .store import inputs_record, stat_signature
    began, f = time.time_ns(), path.resolve()
    manifest = load_manifest(f.parent)
    if manifest is not None:
        manifest = {f.name: manifest[f.name]} if f.name in manifest else {}
    return inputs_record(f, began, [f.name], [stat_signature(f)], [None], manifest)


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _manifest(args: argparse.Namespace) -> int:
    """Write DIR/MANIFEST.sha256: exit 2 for a tree that cannot be listed (a special file, a symlink out of
    it, a folder too deep, no such folder), 3 when the manifest cannot be written."""
    from .ingest.base import IngestError
    from .ingest.discovery import shown
    from .ingest.manifest import write_manifest
    if not Path(args.dir).is_dir():
        print(f"error: {shown(args.dir)}: expected a folder to write MANIFEST.sha256 in", file=sys.stderr)
        return 2
    try:
        p = write_manifest(Path(args.dir))
    except IngestError as e:
        print(f"error: {shown(str(e))}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"error: cannot write {shown(str(Path(args.dir) / 'MANIFEST.sha256'))}: {e.strerror or e}",
              file=sys.stderr)
        return 3
    n = p.read_bytes().count(b"\n")  # one line per file (an escaped name holds no newline)
    print(f"{shown(str(p))}: {n} files")
    return 0


def _damaged(processed: str | Path | None, names: tuple[str, ...]) -> str | None:
    """Why tables ``names`` of the set in ``processed`` must not be read (their bytes are not those its
    ``tables.json`` recorded, or the record is unreadable), or None (also when there is no record: a set
    of an older ingest, or none, is for the reader to name)."""
    if processed is None or not (Path(processed) / "tables.json").is_file():
        return None
    import json
    from .store import TableSetError, check_content
    try:
        check_content(processed, json.loads((Path(processed) / "tables.json").read_text()), names)
    except (TableSetError, ValueError, FileNotFoundError) as e:
        return str(e)
    return None


def _report(a: argparse.Namespace) -> int:
    from .report import MixedDataError, build_report
    why = _damaged(a.processed, ("files",))
    if why:
        print(f"error: {why}; {Path(a.reports) / 'report.html'} not written", file=sys.stderr)
        return 2
    try:
        print(build_report(a.reports, a.figures, processed=a.processed))
    except MixedDataError as e:  # a page of one data set's sections beside another's: none is written
        print(f"error: {e}; {Path(a.reports) / 'report.html'} not written", file=sys.stderr)
        return 2
    return 0


def _failures(a: argparse.Namespace) -> int:
    """The files ``files.parquet`` records as failed (file:line: what was expected), on stderr: exit 1 if
    any (``make report`` ends with it: a report made without them says so), 0 if none, 2 without tables."""
    import pyarrow.parquet as pq
    p = Path(a.processed) / "files.parquet"
    if not p.is_file():
        print(f"error: {p} is missing (run `python -m analysis ingest DATA --out {a.processed}`)", file=sys.stderr)
        return 2
    why = _damaged(a.processed, ("files",))
    if why:
        print(f"error: {why}", file=sys.stderr)
        return 2
    pf = pq.ParquetFile(p)
    cols = [c for c in ("path", "status", "error") if c in pf.schema_arrow.names]
    rows = pf.read(columns=cols).to_pylist() if "status" in cols else []
    bad = [r for r in rows if r.get("status") == "failed"]
    if not bad:
        return 0
    print(f"\n{len(bad)} of {len(rows)} file(s) could not be read; the report is made from the rest:", file=sys.stderr)
    for r in bad:
        print(f"  {r.get('error') or r.get('path')}", file=sys.stderr)
    return 1


def _deps(a: argparse.Namespace) -> int:
    from .report import notebook_deps, nothing_readable, write_if_changed
    why = nothing_readable(a.processed)
    if why:
        print(f"error: {why}; no notebook is run", file=sys.stderr)
        return 2
    text = notebook_deps(a.notebooks, a.processed, reports=a.reports)
    write_if_changed(Path(a.out), text)
    return 0


def _run_notebook(a: argparse.Namespace) -> int:
    """Execute, then (``--section``) render the report section; one line at the end: the name and seconds."""
    import time
    t0 = time.perf_counter()
    rc, ran = _execute_notebook(a), time.perf_counter() - t0
    if rc == 0 and a.section:
        from .report_sections import section
        section(a.out, a.section)
    took = time.perf_counter() - t0
    name = a.section or Path(a.notebook).stem
    print(f"  {name:<28} {took:6.1f} s" + (f"  (ran {ran:.1f} s, section {took - ran:.1f} s)" if a.section else "")
          + ("" if rc == 0 else "  FAILED"), flush=True)
    return rc


def _execute_notebook(a: argparse.Namespace) -> int:
    from .report import dataset_record, missing_campaigns, record_dataset, write_stub
    # the data set it runs on, read before it runs, goes into the executed notebook's metadata: the report
    # refuses notebooks of different data sets (a stale one from an earlier DATA or PROC)
    dataset = dataset_record(a.data, a.processed)
    missing = missing_campaigns(a.notebook, a.processed)
    if missing:
        print(f"{a.notebook}: no runs of {', '.join(missing)} in {a.data}: writing a stub section")
        write_stub(a.notebook, missing, a.data, a.out, dataset=dataset)
        return 0
    extra = [x for x in a.papermill_args if x != "--"]
    from papermill.cli import papermill as papermill_cli  # in this process: one interpreter start less
    for attempt in (1, 2):
        try:
            papermill_cli.main(args=[a.notebook, a.out, *extra], standalone_mode=False)
        except Exception as e:  # PapermillExecutionError and friends: the cell and traceback are printed above
            # two kernels started at once (make -j2) can pick the same free TCP port: jupyter_client's
            # ports are probed, then bound by the kernel; the loser dies before kernel_info — start it again
            if attempt == 1 and KERNEL_START_RACE.search(str(e)):
                print(f"{a.notebook}: the kernel died at start ({e}); starting it once more", file=sys.stderr)
                continue
            print(f"{a.notebook}: {type(e).__name__}: {e}", file=sys.stderr)
            return 1
        record_dataset(a.out, dataset)  # papermill wrote a.out; the record is added by temp file and rename
        return 0
    return 1


#: how a kernel that lost a port race at start-up fails (jupyter_client 8, nbclient 0.10)
KERNEL_START_RACE = re.compile(r"Kernel died before replying to kernel_info|Address already in use")


def _table_path(proc: Path, name: str) -> Path | None:
    """``<proc>/<name>.parquet`` or the partitioned ``<proc>/<name>/`` (``ingest --dask``); None if absent."""
    for p in (proc / f"{name}.parquet", proc / name):
        if p.exists():
            return p
    return None


#: beside claims.csv: the validity gate of each QoS campaign (analysis.stats.validity)
VALIDITY_CSV = "validity.csv"


def _gate_all(proc: Path, present: list[str], summary, series, published, scenarios: set):
    """The validity gate of every QoS campaign of the set (the claims' campaigns first, then the others,
    pilots included, by name): a campaign is QoS when a run of it has a scenario of the studies with a
    background operation (a ``baseline`` alone, as a CBT campaign has, is not)."""
    import pandas as pd
    from .stats import validity
    from .store import read_table
    files = read_table(proc, "files", columns=["campaign", "scenario"], check=False)
    sc = files["scenario"].astype(str)
    qos = files[sc.isin(scenarios) & sc.map(lambda x: bool(validity.ops_of(x))).astype(bool)]["campaign"]
    qos = qos.dropna().astype(str)
    others = sorted(set(qos) - set(present))
    if others:
        flt = [("campaign", "in", others)]
        summary = pd.concat([summary, read_table(proc, "summary", check=False, filters=flt)], ignore_index=True)
        series = pd.concat([series, read_table(proc, "series", check=False, filters=flt)], ignore_index=True)
    return pd.concat([validity.gate(summary, series, c, published) for c in [*present, *others]], ignore_index=True)


def _claims(a: argparse.Namespace) -> int:
    from .store import TableSetError, verify
    proc, out = Path(a.processed), Path(a.out)
    try:
        verify(proc)  # one complete ingest's set, or a one-line error naming `make data`
    except TableSetError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    paths = {n: _table_path(proc, n) for n in ("summary", "series")}
    missing = [n for n, p in paths.items() if p is None]
    if missing:
        print(f"error: {proc / (missing[0] + '.parquet')} is missing (run `python -m analysis ingest DATA --out "
              f"{proc}`)", file=sys.stderr)
        return 2
    import pandas as pd
    from .published.qos import load_all
    from .stats.claims import claims_table, decided_by_repeats, verdict_counts
    from .stats.qos_derived import run_metrics
    flt = [("campaign", "in", list(a.campaign))]
    import pyarrow.parquet as pq
    # a partitioned table (ingest --dask) always has campaign: it is a folder level (campaign=…/)
    names = pq.ParquetFile(paths["summary"]).schema_arrow.names if paths["summary"].is_file() else ["campaign"]
    if "campaign" not in names:  # runs that name no campaign (bare tool outputs, CBT archives)
        summary = series = pd.DataFrame({"campaign": pd.Series(dtype=str)})
    else:
        from .store import read_table
        summary, series = (read_table(proc, n, check=False, filters=flt) for n in ("summary", "series"))
    have = set(summary["campaign"].astype(str))
    absent = [c for c in a.campaign if c not in have]
    if absent:
        print(f"claims: no runs of {', '.join(absent)} in {proc}: skipped")
    from .stats.reconcile import SCENARIO
    metrics = {c: run_metrics(summary, series, c, windows=True) for c in a.campaign if c in have}
    qos = {c: m for c, m in metrics.items() if m["scenario"].astype(str).isin(set(SCENARIO.values())).any()}
    if len(qos) < len(metrics):
        print(f"claims: no QoS runs of {', '.join(c for c in metrics if c not in qos)} in {proc}: skipped")
    present = [c for c in a.campaign if c in qos]
    if not present:
        for stale in (out, out.with_name("findings.json"), out.with_name(VALIDITY_CSV)):  # another data set's
            if stale.exists():
                stale.unlink()
                print(f"claims: removed the stale {stale}")
        return 0
    published = load_all(a.published) if a.published else load_all()
    rel = summary.dropna(subset=["ceph_release"]).groupby("campaign", observed=True)["ceph_release"].agg(
        lambda s: ",".join(sorted(set(map(str, s))))) if "ceph_release" in summary else pd.Series(dtype=str)
    from .stats.prereg import run_records
    table = pd.concat([claims_table(published, qos[c], c, alpha=a.alpha, release=rel.get(c),
                                    records=run_records(summary, c)) for c in present], ignore_index=True)
    from .stats import validity
    gate = _gate_all(proc, present, summary, series, published, set(SCENARIO.values()))
    table.insert(table.columns.get_loc("verdict"), "comparable", validity.comparable(table, gate))
    out.parent.mkdir(parents=True, exist_ok=True)
    for frame, dest in ((gate, out.with_name(VALIDITY_CSV)), (table, out)):
        tmp = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
        try:
            frame.to_csv(tmp, index=False)
            os.replace(tmp, dest)
        finally:
            tmp.unlink(missing_ok=True)
    for c, g in gate.groupby("campaign", sort=False):
        print(f"{out.with_name(VALIDITY_CSV)}: {c}: " + ", ".join(f"{r.condition} {r.status}" for r in g.itertuples()))
    from . import findings
    bad = validity.failed(gate)  # the report's sentences say where a campaign is not the seeds' experiment
    rows = [{**r, "gate_failed": bad.get(c, [])} for c in present
            for r in findings.protection(qos[c], run_records(summary, c), c, rel.get(c))]
    print(findings.write(rows, out.with_name(findings.FINDINGS_JSON)))
    for col, what in (("verdict", "the pre-registered model"), ("verdict_paired", "the paired test")):
        for (c, kind), row in verdict_counts(table, col).iterrows():
            print(f"{out}: {c} ({kind}, {what}): " + ", ".join(f"{v} {k}" for k, v in row.items()))
    for c, row in decided_by_repeats(table).iterrows():
        print(f"{out}: {c}: testable claims decided if the spread holds: " + ", ".join(f"{v} {k}" for k, v in row.items()))
    return 0


def _pilot(a: argparse.Namespace) -> int:
    """Evaluate a pilot campaign's runs → pilot.json (go / no-go per scenario), printed as a table."""
    import json
    import pandas as pd
    from capture.ceph import campaign as cp
    from .ingest.walk import ingest
    from .stats import pilot as pl
    try:
        doc = cp.load(a.campaign_file)
    except cp.CampaignError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    dirs = [Path(d) for d in a.pilot_dir]
    missing = [str(d) for d in dirs if not d.is_dir()]
    if missing:
        print(f"error: {', '.join(missing)}: no pilot data (run `python -m capture.ceph pilot` first)",
              file=sys.stderr)
        return 2
    parts = [ingest(d, progress=False, jobs=_cores()) for d in dirs]
    if any(p.summary.empty for p in parts):
        print(f"error: {', '.join(str(d) for d, p in zip(dirs, parts) if p.summary.empty)}: no readable "
              "pilot runs", file=sys.stderr)
        return 2
    failed = [err for p in parts for _, err in p.failed]
    for err in failed:  # a pilot decided on fewer files than it has must say so
        print(f"warning: not read: {err}", file=sys.stderr)
    def cat(name):
        return pd.concat([getattr(p, name).astype({c: str for c in ("campaign", "scenario", "arm",
                                                                             "repeat", "kind", "metric", "job")
                                                            if c in getattr(p, name)}) for p in parts],
                                 ignore_index=True)
    files, summary, series = cat("files"), cat("summary"), cat("series")
    spread = pd.DataFrame(columns=["scenario", "metric", "sd_log", "sd_resid", "n_runs"])
    if a.spread_from:
        if not Path(a.spread_from).is_dir():
            print(f"error: --spread-from {a.spread_from}: no such folder (a finished campaign's raw data)",
                  file=sys.stderr)
            return 2
        why = pl.regime_mismatch(Path(a.spread_from), doc)
        if why:
            print(f"error: --spread-from {a.spread_from}: {why}", file=sys.stderr)
            return 2
        ref = ingest(a.spread_from, progress=False, jobs=_cores())
        camp = str(ref.summary["campaign"].dropna().astype(str).iloc[0])
        spread = pl.spread(pl.shipped_metrics(ref.summary, ref.series, camp))
        spread["from"] = camp
    out = pl.evaluate(files, summary, series, doc, spread, lambda rep: cp.runs_per_scenario(doc, rep))
    out["files_not_read"] = failed
    out["spread_from"] = json.loads(spread.to_json(orient="records"))
    dest = Path(a.out)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(json.dumps(out, indent=1, default=str) + "\n")
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    for s, v in out["scenarios"].items():
        print(f"{s:18s} {'GO' if v['go'] else 'NO-GO':6s} repeats {v['repeats_recommended']:>3d}  "
              + "; ".join(f"{k} {c['value']}" for k, c in v["checks"].items()))
        for why in v["reasons"]:
            print(f"{'':25s}{why}")
        for note in v["notes"]:
            print(f"{'':25s}note: {note}")
    for op, c in out["calibration"].items():
        print(f"calibration {op}: fastest {c['fastest_rate_objects_s']} objects/s ({c['fastest_arm']}): "
              f"{c['pool_key']} {c['now']} → {c['suggested']} for ~{c['for_target_s']:g} s")
    mt, mr = out["machine_time_planned"], out["machine_time_recommended"]
    print(f"machine time: as planned {mt['total_h']} h in {mt['sittings']} sitting(s); with the recommended "
          f"repeats {mr['total_h']} h in {mr['sittings']}")
    print(f"{dest}: {'GO' if out['go'] else 'NO-GO'}")
    return 0 if out["go"] else 1


def _say(*parts: object, file=None, sep: str = " ", end: str = "\n") -> None:
    """``print`` for what ``compare`` and ``history`` write from the data (job names, run keys, paths, notes):
    each line as :func:`~analysis.ingest.discovery.shown` writes it, so that no byte of a file's content reaches
    the terminal as a control sequence; line breaks of the text itself are kept."""
    from .ingest.discovery import shown
    text = sep.join(str(x) for x in parts)
    print("\n".join(shown(line) for line in text.split("\n")), file=file, end=end)


def _safe_frame(df):
    """``df`` with every text cell and column name as :func:`~analysis.ingest.discovery.shown` writes it (a
    value's own line break as ``\\n``): for the text and markdown tables."""
    from .ingest.discovery import shown
    esc = (lambda v: shown(v) if isinstance(v, str) else v)  # noqa: E731
    return df.rename(columns=lambda c: esc(str(c))).map(esc)


def _say_csv(text: str) -> None:
    """CSV text written as :func:`_say` writes lines; a field's own line break (quoted by pandas) as ``\\n``."""
    import csv
    import io
    from .ingest.discovery import shown
    rows = list(csv.reader(io.StringIO(text)))
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([[shown(f) for f in r] for r in rows])
    sys.stdout.write(out.getvalue())


def _compare(a: argparse.Namespace) -> int:
    """A vs B (``analysis.stats.abtest``): exit 0 no regression, 1 a regression, 2 bad input."""
    import json

    import pandas as pd

    from .ingest.base import IngestError
    from .ingest.discovery import shown
    from .stats import abtest as ab
    try:
        threshold, where = ab.parse_options(a.threshold, a.where)
    except ValueError:
        _say(f"error: --threshold {a.threshold!r} (a percentage such as 5 or 5%) or --where {a.where} "
              "(KEY=VALUE) cannot be read", file=sys.stderr)
        return 2
    try:
        s = ab.sides(a.old, a.new, a.by, a.old_value, a.new_value, where, jobs=a.jobs,
                     metrics=a.metric or ab.DEFAULT_METRICS, allow_duplicates=a.allow_duplicates)
        for n in s.notes:
            _say(f"note: {shown(n)}", file=sys.stderr)
        keys = a.key if a.key else ab.workload_keys(s.old, s.new, exclude=s.exclude)
        table = ab.compare(s.old, s.new, keys=keys, metrics=a.metric or ab.DEFAULT_METRICS, alpha=a.alpha,
                           threshold_pct=threshold)
    except (IngestError, ab.CompareError) as e:
        _say(f"error: {shown(str(e))}", file=sys.stderr)
        return 2
    differ = ab.contrast(s.old, s.new) if not a.key else {}
    across = ab.across_workloads(table)
    head = "\n".join(map(shown, [f"old: {s.names[0]}   new: {s.names[1]}", *ab.header(table, differ)]))
    if a.format == "csv":  # one CSV: the cells, then the across-workload rows (level says which)
        both = pd.concat([table.reset_index().assign(level="cell"),
                          across.reset_index().rename(columns={"q": "q_across"}).assign(level="across workloads")],
                         ignore_index=True)
        _say_csv(both[["level", *[c for c in both.columns if c != "level"]]].to_csv(index=False))
    elif a.format == "json":
        _say(json.dumps({"old": s.names[0], "new": s.names[1], "alpha": a.alpha, "threshold_pct": threshold,
                          "differ": differ, "expected_by_chance": table.attrs.get("expected_by_chance"),
                          "duplicates": s.duplicates, "notes": s.notes,
                          "rows": json.loads(table.reset_index().to_json(orient="records")),
                          "across_workloads": json.loads(across.reset_index().to_json(orient="records"))},
                         indent=1))
    else:
        cells, over = _safe_frame(ab.display_table(table)), _safe_frame(ab.across_display(across))
        if a.format == "markdown":
            _say(f"{head}\n\n{ab.markdown(cells)}\n\n{ab.summary_line(table)}\n")
            _say(f"Across workloads (the cells are the sample, not repeats):\n\n{ab.markdown(over)}")
        else:
            _say(head)
            _say(cells.to_string(index=False))
            _say(ab.summary_line(table))
            _say("\nacross workloads (the cells are the sample, not repeats):")
            _say(over.to_string(index=False))
    return 1 if table["regression"].any() else 0


def _history(a: argparse.Namespace) -> int:
    """Change points across runs in time (analysis.stats.history): exit 0 none failing, 1 an
    unacknowledged change for the worse, 2 bad input."""
    import json

    from .ingest.base import IngestError
    from .ingest.discovery import shown
    from .stats import history as hs
    from .stats.abtest import parse_options
    try:
        min_change, where = parse_options(a.min_change, a.where)
        min_change /= 100
    except ValueError:
        _say(f"error: --min-change {a.min_change!r} (a percentage such as 5 or 5%) or --where {a.where} "
              "(KEY=VALUE) cannot be read", file=sys.stderr)
        return 2
    try:
        s, notes = hs.load_paths(a.paths, where, jobs=a.jobs, allow_duplicates=a.allow_duplicates)
        point_key = a.point_key or ("_dir" if len(a.paths) > 1 and not ("point" in s and s["point"].notna().any())
                                    else None)
        h = hs.build(s, metrics=a.metric or hs.DEFAULT_METRICS, keys=a.key, point_key=point_key,
                     file_times=s["_ft"])
        ack = hs.read_ack(a.ack) if a.ack else None
        t = hs.detect(h, min_change=min_change, max_p=a.max_p, min_segment=a.min_segment, window=a.window, ack=ack)
    except (IngestError, hs.HistoryError) as e:
        _say(f"error: {shown(str(e))}", file=sys.stderr)
        return 2
    for n in notes + h.notes:
        _say(f"note: {shown(n)}", file=sys.stderr)
    pts = hs.points(h)
    head = (f"{pts['series'].nunique()} series, {pts.groupby(['series', 'metric']).ngroups} series × metric, "
            f"{pts['point'].nunique()} points, {len(h.runs['run'].unique())} runs; min change {100 * min_change:g} %, "
            f"p ≤ {a.max_p:g}, min segment {a.min_segment} points"
            + (f", window {a.window} points" if a.window else ""))
    if a.format == "csv":
        _say_csv(t.to_csv(index=False))
    elif a.format == "json":
        _say(json.dumps({"summary": head, "min_change_pct": 100 * min_change, "max_p": a.max_p,
                          "min_segment": a.min_segment, "window": a.window,
                          "changes": json.loads(t.to_json(orient="records")), "notes": notes + h.notes}, indent=1))
    else:
        common = hs.common_label(t)
        changes = _safe_frame(hs.display(t, drop=common))
        _say(head)
        if common:
            _say(f"every change's cell: {shown(common)}")
        if changes.empty:
            _say("no change points")
        elif a.format == "markdown":
            from .stats.abtest import markdown
            _say("\n" + markdown(changes))
        else:
            _say(changes.to_string(index=False))
        nf = int(t["fails"].sum())
        _say(f"{len(t)} change(s); {nf} unacknowledged regression(s)" + (" → exit 1" if nf else ""))
    return 1 if t["fails"].any() else 0


def _dictionary(a: argparse.Namespace) -> int:
    from .dictionary import markdown, readme_with_section
    from .ingest.manifest import atomic_write_text
    if a.readme == "-":
        sys.stdout.write(markdown())
        return 0
    p = Path(a.readme)
    print(atomic_write_text(p, readme_with_section(p.read_text(encoding="utf-8"))))
    return 0


def _cbt_pilot(a: argparse.Namespace) -> int:
    """A CBT campaign's pilot folder → pilot.json (go / no-go, iterations; analysis.stats.cbt_pilot)."""
    import json
    from capture.cbt import campaign as cc
    from capture.ceph.campaign import CampaignError
    from .ingest.manifest import atomic_write_text
    from .ingest.walk import ingest
    from .stats import cbt_pilot as cpl
    try:
        doc = cc.load(a.campaign_file)
    except CampaignError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not Path(a.pilot_dir).is_dir():
        print(f"error: {a.pilot_dir}: no pilot data (run `sudo make capture-cbt-pilot` first)", file=sys.stderr)
        return 2
    res = ingest(a.pilot_dir, progress=False, jobs=_cores())
    if res.summary.empty:
        print(f"error: {a.pilot_dir}: no readable pilot runs", file=sys.stderr)
        return 2
    for _, err in res.failed:
        print(f"warning: not read: {err}", file=sys.stderr)
    out = cpl.verdict(res.summary, res.series, tuple(doc["campaign_arms"]), list(doc["pilot"]["arms"]))
    out["files_not_read"] = [err for _, err in res.failed]
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(Path(a.out), json.dumps(out, indent=1, default=str) + "\n")
    for r in out["regime"]:
        print(f"{r['arm']:20s} busiest OSD queue {r['queue_max_osd']:5.1f} ops  per OSD {r['queue_per_osd']:5.1f}  "
              f"CPU {100 * r['cpu_busy']:3.0f} %  busy {r['busy_s']:.0f} s")
    for name, p in out["pairs"].items():
        print(f"{name:40s} {'GO' if p['go'] else 'NO-GO':6s} iterations {p['iterations']}  "
              f"detectable {p['detectable_cells']}/{p['cells']} cells" + (f"  ({p['why']})" if p["why"] else ""))
    print(f"{a.out}: {'GO' if out['go'] else 'NO-GO'} for {' vs '.join(out['arms'])}"
          + (f", {out['iterations']} iterations" if out["go"] else f" ({out['why']})"))
    return 0 if out["go"] else 1


def _unit_args(p: argparse.ArgumentParser) -> None:
    """What decides fio logs' latency unit where the data does not (no fio output beside them)."""
    p.add_argument("--log-units", choices=("us", "ns"), help="the unit of fio latency logs that have no fio "
                   "output beside them naming the version (fio 2.x writes us, fio >= 3 ns); without it such "
                   "logs fail, saying so")
    p.add_argument("--fio-version", help="the fio version that wrote such logs (e.g. 2.18 or fio-3.33)")


def _set_units(a: argparse.Namespace) -> None:
    """``--log-units``/``--fio-version`` into the environment every reading process inherits."""
    from .ingest.fio_log import FIO_VERSION_ENV, LOG_UNITS_ENV
    if getattr(a, "log_units", None):
        os.environ[LOG_UNITS_ENV] = a.log_units
    if getattr(a, "fio_version", None):
        os.environ[FIO_VERSION_ENV] = a.fio_version


def _ingest_args(p: argparse.ArgumentParser) -> None:
    """``ingest``'s arguments."""
    _unit_args(p)
    p.add_argument("dir")
    p.add_argument("--out", default="data/processed", help="output folder (default data/processed)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--jobs", type=int, default=0,
                   help="processes reading files (default 0: one per core); the tables are the same for any number")
    p.add_argument("--dask", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="read the files as Dask tasks: on the cluster at ADDRESS (tcp://host:8786), or without "
                        "an address on a LocalCluster here; writes Parquet partitioned by campaign and kind")
    p.add_argument("--workers", type=int, default=None,
                   help="LocalCluster worker processes (one thread each; default one per core)")
    p.add_argument("--lenient", action="store_true",
                   help="list empty and unrecognised files, and read files missing from or changed since "
                        "MANIFEST.sha256, instead of failing them (exit 1)")


def _manifest_args(p: argparse.ArgumentParser) -> None:
    """``manifest``'s arguments."""
    p.add_argument("dir")


def _report_args(p: argparse.ArgumentParser) -> None:
    """``report``'s arguments."""
    p.add_argument("reports", nargs="?", default="reports")
    p.add_argument("--figures", default="figures", help="folder of the figures the notebooks wrote")
    p.add_argument("--processed", default=None, help="the tables the notebooks read: the data set is summed up "
                                                    "under the findings (campaigns, runs, machine, Ceph version)")


def _run_notebook_args(p: argparse.ArgumentParser) -> None:
    """``run-notebook``'s arguments."""
    p.add_argument("notebook")
    p.add_argument("out")
    p.add_argument("--data", required=True)
    p.add_argument("--processed", required=True)
    p.add_argument("--section", metavar="NAME", help="then render OUT's report section under this name "
                   "(cached in OUT's folder, .sections/NAME.json: `analysis report` only assembles the page)")
    p.add_argument("papermill_args", nargs=argparse.REMAINDER, help="after --: passed to papermill")


def _failures_args(p: argparse.ArgumentParser) -> None:
    """``failures``'s arguments."""
    p.add_argument("--processed", required=True, help="folder of files.parquet")


def _deps_args(p: argparse.ArgumentParser) -> None:
    """``deps``'s arguments."""
    p.add_argument("notebooks", nargs="+")
    p.add_argument("--processed", required=True)
    p.add_argument("--reports", default="reports")
    p.add_argument("--out", required=True, help="the makefile fragment to write")


def _compare_args(p: argparse.ArgumentParser) -> None:
    """``compare``'s arguments."""
    _unit_args(p)
    p.add_argument("old", help="folder of outputs, archive, one output file, or ingested tables")
    p.add_argument("new", nargs="?", help="the same for B (or give --by to split OLD in two)")
    p.add_argument("--by", help="split OLD by this run key (e.g. arm, op_queue, io_scheduler, profile, osd_qos = "
                                "wpq or the mClock profile, archive) instead of a second path; auto: the first of arm, osd_qos, "
                                "archive holding both values, within the run set with the most runs")
    p.add_argument("--old-value", help="with --by: the value that is A (default: the first of exactly two)")
    p.add_argument("--new-value", help="with --by: the value that is B")
    p.add_argument("--metric", action="append", help="a metric to compare (repeatable; default: "
                                                     "iops, bw, latencies, background-op durations and rates)")
    p.add_argument("--key", action="append", help="a run key cells must match on (repeatable; default: the "
                                                  "workload keys the data has)")
    p.add_argument("--where", action="append", metavar="KEY=VALUE",
                   help="keep only runs whose key has this value, e.g. campaign=qos-v2 (repeatable)")
    p.add_argument("--threshold", default="5%", help="a worse change at least this large is a regression "
                                                     "(default 5%%)")
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--allow-duplicates", action="store_true",
                   help="count runs of one side that hold the same bytes (every file's sha256) as repeats each; "
                        "by default they are one run, counted once, and a note names them")
    p.add_argument("--format", choices=("text", "csv", "json", "markdown"), default="text")
    p.add_argument("--jobs", type=int, default=1, help="processes reading raw files (default 1)")


def _history_args(p: argparse.ArgumentParser) -> None:
    """``history``'s arguments."""
    _unit_args(p)
    p.add_argument("paths", nargs="+", metavar="DIR", help="a folder of runs (archives, outputs, ingested "
                   "tables); several folders: each is one point, in time order of their runs")
    p.add_argument("--metric", action="append", help="a metric (repeatable; default: compare's)")
    p.add_argument("--key", action="append", help="a run key the series are made of (repeatable; default: "
                                                  "the workload keys the data has, and history)")
    p.add_argument("--point-key", help="the run key naming each run's point (default: point, else the folder)")
    p.add_argument("--where", action="append", metavar="KEY=VALUE", help="keep only runs with this key value")
    p.add_argument("--min-change", default="5%", help="smallest change reported (default 5%%)")
    p.add_argument("--max-p", type=float, default=0.001, help="largest p of a change (default 0.001)")
    p.add_argument("--min-segment", type=int, default=3, help="fewest points on each side of a change (default 3)")
    p.add_argument("--window", type=int, default=None, help="fail only on changes in the last N points "
                                                            "(default: anywhere)")
    p.add_argument("--ack", help="CSV of acknowledged changes: point[,metric][,series][,note] "
                                 "(reported, not failed)")
    p.add_argument("--allow-duplicates", action="store_true",
                   help="count runs that hold the same bytes (every file's sha256) each; by default they are one "
                        "run, the first kept, and a note names them")
    p.add_argument("--format", choices=("text", "csv", "json", "markdown"), default="text")
    p.add_argument("--jobs", type=int, default=1, help="processes reading raw files (default 1)")


def _stale_args(p: argparse.ArgumentParser) -> None:
    """``stale``'s arguments."""
    p.add_argument("dir", metavar="DATA", help="the folder (or one file) the tables were ingested from")
    p.add_argument("--processed", required=True, help="the folder of the tables and their tables.json")
    p.add_argument("--hash-all", action="store_true", help="re-hash every file, not only those whose size, "
                   "mtime, ctime or inode changed since the ingest stat'ed them")


def _stale(a: argparse.Namespace) -> int:
    """Exit 0 when PROCESSED holds what an ingest of DATA would write now, 1 when not; one line either way
    (:func:`analysis.ingest.freshness.stale`: by content, whatever the mtimes say)."""
    from .ingest.discovery import shown
    from .ingest.freshness import stale
    why, n = stale(a.dir, a.processed, hash_all=a.hash_all)
    if why:
        print(f"stale: {shown(why)}")
        return 1
    print(f"fresh: {n['files']} files as the ingest read them, {n['hashed']} re-hashed")
    return 0


def _dictionary_args(p: argparse.ArgumentParser) -> None:
    """``dictionary``'s arguments."""
    p.add_argument("--readme", default="docs/tables.md", help="the Markdown file to update, - for stdout "
                                                         "(default docs/tables.md)")


def _claims_args(p: argparse.ArgumentParser) -> None:
    """``claims``'s arguments."""
    p.add_argument("--processed", required=True, help="folder of summary.parquet and series.parquet")
    p.add_argument("--out", required=True, help="CSV to write (atomically)")
    p.add_argument("--campaign", nargs="+", default=["qos-2026"], help="campaign(s) (default qos-2026)")
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--published", default=None,
                   help="folder of qos-part1.csv and qos-part2.csv (default data/published)")


def _pilot_args(p: argparse.ArgumentParser) -> None:
    """``pilot``'s arguments."""
    p.add_argument("pilot_dir", nargs="+", help="the pilot rounds' folders (<out>/<campaign>-pilot[-rN]), "
                                                "oldest first: each scenario is decided on its latest round")
    p.add_argument("--campaign-file", required=True, help="the campaign YAML the pilot is for")
    p.add_argument("--spread-from", default=None, help="a finished campaign's raw folder: within-arm spread")
    p.add_argument("--out", required=True, help="pilot.json to write (atomically)")


def _cbt_pilot_args(p: argparse.ArgumentParser) -> None:
    """``cbt-pilot``'s arguments."""
    p.add_argument("pilot_dir", help="the pilot's folder (data/raw/cbt/<campaign>-pilot)")
    p.add_argument("--campaign-file", required=True, help="the CBT campaign YAML")
    p.add_argument("--out", required=True, help="pilot.json to write (atomically)")


#: subcommand → (its line in ``--help``, the function adding its arguments, its handler), in ``--help``'s order
_SUBCOMMANDS = {
    "ingest": ("read every benchmark output below DIR (or the one file DIR) into Parquet tables",
               _ingest_args, _ingest),
    "manifest": ("(re)write DIR/MANIFEST.sha256 over every file below DIR", _manifest_args, _manifest),
    "report": ("assemble REPORTS/report.html from the executed notebooks in REPORTS", _report_args, _report),
    "run-notebook": ("execute NOTEBOOK into OUT with papermill, or write a stub saying "
                     "which campaigns DATA lacks (the notebook is not run then)", _run_notebook_args, _run_notebook),
    "failures": ("list the files the ingest could not read (exit 1 if any): "
                 "`make report` ends with it", _failures_args, _failures),
    "deps": ("write make rules tying each executed notebook to the campaigns it reads "
             "(stamps under PROCESSED/campaigns, rewritten only when the data changes)", _deps_args, _deps),
    "compare": ("A vs B on any data: per matching cell and metric, the runs of each side "
                "compared (analysis.stats.abtest); exit 1 when something regressed", _compare_args, _compare),
    "history": ("change points across runs in time (analysis.stats.history): per cell and metric, "
                "each change with its size, CI and p; exit 1 on an unacknowledged regression", _history_args,
                _history),
    "stale": ("whether the tables in PROCESSED are what an ingest of DATA would write now, by content (exit 0 "
              "fresh, 1 stale; one line says why): the Makefile's data step", _stale_args, _stale),
    "dictionary": ("write the data dictionary (every table, column and metric with its "
                   "unit; analysis.dictionary) into docs/tables.md's section", _dictionary_args, _dictionary),
    "claims": ("the claims of the two mClock-vs-WPQ studies with a verdict on our campaign(s) "
               "(analysis.stats.claims) → one CSV, the campaigns' rows stacked", _claims_args, _claims),
    "pilot": ("a campaign's pilot runs → go / no-go per scenario, pool sizes, repeats and "
              "machine time (analysis.stats.pilot) → pilot.json; exit 1 on no-go", _pilot_args, _pilot),
    "cbt-pilot": ("a CBT campaign's pilot (capture.cbt pilot) → go / no-go and the CBT "
                  "iterations for power 0.8 (analysis.stats.cbt_pilot) → pilot.json; exit 1 on no-go",
                  _cbt_pilot_args, _cbt_pilot),
}


def _parser() -> argparse.ArgumentParser:
    """``python -m analysis``'s parser: one subparser per :data:`_SUBCOMMANDS` entry, its handler as ``fn``."""
    prog = "cephqos" if Path(sys.argv[0]).name == "cephqos" else "python -m analysis"  # the console command
    ap = argparse.ArgumentParser(prog=prog, description=__doc__, epilog=EXIT_CODES,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, (help_line, add_arguments, handler) in _SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_line, description=help_line, epilog=EXIT_CODES,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        add_arguments(p)
        p.set_defaults(fn=handler)
    return ap


#: the exit codes of every command (``--help`` and docs/your-data.md show this table)
EXIT_CODES = """exit codes (every command):
  0   done; nothing found that fails (compare, history: no regression)
  1   the documented finding: some files failed (ingest), a regression (compare, history), no-go (pilots)
  2   bad input or nothing to do: a path that cannot be read, nothing readable, no workload in common
  3   cannot write the output (ingest: --out read-only or full)
  4   a worker process died (ingest)
  70  internal error (a bug here, not your data): one line, the traceback in the log file it names
  130 interrupted (Ctrl-C); 141 the output's reader closed the pipe (`| head`)
  143 terminated (SIGTERM), with one line saying so (ingest: whether the previous tables are unchanged)"""
INTERNAL_ERROR = 70
#: the exit code of a command ended by SIGTERM (128 + 15, what a shell reports for a process it killed)
TERMINATED = 143


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C's KeyboardInterrupt, so that what a command was doing
    unwinds the same way (temp files, staging folders and worker pools cleaned up by their ``finally``)."""


def _on_sigterm(signum, frame) -> None:
    import signal
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM while unwinding ends it at once
    raise Terminated()


def _stopped(cmd: str, args: argparse.Namespace, how: str) -> str:
    """The one line printed when ``cmd`` is interrupted or terminated (``how``); for ``ingest``, whether
    ``--out`` still holds the previous set (its ``tables.json`` is withdrawn only while tables are renamed)."""
    if cmd != "ingest" or not getattr(args, "out", None):
        return f"{cmd}: {how}"
    kept = (Path(args.out) / "tables.json").is_file()
    return f"{cmd}: {how}; " + ("the previous tables are unchanged" if kept else
                                "no complete table set is left in " + str(args.out)
                                + ": readers refuse it until an ingest succeeds")


def _option_error(a: argparse.Namespace) -> str | None:
    """Why the options of ``a`` cannot be used (one line), or None: a percentage (``--threshold``,
    ``--min-change``) that is not a finite number ≥ 0 (``nan``, ``inf`` or a negative one turns the
    regression gate off), ``--alpha`` outside (0, 1), ``--max-p`` outside (0, 1], an input path that is a
    FIFO, socket or device (reading one never ends, or is not data)."""
    import math
    from .ingest.discovery import shown
    for opt in ("threshold", "min_change"):
        v = getattr(a, opt, None)
        if v is None:
            continue
        try:
            f = float(str(v).strip().removesuffix("%"))
        except ValueError:
            f = math.nan
        if not math.isfinite(f) or f < 0:
            return f"--{opt.replace('_', '-')} {shown(str(v))}: expected a finite percentage ≥ 0, such as 5 or 5%"
    for opt, top in (("alpha", False), ("max_p", True)):
        v = getattr(a, opt, None)
        if v is not None and not (0 < v < 1 or (top and v == 1)):
            return (f"--{opt.replace('_', '-')} {v:g}: expected a probability between 0 and 1 "
                    + ("(0 < p ≤ 1)" if top else "(exclusive)"))
    if a.cmd in ("compare", "history"):
        for path in ([a.old, a.new] if a.cmd == "compare" else a.paths):
            why = _special_file(path)
            if why:
                return f"{shown(str(path))}: {why}"
    return None


def _special_file(path: str | None) -> str | None:
    """What ``path`` is when it is neither a folder nor a regular file (a FIFO, socket, device), else None."""
    import stat
    from .ingest.discovery import FILE_TYPES
    try:
        st = os.stat(path) if path is not None else None
    except OSError:
        return None  # the command itself says that it cannot be read
    if st is None or stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode):
        return None
    what = next((w for test, w in FILE_TYPES if test(st.st_mode)), "a special file")
    return (f"{what}, not a regular file or folder: expected a folder of benchmark outputs, an archive, one "
            "output file, or ingested tables")


def _crash(cmd: str, e: BaseException) -> int:
    """An unexpected exception: one line on stderr and the traceback in a log file; :data:`INTERNAL_ERROR`
    (never 1, which is a finding)."""
    import tempfile
    import time
    import traceback
    log = Path(tempfile.gettempdir()) / f"cephqos-{cmd}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    try:
        log.write_text("".join(traceback.format_exception(e)))
        where = f"traceback in {log}"
    except OSError:
        where = "traceback below"
        traceback.print_exception(e)
    msg = str(e).splitlines()[0][:300] if str(e) else ""
    print(f"internal error in {cmd}: {type(e).__name__}{': ' + msg if msg else ''} ({where}; exit "
          f"{INTERNAL_ERROR})", file=sys.stderr)
    return INTERNAL_ERROR


def main(argv: list[str] | None = None) -> int:
    from .speedups import skip_iri_grammar
    skip_iri_grammar()  # run-notebook, report and deps import nbformat: 1 s less each
    args = _parser().parse_args(argv)
    import signal
    import threading
    own = threading.current_thread() is threading.main_thread() and \
        signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # not where a host set its own (a notebook, pytest)
    if own:
        signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return _main(args)
    finally:
        if own:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _main(args: argparse.Namespace) -> int:
    """:func:`main` once the arguments are parsed: the command, and its exit code for every way it ends."""
    try:
        bad = _option_error(args)
        if bad:
            print(f"error: {bad}", file=sys.stderr)
            return 2
        _set_units(args)
        return args.fn(args)
    except Terminated:
        print(_stopped(args.cmd, args, "terminated (SIGTERM)"), file=sys.stderr)
        return TERMINATED
    except KeyboardInterrupt:
        print(_stopped(args.cmd, args, "interrupted"), file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of the output went away (`| head`): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as e:  # noqa: BLE001 - a bug must not look like a finding (exit 1) or bad input (2)
        return _crash(args.cmd, e)


if __name__ == "__main__":
    sys.exit(main())
