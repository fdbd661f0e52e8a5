"""Work out tests/outside/expected.json by hand from the archived files, with the standard library only.

This never imports `analysis` (the package under test): every expected value below is read from the
files with json / re / pathlib and converted with the unit rules of fio itself:
  - fio 3.x JSON: bw_bytes is B/s, clat_ns.mean is ns, runtime is ms;
  - fio 2.x JSON: bw is KiB/s (x 1024 -> B/s), clat.mean is usec (x 1000 -> ns), runtime is ms;
  - fio logs: time is ms; bw logs are KiB/s; lat/clat/slat logs are usec in fio 2.x (nsec from fio 3.0);
  - terse (--minimal) v3: bw KiB/s, runtime ms, latencies usec, iops rounded to an integer.

Run:  python tests/outside/derive_expected.py          (rewrites expected.json)
      python tests/outside/derive_expected.py --check  (exit 1 if expected.json differs)
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

# job options that change the workload (the rest - filenames, log names, percentile lists - do not)
WORKLOAD_OPTIONS = ("rw", "readwrite", "bs", "blocksize", "iodepth", "numjobs", "size", "io_size", "filesize",
                    "nrfiles", "runtime", "time_based", "ramp_time", "rate", "rate_iops", "rate_process",
                    "rwmixread", "rwmixwrite", "ioengine", "direct", "io_submit_mode", "log_avg_msec",
                    "group_reporting", "stonewall", "loops", "overwrite")
DDIRS = ("read", "write", "trim")


def fio_json(path: Path) -> dict:
    """One fio JSON file: version, jobs with their workload options and per used direction iops, bw (B/s),
    clat mean (ns) and runtime (ms); per reporting group (same groupid) the summed iops and bw."""
    text = path.read_text()
    doc = json.loads(text[text.index("{"):])          # tolerate text before the JSON object
    version = doc.get("fio version")
    fio2 = version.startswith("fio-2.")
    glob = doc.get("global options", {})
    jobs, groups = [], {}
    for j in doc["jobs"]:
        opts = {**glob, **j.get("job options", {})}
        job = {"jobname": j["jobname"], "groupid": j["groupid"],
               "options": {k: opts[k] for k in WORKLOAD_OPTIONS if k in opts}, "ddirs": {}}
        for dd in DDIRS:
            d = j.get(dd)
            if not d or not d.get("total_ios", d.get("io_bytes", 0)):
                continue                               # a direction the job did not use
            if fio2:
                v = {"iops": d["iops"], "bw_Bps": d["bw"] * 1024, "clat_mean_ns": d["clat"]["mean"] * 1000,
                     "runtime_ms": d["runtime"]}
            else:
                v = {"iops": d["iops"], "bw_Bps": d["bw_bytes"], "clat_mean_ns": d["clat_ns"]["mean"],
                     "runtime_ms": d["runtime"]}
            job["ddirs"][dd] = v
            g = groups.setdefault(str(j["groupid"]), {"jobs": [], "ddirs": {}})
            s = g["ddirs"].setdefault(dd, {"iops_sum": 0.0, "bw_Bps_sum": 0})
            s["iops_sum"] += v["iops"]
            s["bw_Bps_sum"] += v["bw_Bps"]
        groups.setdefault(str(j["groupid"]), {"jobs": [], "ddirs": {}})["jobs"].append(j["jobname"])
        jobs.append(job)
    return {"kind": "fio-json", "fio_version": version, "n_jobs": len(jobs),
            "groupids": sorted({j["groupid"] for j in jobs}), "jobs": jobs, "groups": groups}


def fio_log(path: Path, latency_unit: str | None, why: str) -> dict:
    """One fio log: rows as numbers, first and last row, row count, and where time restarts (several jobs
    written into one file: each restart begins the next job's block)."""
    rows = [[float(x) if "." in x else int(x) for x in line.split(",")]
            for line in path.read_text().splitlines() if line.strip()]
    restarts = [i for i in range(1, len(rows)) if rows[i][0] < rows[i - 1][0]]
    bounds = [0, *restarts, len(rows)]
    segments = [{"rows": b - a, "first": rows[a], "last": rows[b - 1]} for a, b in zip(bounds, bounds[1:])]
    kind = re.search(r"_(lat|clat|slat|bw|iops)\.(?:\d+\.)?log$", path.name).group(1)
    return {"kind": "fio-log", "log_type": kind, "rows": len(rows), "first": rows[0], "last": rows[-1],
            "columns": "time_ms, value, ddir, bs", "value_unit": {"bw": "KiB/s", "iops": "1/s"}.get(kind, latency_unit),
            "unit_why": why, "segments": segments}


def terse_v3(line: str) -> dict:
    """One fio --minimal (terse version 3) line: 5 header fields, then 41 per direction (read, write)."""
    f = line.split(";")
    assert f[0] == "3", line[:20]
    out = {"jobname": f[2], "groupid": int(f[3]), "fio_version": f[1], "ddirs": {}}
    for dd, base in (("read", 5), ("write", 46)):
        io_kib, bw_kib, iops, runt = (int(x) for x in f[base:base + 4])
        if io_kib:
            out["ddirs"][dd] = {"iops": iops, "bw_Bps": bw_kib * 1024, "runtime_ms": runt,
                                "clat_mean_ns": float(f[base + 10]) * 1000, "io_bytes": io_kib * 1024}
    return out


def fio_text(path: Path) -> dict:
    """fio's normal output with --output-format=terse,normal: per job its (g=N) header (rw, bs, iodepth),
    its terse line (exact numbers) and the normal output's IOPS= and runtime, checked against each other."""
    text = path.read_text()
    heads = {m["job"]: {"groupid": int(m["g"]), "rw": m["rw"], "bs": m["bs"], "iodepth": int(m["qd"])}
             for m in re.finditer(r"^(?P<job>\S+): \(g=(?P<g>\d+)\): rw=(?P<rw>\w+), bs=\(R\) (?P<bs>\S+?)-\S+, .*"
                                  r"iodepth=(?P<qd>\d+)$", text, re.M)}
    normal = {m["job"]: {"iops": m["iops"], "runtime_ms": int(m["ms"])}
              for m in re.finditer(r"^(?P<job>\S+): \(groupid=\d+, jobs=1\).*\n\s+\w+: IOPS=(?P<iops>[\d.k]+), "
                                   r"BW=\S+ \([^)]*\)\(\S+/(?P<ms>\d+)msec\)", text, re.M)}
    jobs = []
    for line in text.splitlines():
        if line.startswith("3;fio-"):
            t = terse_v3(line)
            t.update(heads[t["jobname"]])
            (dd, v), = t["ddirs"].items()
            assert normal[t["jobname"]]["runtime_ms"] == v["runtime_ms"]
            t["normal_output_iops"] = normal[t["jobname"]]["iops"]
            jobs.append(t)
    version = re.search(r"^(fio-\S+)$", text, re.M).group(1)
    groups = {}
    for j in jobs:
        for dd, v in j["ddirs"].items():
            s = groups.setdefault(str(j["groupid"]), {"jobs": [], "ddirs": {}})["ddirs"].setdefault(
                dd, {"iops_sum": 0, "bw_Bps_sum": 0})
            s["iops_sum"] += v["iops"]
            s["bw_Bps_sum"] += v["bw_Bps"]
        groups[str(j["groupid"])]["jobs"].append(j["jobname"])
    return {"kind": "fio-text", "formats": ["terse v3", "normal"], "fio_version": version, "n_jobs": len(jobs),
            "groupids": sorted(groups, key=int), "jobs": jobs, "groups": groups}


FIO2_US = ("fio 2.x writes lat/clat/slat log values in usec (nsec only from fio 3.0); the JSON beside these logs "
           "says fio-2.18-59-g618e and its clat.mean (usec) matches the clat logs' scale")


def derive() -> dict:
    out = {}
    d = HERE / "ceph-aprg-rados-stonewall"
    out[d.name] = {"fio_result.json": fio_json(d / "fio_result.json")}

    d = HERE / "virtualclient-fio326"
    out[d.name] = {p.name: fio_json(p) for p in sorted(d.glob("*.json"))}

    d = HERE / "arcaflow-poisson-rate"
    out[d.name] = {p.name: fio_json(p) for p in sorted(d.glob("*.json"))}

    d = HERE / "fioplot-fio218-2jobs-logs"
    files = {"randwrite-01-02.json": fio_json(d / "randwrite-01-02.json")}
    for p in sorted(d.glob("*.log")):
        files[p.name] = fio_log(p, "usec", FIO2_US)
    out[d.name] = files

    d = HERE / "fio-plot-samples-fio21-logs"
    out[d.name] = {p.name: fio_log(p, None, "bw/iops logs only: bw in KiB/s and iops per second in every fio "
                                            "version; no latency log and no JSON beside them")
                   for p in sorted(d.glob("*.log"))}

    d = HERE / "hikalium-cdm-text"
    out[d.name] = {p.name: fio_text(p) for p in sorted(d.glob("*.txt"))}
    return out


def render() -> str:
    return json.dumps(derive(), indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":
    target = HERE / "expected.json"
    new = render()
    if "--check" in sys.argv:
        same = target.exists() and target.read_text() == new
        print("expected.json is up to date" if same else "expected.json differs from derive_expected.py")
        sys.exit(0 if same else 1)
    target.write_text(new)
    print(f"wrote {target}")
