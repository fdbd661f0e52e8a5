"""S3 load generator for radosgw that prints getput's result lines (:mod:`capture.rgw.getput_format`),
so the project's getput reader reads its output and a CBT getput archive alike.

Run with Debian's ``/usr/bin/python3`` (``python3-boto3``, the S3 library getput's ``--api s3`` uses)::

    python3 -m capture.rgw.loadgen --endpoint http://127.0.0.1:7480 --access A --secret S \\
        --cname gp-run1 --ctype shared --procs 8 --osize 4m --runtime 60 --tests p,g --psum --json out.json

Per test, ``--procs`` processes (fork) start together at a common instant and each runs its operation
back to back for ``--runtime`` seconds (GETs: ``--get-runtime``), timing every call (``time.monotonic``, seconds).  ``p``: PUT of a
random ``--osize`` payload (made once per process) to ``<cname>`` (``--ctype shared``: one bucket for all;
``byproc``: ``<cname>-<proc>``; ``bynode`` is ``shared`` on one node) as ``<proc>-<n>``; ``g``: GET of the
objects that process wrote, round robin, the body read to the end (a failed PUT is tried again with
the same key, so the keys written are 0..ops-1).  Buckets are created before the
first test (outside the timing).  A failed call is counted in Errs and not retried (botocore retries
off: getput's Ret column stays 0).  ``--json`` also writes every op's latency per process.

getput's naming (``--rank R``, as getput names things, and what :mod:`capture.rgw.getput_cli` passes when CBT
runs it): buckets ``<cname>-R-<proc>`` (byproc), ``<cname>-R`` (bynode), ``<cname>`` (shared); keys
``<oname>-R-<proc>-<n>`` with n from 1; the ``Rank`` column first on every line.  ``--errmax N``: a process
stops its test after N failed calls (getput's ``--errmax``; no limit by default).  A bucket that already
exists and is ours is used as it is (CBT's iterations reuse getput's container names).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from capture.rgw.getput_format import ProcResult, cpu_busy_percent, header, test_lines  # noqa: E402


def parse_size(s: str) -> int:
    """'4m' → 4194304 (k, m, g: powers of 1024, as getput's cvtFromKMG)."""
    s = s.strip().lower()
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(s[-1:], 1)
    return int(s[:-1] if s[-1:] in "kmg" else s) * mult


def proc_stat() -> str:
    with open("/proc/stat") as f:
        for ln in f:
            if ln.startswith("cpu "):
                return ln.rstrip()
    raise RuntimeError("/proc/stat has no 'cpu ' line")


def client(a: argparse.Namespace):
    import boto3
    from botocore.config import Config
    cfg = Config(retries={"max_attempts": 1, "mode": "standard"}, max_pool_connections=2,
                 connect_timeout=10, read_timeout=120, s3={"addressing_style": "path"})
    return boto3.client("s3", endpoint_url=a.endpoint, aws_access_key_id=a.access,
                        aws_secret_access_key=a.secret, region_name="default", config=cfg)


def bucket(a: argparse.Namespace, proc: int) -> str:
    if a.rank is None:
        return f"{a.cname}-{proc}" if a.ctype == "byproc" else a.cname
    return {"byproc": f"{a.cname}-{a.rank}-{proc}", "bynode": f"{a.cname}-{a.rank}"}.get(a.ctype, a.cname)


def key(a: argparse.Namespace, proc: int, n: int) -> str:
    """The key of a process's n-th object (n from 0)."""
    return f"{proc}-{n}" if a.rank is None else f"{a.oname}-{a.rank}-{proc}-{n + 1}"


def worker(a: argparse.Namespace, test: str, proc: int, start_at: float, q) -> None:
    s3 = client(a)
    b = bucket(a, proc)
    lat: list[float] = []
    ops = errs = 0
    body = os.urandom(a.osize_b) if test == "p" else b""
    nput = a.written.get(proc, 0) if test == "g" else 0
    if test == "g" and not nput:
        q.put((proc, {"ops": 0, "errs": 0, "lat": [], "t0": start_at, "tf": start_at, "xfer": a.osize_b}))
        return
    while time.time() < start_at:
        time.sleep(min(0.01, max(0.0, start_at - time.time())))
    t0 = time.time()
    end = time.monotonic() + (a.runtime if test == "p" or a.get_runtime is None else a.get_runtime)
    xfer = a.osize_b
    while time.monotonic() < end and (a.errmax is None or errs < a.errmax):
        k = key(a, proc, ops if test == "p" else (ops + errs) % nput)  # PUT keys 0..ops-1 all written
        t = time.monotonic()
        try:
            if test == "p":
                s3.put_object(Bucket=b, Key=k, Body=body)
            else:
                r = s3.get_object(Bucket=b, Key=k)
                xfer = len(r["Body"].read())
            lat.append(time.monotonic() - t)
            ops += 1
        except Exception:  # noqa: BLE001 — getput counts any failed call in Errs
            errs += 1
    q.put((proc, {"ops": ops, "errs": errs, "lat": lat, "t0": t0, "tf": time.time(), "xfer": xfer}))


def run_test(a: argparse.Namespace, test: str) -> tuple[list[ProcResult], float, dict]:
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    start_at = time.time() + 1.0
    cpu0 = proc_stat()
    ps = [ctx.Process(target=worker, args=(a, test, i, start_at, q)) for i in range(a.procs)]
    for p in ps:
        p.start()
    got = dict(q.get(timeout=a.runtime + 600) for _ in ps)
    for p in ps:
        p.join(60)
    cpu = cpu_busy_percent(cpu0, proc_stat())
    res = [ProcResult(ops=got[i]["ops"], errs=got[i]["errs"], latencies=got[i]["lat"], t0=got[i]["t0"],
                      tf=got[i]["tf"], xfer=got[i]["xfer"]) for i in range(a.procs)]
    if test == "p":  # what each process wrote (keys 0..ops-1), for the GETs
        a.written = {i: got[i]["ops"] for i in range(a.procs)}
    return res, cpu, got


def create_buckets(a: argparse.Namespace) -> None:
    """Every bucket of the run, before the first test; one that exists and is ours is kept as it is."""
    s3 = client(a)
    for b in sorted({bucket(a, i) for i in range(a.procs)}):
        try:
            s3.create_bucket(Bucket=b)
        except s3.exceptions.BucketAlreadyOwnedByYou:
            pass


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python3 -m capture.rgw.loadgen", description=__doc__.split("\n")[0])
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--access", required=True)
    ap.add_argument("--secret", required=True)
    ap.add_argument("--cname", required=True, help="bucket name (prefix with --ctype byproc)")
    ap.add_argument("--ctype", choices=("shared", "bynode", "byproc"), default="shared")
    ap.add_argument("--procs", type=int, default=1)
    ap.add_argument("--osize", default="4m")
    ap.add_argument("--runtime", type=float, default=60.0, help="seconds per test")
    ap.add_argument("--get-runtime", type=float, help="seconds of the get test (default: --runtime)")
    ap.add_argument("--tests", default="p,g", help="comma-separated: p (put), g (get)")
    ap.add_argument("--psum", action="store_true", help="a line per process before each total")
    ap.add_argument("--json", help="also write every op's latency (s) per process here")
    ap.add_argument("--rank", help="getput's naming and Rank column with this rank (module doc)")
    ap.add_argument("--oname", help="object name prefix (with --rank)")
    ap.add_argument("--errmax", type=int, help="a process stops its test after this many errors")
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = parser()
    a = ap.parse_args(argv)
    a.osize_b = parse_size(a.osize)
    a.written = {}
    tests = [t.strip() for t in a.tests.split(",") if t.strip()]
    if any(t not in ("p", "g") for t in tests):
        ap.error("--tests: only p and g")
    if (a.rank is None) != (a.oname is None):
        ap.error("--rank and --oname go together (getput's naming)")
    create_buckets(a)
    print(header(a.rank), flush=True)
    doc = {"argv": sys.argv[1:], "osize_B": a.osize_b, "procs": a.procs, "ctype": a.ctype, "tests": {}}
    for t in tests:
        res, cpu, got = run_test(a, t)
        for ln in test_lines(t, res, cpu, psum=a.psum, rank=a.rank):
            print(ln, flush=True)
        doc["tests"][t] = {"cpu_percent": cpu, "procs": [{"proc": i, "ops": r.ops, "errs": r.errs, "t0": r.t0,
                                                          "tf": r.tf, "xfer_B": r.xfer,
                                                          "latency_s": [round(x, 6) for x in r.latencies]}
                                                         for i, r in enumerate(res)]}
    if a.json:
        tmp = Path(a.json + ".tmp")
        tmp.write_text(json.dumps(doc))
        os.replace(tmp, a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
