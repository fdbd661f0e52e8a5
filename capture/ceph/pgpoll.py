#!/usr/bin/python3
"""Background-operation timeline poller (runs under Debian's /usr/bin/python3 for ``rados``).

Writes the ``cephqos-pg-timeline`` JSONL (version 1) read by ``analysis.ingest.ceph_timeline``:
a header line; one sample line per poll (``pg dump pgs`` through the mgr: per-PG state, objects,
bytes, degraded/misplaced/unfound, snaptrimq_len, scrub stamps as unix seconds); event lines for
``scrub``/``deep-scrub`` ``starts``/``ok`` taken from the cluster log (its own timestamps); mark lines
the harness sends on stdin (one JSON object per line); a trailer ``{"end": true}`` when stdin closes.
One long-lived process: a ``ceph`` CLI call per second would cost ~0.3 s of CPU on a 2-core VM.
Stdlib, rados and pgpoll_stamp.py beside it.
"""
import argparse
import json
import os
import re
import select
import sys
import time

import rados

# run as a script, so its own folder is on sys.path: the one copy of the stamp parser
from pgpoll_stamp import stamp  # noqa: E402

FIELDS = ["pgid", "state", "num_objects", "num_bytes", "degraded", "misplaced", "unfound",
          "snaptrimq_len", "last_scrub_stamp", "last_deep_scrub_stamp"]
LOG_RE = re.compile(r"^(\S+) (\S+) .*: cluster \[\w+\] (\S+) ((?:deep-)?scrub) (starts|ok|\d+ errors|.*)$")



def pg_rows(cluster):
    cmd = json.dumps({"prefix": "pg dump", "dumpcontents": ["pgs"], "format": "json"})
    ret, out, err = cluster.mgr_command(cmd, b"", timeout=10)
    if ret != 0:
        raise RuntimeError(f"pg dump: {ret} {err}")
    doc = json.loads(out)
    stats = doc.get("pg_stats", doc) if isinstance(doc, dict) else doc
    rows = []
    for p in stats:
        s = p.get("stat_sum", {})
        rows.append([p["pgid"], p["state"], s.get("num_objects", 0), s.get("num_bytes", 0),
                     s.get("num_objects_degraded", 0), s.get("num_objects_misplaced", 0),
                     s.get("num_objects_unfound", 0), p.get("snaptrimq_len", 0),
                     stamp(p.get("last_scrub_stamp")), stamp(p.get("last_deep_scrub_stamp"))])
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--conf", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cluster-log", required=True)
    ap.add_argument("--interval", type=float, default=1.0)
    a = ap.parse_args()
    cluster = rados.Rados(conffile=a.conf)
    cluster.connect(timeout=20)
    pools = {str(cluster.pool_lookup(n)): n for n in cluster.list_pools()}
    logf = open(a.cluster_log, "r", errors="replace")
    logf.seek(0, os.SEEK_END)
    n = 0
    with open(a.out + ".tmp", "w", buffering=1) as out:
        def put(obj):
            out.write(json.dumps(obj, separators=(",", ":")) + "\n")
        put({"format": "cephqos-pg-timeline", "version": 1, "ceph_version": rados_version(cluster),
             "pools": pools, "pg_fields": FIELDS, "interval_s": a.interval, "started_unix": time.time()})
        stdin_open = True
        next_t = time.time()
        while stdin_open:
            try:
                rows = pg_rows(cluster)
                put({"t": round(time.time(), 3), "pgs": rows})
            except Exception as e:  # a failed poll is recorded, never fatal
                put({"t": round(time.time(), 3), "error": str(e)[:300]})
            n += 1
            for line in logf.readlines():
                m = LOG_RE.match(line.strip())
                if m:
                    put({"t": stamp(m.group(1)), "event": f"{m.group(4)} {m.group(5)}",
                         "pgid": m.group(3), "osd": m.group(2)})
            next_t += a.interval
            while True:
                wait = next_t - time.time()
                r, _, _ = select.select([sys.stdin], [], [], max(0.0, wait))
                if r:
                    line = sys.stdin.readline()
                    if not line:
                        stdin_open = False
                        break
                    if line.strip():
                        req = json.loads(line)
                        if "do" in req:
                            t = do(cluster, req, put)
                            sys.stdout.write(json.dumps({"t": t}) + "\n")
                            sys.stdout.flush()
                        else:
                            put(req)
                    continue
                break
            if next_t < time.time() - a.interval:  # fell behind: do not burst
                next_t = time.time()
        for line in logf.readlines():
            m = LOG_RE.match(line.strip())
            if m:
                put({"t": stamp(m.group(1)), "event": f"{m.group(4)} {m.group(5)}",
                     "pgid": m.group(3), "osd": m.group(2)})
        put({"t": round(time.time(), 3), "end": True, "samples": n})
    os.replace(a.out + ".tmp", a.out)
    cluster.shutdown()


def do(cluster, req, put):
    """Start a background operation from this process (a `ceph` CLI call costs ~1.5 s of start-up
    here, which would blur the start time).  The mark is written just before the request is sent,
    and ``<mark>_returned`` when Ceph acknowledged it.  Returns the mark's time."""
    op = req["do"]
    t = round(time.time(), 3)
    if op == "deep_scrub":
        put({"t": t, "mark": "deep_scrub_requested", "pool": req["pool"]})
        ret, _, err = cluster.mgr_command(json.dumps({"prefix": "osd pool deep-scrub",
                                                      "who": [req["pool"]]}), b"", timeout=30)
        name = "deep_scrub_requested"
    elif op == "snaptrim":
        put({"t": t, "mark": "snap_removed", "pool": req["pool"]})
        io = cluster.open_ioctx(req["pool"])
        io.remove_snap(req["snap"])
        io.close()
        ret, err, name = 0, "", "snap_removed"
    elif op == "recovery":
        put({"t": t, "mark": "recovery_enabled"})
        ret, err = 0, ""
        for flag in ("nobackfill", "norecover", "norebalance"):
            r, _, e = cluster.mon_command(json.dumps({"prefix": "osd unset", "key": flag}), b"", timeout=30)
            ret, err = (r, e) if r != 0 else (ret, err)
        name = "recovery_enabled"
    else:
        raise SystemExit(f"pgpoll: unknown operation {op!r}")
    put({"t": round(time.time(), 3), "mark": name + "_returned", "ret": ret, "err": str(err)[:200]})
    return t


def rados_version(cluster):
    try:
        ret, out, _ = cluster.mon_command(json.dumps({"prefix": "version", "format": "json"}), b"")
        return json.loads(out).get("version", "") if ret == 0 else ""
    except Exception:
        return ""


if __name__ == "__main__":
    main()
