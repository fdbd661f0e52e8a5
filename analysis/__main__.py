"""Command line: ``python -m analysis ingest|manifest|report|run-notebook|deps`` (``--help`` on each)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def _ingest_dask(args: argparse.Namespace) -> int:
    from .ingest.base import IngestError
    from .ingest.scale import ingest_dask
    try:
        res = ingest_dask(args.dir, args.out, address=args.dask or None, workers=args.workers,
                          progress=None if not args.no_progress else False)
    except IngestError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return _outcome(res.files, res.failed,
                    f"{res.rows['summary']} summary rows, {res.rows['series']} series rows in {res.batches} "
                    f"batches on {res.workers} dask worker(s), {res.seconds:.1f} s → "
                    f"{args.out}/{{files.parquet,summary/,series/}}")


def _outcome(files, failed: list[tuple[str, str]], tables_line: str) -> int:
    """Print the files per status, the tables line and each failure (file:line: what); the exit code."""
    counts = files["status"].value_counts().to_dict() if len(files) else {}
    print(f"{len(files)} files: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    print(tables_line)
    if failed:
        print(f"\n{len(failed)} file(s) failed:", file=sys.stderr)
        for _, err in failed:
            print(f"  {err}", file=sys.stderr)
        return 1
    return 0


def _ingest(args: argparse.Namespace) -> int:
    if args.dask is not None:
        return _ingest_dask(args)
    from .ingest.base import IngestError
    from .ingest.walk import ingest, write_tables
    try:
        res = ingest(args.dir, progress=None if not args.no_progress else False, jobs=args.jobs or _cores())
    except IngestError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    paths = write_tables(res, args.out)
    return _outcome(res.files, res.failed, f"{len(res.summary)} summary rows, {len(res.series)} series rows → "
                    + ", ".join(str(p) for p in paths.values()))


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _manifest(args: argparse.Namespace) -> int:
    from .ingest.walk import write_manifest
    p = write_manifest(Path(args.dir))
    n = sum(1 for line in p.read_text().splitlines() if line.strip())
    print(f"{p}: {n} files")
    return 0


def _report(a: argparse.Namespace) -> int:
    from .report import build_report
    print(build_report(a.reports, a.figures))
    return 0


def _deps(a: argparse.Namespace) -> int:
    from .report import notebook_deps, write_if_changed
    text = notebook_deps(a.notebooks, a.processed, reports=a.reports)
    write_if_changed(Path(a.out), text)
    return 0


def _run_notebook(a: argparse.Namespace) -> int:
    from .report import missing_campaigns, write_stub
    missing = missing_campaigns(a.notebook, a.processed)
    if missing:
        print(f"{a.notebook}: no runs of {', '.join(missing)} in {a.data}: writing a stub section")
        write_stub(a.notebook, missing, a.data, a.out)
        return 0
    extra = [x for x in a.papermill_args if x != "--"]
    from papermill.cli import papermill as papermill_cli  # in this process: one interpreter start less
    try:
        papermill_cli.main(args=[a.notebook, a.out, *extra], standalone_mode=False)
    except Exception as e:  # PapermillExecutionError and friends: the cell and traceback are printed above
        print(f"{a.notebook}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("ingest", help="read every benchmark output below DIR into Parquet tables")
    a.add_argument("dir")
    a.add_argument("--out", default="data/processed", help="output folder (default data/processed)")
    a.add_argument("--no-progress", action="store_true", help="no progress bar")
    a.add_argument("--jobs", type=int, default=0,
                   help="processes reading files (default 0: one per core); the tables are the same for any number")
    a.add_argument("--dask", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="read the files as Dask tasks: on the cluster at ADDRESS (tcp://host:8786), or without "
                        "an address on a LocalCluster here; writes Parquet partitioned by campaign and kind")
    a.add_argument("--workers", type=int, default=None,
                   help="LocalCluster worker processes (one thread each; default one per core)")
    a.set_defaults(fn=_ingest)
    m = sub.add_parser("manifest", help="(re)write DIR/MANIFEST.sha256 over every file below DIR")
    m.add_argument("dir")
    m.set_defaults(fn=_manifest)
    r = sub.add_parser("report", help="assemble REPORTS/report.html from the executed notebooks in REPORTS")
    r.add_argument("reports", nargs="?", default="reports")
    r.add_argument("--figures", default="figures", help="folder of the figures the notebooks wrote")
    r.set_defaults(fn=_report)
    n = sub.add_parser("run-notebook", help="execute NOTEBOOK into OUT with papermill, or write a stub saying "
                                           "which campaigns DATA lacks (the notebook is not run then)")
    n.add_argument("notebook")
    n.add_argument("out")
    n.add_argument("--data", required=True)
    n.add_argument("--processed", required=True)
    n.add_argument("papermill_args", nargs=argparse.REMAINDER, help="after --: passed to papermill")
    n.set_defaults(fn=_run_notebook)
    d = sub.add_parser("deps", help="write make rules tying each executed notebook to the campaigns it reads "
                                    "(stamps under PROCESSED/campaigns, rewritten only when the data changes)")
    d.add_argument("notebooks", nargs="+")
    d.add_argument("--processed", required=True)
    d.add_argument("--reports", default="reports")
    d.add_argument("--out", required=True, help="the makefile fragment to write")
    d.set_defaults(fn=_deps)
    args = ap.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
