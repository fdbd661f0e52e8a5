"""fio's normal and terse text outputs (analysis.ingest.fio_text) against fio's JSON of the same run.

Each output here holds the JSON beside the text formats of one run (fio ``--output-format=normal,json,terse``:
tests/fixtures/fio_text, made by fio 3.33 with make_fixtures.sh; and, when fio is installed, runs made by the
tests).  The text parts are split off with the json module and line patterns, read by the text reader, and
compared with ``analysis.ingest.fio.decode`` of the JSON, to the precision each format prints:

* terse: io KiB, bw KiB/s and IOPS are fio's integers (truncated), so ``0 ≤ JSON − terse < 1024 B`` (io,
  bw) and ``terse == floor(JSON IOPS)``; runtime ms is exact; latency min/max and percentiles are ns / 1000
  truncated to µs: ``0 ≤ JSON − terse < 1000 ns``; means and stdevs keep 6 decimals of µs: within 0.001 ns.
* normal: IOPS, BW and io are num2str's 4 significant digits (at least 3 survive: within 0.5 %, the 1.024 of
  IEC prefixes and the remainder of an earlier division dropped: 0.6 %); ``total_ios`` (the ``issued``
  line) and the runtime are exact; latency lines are in the unit fio's stat.h picks from min/max/stdev (the
  test picks it from the JSON by fio's rule): min/max truncated to it (6 digits, then a k suffix: within
  5e-5), avg/stdev within half of 0.01 of it; percentiles rounded up to the unit show_clat_percentiles picks:
  ``0 ≤ normal − JSON < unit``.

The third-party corpus (../shared/corpus/fio_text, read in place) is checked against values typed from the
files; damaged input fails with ``file:line: expected …``.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from analysis.ingest import IngestError, detect, read
from analysis.ingest import fio, fio_jobfile, fio_text
from conftest import CORPUS, FIXTURES
from test_fuzz import mutated, parse_directly

FIX = FIXTURES / "fio_text"
COMBINED = sorted(FIX.glob("*.out"))
TEXT = CORPUS / "fio_text"
#: hypothesis examples per damaged-input test (FUZZ_EXAMPLES_TEXT=3000 for a longer hunt)
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES_TEXT", "150"))


# ------------------------------------------------------------------------------------------ helpers
def split(text: str) -> tuple[str, str, str, dict]:
    """A combined fio output → (JSON text, terse lines, the rest: normal output, the decoded JSON)."""
    m = re.search(r'^\{\s*"fio version"', text, re.M)
    doc, end = json.JSONDecoder().raw_decode(text[m.start():])
    rest = text[:m.start()] + text[m.start() + end:]
    lines = rest.split("\n")
    terse = [i for i, ln in enumerate(lines) if re.match(r"^[2345];", ln)]
    terse += [i + 1 for i in terse if i + 1 < len(lines) and lines[i + 1].startswith(";")]  # v2 description
    return (text[m.start():m.start() + end] + "\n", "\n".join(lines[i] for i in sorted(terse)) + "\n",
            "\n".join(ln for i, ln in enumerate(lines) if i not in set(terse)), doc)


def rows(parsed) -> dict[tuple[str, str, str], float]:
    s = parsed.summary
    return {(str(j), str(d), str(m)): float(v) for j, d, m, v in zip(s["job"], s["ddir"], s["metric"], s["value"])}


def parts(path: Path, tmp: Path) -> tuple[dict, dict | None, dict | None, dict, object, object]:
    """(JSON rows, terse rows or None, normal rows or None, the JSON document, terse Parsed, normal Parsed)."""
    js, terse, normal, doc = split(path.read_text())
    (tmp / "j.json").write_text(js)
    (tmp / "t.txt").write_text(terse)
    (tmp / "n.txt").write_text(normal)
    j = rows(fio.decode(tmp / "j.json", js.encode()))
    t = n = pt = pn = None
    if terse.strip():
        assert fio_text.sniff(terse.encode()) == "fio-terse"
        pt = read(tmp / "t.txt")
        assert pt.kind == "fio-terse"
        t = rows(pt)
    if "(groupid=" in normal:
        assert fio_text.sniff(normal.encode()) == "fio-text"
        pn = read(tmp / "n.txt")
        assert pn.kind == "fio-text"
        n = rows(pn)
    return j, t, n, doc, pt, pn


def _lat_unit(st: dict) -> float:
    """The unit fio 3.x prints a latency line in (stat.h nsec_to_msec / nsec_to_usec), from its ns stats."""
    mn, mx, dev = st["min"], st["max"], st["stddev"]
    if mn > 2_000_000 and mx > 99_999_999 and dev > 1_000_000.0:
        return 1e6
    if mn > 2000 and mx > 99_999 and dev > 1000.0:
        return 1e3
    return 1.0


def _pct_unit(pct: dict) -> float:
    """The unit fio 3.x prints percentiles in (stat.c show_clat_percentiles), from the values it prints."""
    v = [float(x) for x in pct.values()]
    mn, mx = min(v), max(v)
    return 1e6 if mn > 2_000_000 and mx > 99_999_999 else 1e3 if mn > 2000 and mx > 99_999 else 1.0


def check_terse(t: dict, j: dict) -> int:
    """Terse against JSON (module docstring's tolerances); returns the number of values compared."""
    used = {(job, d) for job, d, _ in t}
    extra = {k for k in j if (k[0], k[1]) in used and k not in t}
    assert {k[2] for k in extra} <= {"total_ios", "slat_samples", "clat_samples", "lat_samples"}, extra
    n = 0
    for k, tv in t.items():
        jv, metric = j[k], k[2]
        if metric == "iops":
            assert tv == math.floor(jv), k
        elif metric in ("bw", "io_bytes"):
            assert 0 <= jv - tv < 1024, (k, jv, tv)
        elif metric == "runtime":
            assert tv == jv, k
        elif metric.endswith(("_mean", "_stddev")):
            assert abs(jv - tv) <= 1e-3 + 1e-12 * abs(jv), (k, jv, tv)
        else:  # min, max, percentiles: ns / 1000 truncated
            assert 0 <= jv - tv < 1000, (k, jv, tv)
        n += 1
    return n


def check_normal(nr: dict, j: dict, doc: dict) -> int:
    """Normal output against JSON (module docstring's tolerances); returns the number of values compared."""
    # fio 3.33's normal "mixed:" line of unified_rw_reporting=both prints zeros (the JSON and terse hold the
    # values): the mixed direction is compared in the terse check only
    assert {k for k in j if k[2] not in ("slat_samples", "clat_samples", "lat_samples") and k[1] != "mixed"} == \
        {k for k in nr if k[1] != "mixed"}
    entries = {e["jobname"]: e for e in doc["jobs"]}
    n = 0
    for k, nv in nr.items():
        if k[1] == "mixed":
            continue
        jv, metric = j[k], k[2]
        e = entries[k[0]][k[1]]
        if metric == "iops":
            fv = math.floor(jv)  # fio prints the integer (1000 * ios) / runtime
            assert abs(nv - fv) <= 0.006 * fv + 0.5, (k, jv, nv)
        elif metric in ("bw", "io_bytes"):
            assert abs(nv - jv) <= 0.006 * jv + 0.5, (k, jv, nv)
        elif metric in ("total_ios", "runtime"):
            assert nv == jv, k
        else:
            lk, stat = metric.split("_", 1)
            if stat.startswith("p"):
                u = _pct_unit(e[f"{lk}_ns"]["percentile"])
                assert 0 <= nv - jv < u, (k, jv, nv, u)
            else:
                u = _lat_unit(e[f"{lk}_ns"])
                if stat in ("min", "max"):
                    assert -5e-5 * jv <= jv - nv < u + 5e-5 * jv, (k, jv, nv, u)
                else:
                    assert abs(nv - jv) <= 0.005 * u + 1e-9 * jv, (k, jv, nv, u)
        n += 1
    return n


def check_file(path: Path, tmp: Path) -> None:
    """Every check of one combined output."""
    j, t, nr, doc, pt, pn = parts(path, tmp)
    assert t is not None or nr is not None
    if t is not None:
        assert check_terse(t, j) >= 10
        assert pt.meta["tool_version"] == (None if pt.meta["format"] == "terse-v2" else doc["fio version"])
        assert pt.meta["groups"] == {e["jobname"]: e["groupid"] for e in doc["jobs"]}
    if nr is not None:
        assert check_normal(nr, j, doc) >= 10
        for e in doc["jobs"]:  # fio's IOPS to all its digits from the issued count and the runtime
            for d, v in pn.meta["derived"][e["jobname"]].items():
                assert v["iops"] == pytest.approx(e[d]["iops"], rel=1e-6)
        assert pn.meta["groups"] == {e["jobname"]: e["groupid"] for e in doc["jobs"]}
    # the whole file: detection gives it to the JSON reader; read as text, it is terse + the normal counts
    assert detect(path) == "fio-json"
    whole = fio_text.parse(path, path.read_bytes())
    assert whole.meta["json_at_line"] >= 1
    if t is not None and nr is not None:
        assert whole.kind == "fio-terse" and whole.meta["format"].endswith("+normal")
        check = whole.meta["normal_terse_check"]
        # fio 3.33 with unified_rw_reporting=both prints the normal "mixed:" line as IOPS=0, BW=0 (0)(0B/…)
        # while its terse and JSON hold the real values: the check reports that, and only that
        assert [m for m in check["mismatches"] if m["ddir"] != "mixed"] == [] and check["compared"] >= 20
        assert bool(check["mismatches"]) == ("unified-both" in path.name)
        w = rows(whole)
        assert {k: v for k, v in w.items() if k[2] == "total_ios"} == \
            {k: v for k, v in j.items() if k[2] == "total_ios" and k[1] != "mixed" and
             (k[0], k[1]) in {(a, b) for a, b, _ in t}}


# ------------------------------------------------------------------------------------------ fio 3.33 runs
def test_the_fixtures_are_here():
    assert len(COMBINED) == 7, COMBINED


@pytest.mark.parametrize("path", COMBINED, ids=lambda p: p.name)
def test_text_readings_agree_with_the_json_of_the_same_run(path, tmp_path):
    check_file(path, tmp_path)


def _fio(tmp: Path, name: str, *jobs: list[str]) -> Path:
    """Run fio here (1 s a job, 16 MiB files in ``tmp``): each job's options, then the common ones (fio applies
    an option to the job named before it)."""
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed (make tools)")
    out = tmp / f"{name}.out"
    args = [a for job in jobs for a in (*job, "--size=16M", "--runtime=1", "--time_based")]
    subprocess.run(["fio", *args, "--output-format=normal,json,terse", f"--output={out}"], check=True,
                   cwd=tmp, capture_output=True, timeout=120)
    return out


def test_live_fio_one_job(tmp_path):
    out = _fio(tmp_path, "one", ["--name=t", f"--filename={tmp_path}/x", "--rw=randrw", "--bs=4k", "--ioengine=psync"])
    check_file(out, tmp_path)


def test_live_fio_two_groups_by_stonewall(tmp_path):
    out = _fio(tmp_path, "two",
               ["--name=a", f"--filename={tmp_path}/a", "--rw=randread", "--bs=4k", "--ioengine=psync"],
               ["--name=b", "--stonewall", f"--filename={tmp_path}/b", "--rw=randwrite", "--bs=8k", "--ioengine=psync"])
    check_file(out, tmp_path)
    _, t, nr, _, pt, pn = parts(out, tmp_path)
    for p in (pt, pn):
        assert p.meta["groups"] == {"a": 0, "b": 1}
        assert p.meta["workload"]["by_job"] == {"a": {"fio_group": "0"}, "b": {"fio_group": "1"}}
    assert {(k[0], k[1]) for k in t} == {(k[0], k[1]) for k in nr} == {("a", "read"), ("b", "write")}


def test_live_fio_numjobs_with_group_reporting(tmp_path):
    out = _fio(tmp_path, "g", ["--name=g", f"--filename={tmp_path}/g", "--rw=randrw", "--bs=4k", "--ioengine=psync",
                               "--numjobs=2", "--group_reporting"])
    check_file(out, tmp_path)
    _, _, _, _, pt, pn = parts(out, tmp_path)
    assert pt.meta["jobs"] == pn.meta["jobs"] == ["g"] and pn.meta["members"] == {"g": 2}
    assert pt.meta["workload"] == pn.meta["workload"] == {}  # no options recorded, one group: nothing known


def test_the_terse_versions_and_their_layouts(tmp_path):
    """v2 (no fio version, description on the next line), v4 and v5 (trim block, v5's samples and IOPS
    statistics), v3 with unified_rw_reporting=both (read, write, mixed)."""
    got = {}
    for p in COMBINED:
        _, terse, _, doc = split(p.read_text())
        got[p.name] = (fio_text.parse(p.with_suffix(".terse"), terse.encode()), doc)
    v2, doc = got["fio-3.33_terse-v2_json-terse.out"]
    assert v2.meta["format"] == "terse-v2" and v2.meta["tool_version"] is None
    assert v2.meta["descriptions"] == {"v2": "terse v2; described"}
    assert v2.meta["bw_unit"] == ["KiB/s (terse v2: bw agrees with io/runtime in KiB/s)"]
    v5, doc = got["fio-3.33_terse-v5_json-terse.out"]
    r = doc["jobs"][0]["read"]
    s = v5.meta["samples"]["v5"]["read"]
    assert (s["iops_min"], s["iops_max"], s["bw_samples"], s["iops_samples"]) == \
        (r["iops_min"], r["iops_max"], r["bw_samples"], r["iops_samples"])
    assert s["bw_min"] == r["bw_min"] * 1024 and v5.meta["descriptions"] == {"v5": "v5 job"}
    v4, _ = got["fio-3.33_terse-v4_json-terse.out"]
    assert v4.meta["format"] == "terse-v4" and set(v4.meta["disk_util"]) >= {"vda"} | set()
    both, doc = got["fio-3.33_null-unified-both_normal-json-terse.out"]
    m = doc["jobs"][0]["mixed"]
    t = rows(both)
    assert t[("nul", "mixed", "iops")] == math.floor(m["iops"])
    assert t[("nul", "mixed", "io_bytes")] == m["io_kbytes"] * 1024


# ------------------------------------------------------------------------------------------ the corpus
@pytest.fixture
def text_corpus(corpus) -> Path:
    if not TEXT.is_dir():
        pytest.skip("../shared/corpus/fio_text is absent")
    return TEXT


def test_jtulak_fio_2_1_2_terse_v3(text_corpus):
    p = read(text_corpus / "jtulak_fio-2.1.2_terse-v3.out")
    assert p.kind == "fio-terse" and p.meta["format"] == "terse-v3" and p.meta["tool_version"] == "fio-2.1.2"
    assert len(p.meta["jobs"]) == 12 and p.meta["jobs"][0] == "test-multi-file-io-4#0"
    assert [p.meta["groups"][j] for j in p.meta["jobs"]] == [0] * 4 + [1] * 4 + [2] * 4
    r = rows(p)
    first = "test-multi-file-io-4#0"  # the first line's fields, typed from the file
    assert r[(first, "read", "io_bytes")] == 52392 * 1024
    assert r[(first, "read", "bw")] == 5208 * 1024
    assert r[(first, "read", "iops")] == 651
    assert r[(first, "read", "runtime")] == 10.058
    assert r[(first, "read", "slat_min")] == 2000 and r[(first, "read", "slat_max")] == 2593000
    assert r[(first, "read", "slat_mean")] == pytest.approx(20060.925, abs=1e-9)
    assert r[(first, "read", "clat_mean")] == pytest.approx(4610434.417, abs=1e-6)
    assert r[(first, "read", "clat_stddev")] == pytest.approx(19407559.776, abs=1e-6)
    assert r[(first, "read", "clat_p1")] == 123000 and r[(first, "read", "clat_p99.99")] == 514048000
    assert r[(first, "read", "lat_mean")] == pytest.approx(4632422.660, abs=1e-6)
    assert r[(first, "write", "io_bytes")] == 13080 * 1024 and r[(first, "write", "iops")] == 162
    assert r[(first, "write", "clat_mean")] == pytest.approx(5995006.728, abs=1e-6)
    last = "test-multi-file-io-16#3"  # the last line
    assert r[(last, "read", "iops")] == 1635 and r[(last, "read", "bw")] == 13086 * 1024
    assert r[(last, "write", "slat_max")] == 11130000 and r[(last, "write", "clat_p20")] == 788000
    assert not any(k[1] == "trim" for k in r)  # terse v3 has no trim block
    disk = p.meta["disk_util"]["vda"]
    assert disk["read_ios"] == 135711 and disk["util"] == pytest.approx(0.9912)
    assert p.meta["samples"][first]["read"]["bw_agg"] == 24.881046
    assert p.meta["workload"]["by_job"][first] == {"fio_group": "0"}


def test_howto_normal_output_job_section(text_corpus):
    p = read(text_corpus / "fio-howto_normal_output_job_section.txt")
    assert p.kind == "fio-text" and p.meta["format"] == "normal" and p.meta["jobs"] == ["Client1"]
    r = {k[2]: v for k, v in rows(p).items()}
    assert r["iops"] == 88 and r["bw"] == 623 * 1024 and r["io_bytes"] == pytest.approx(30.4 * 2 ** 20)
    assert r["total_ios"] == 4450 and r["runtime"] == 50.032
    assert (r["slat_min"], r["slat_max"], r["slat_mean"], r["slat_stddev"]) == (500, 145500, 8318.0, 4781.5)
    assert (r["clat_min"], r["clat_max"]) == (170e3, 78367e3)
    assert r["clat_mean"] == pytest.approx(4019.02e3) and r["lat_mean"] == pytest.approx(4027.34e3)
    assert (r["clat_p1"], r["clat_p70"], r["clat_p99.99"]) == (302e3, 816e3, 78119e3)
    res = p.meta["resolution"]["Client1"]["write"]
    assert (res["bw"], res["io_bytes"], res["iops"], res["clat_min"], res["slat_mean"]) == \
        (1024, pytest.approx(0.1 * 2 ** 20), 1, 1000, 0.01)
    assert p.meta["derived"]["Client1"]["write"]["iops"] == pytest.approx(4450 / 50.032)
    s = p.meta["samples"]["Client1"]["write"]
    assert s["bw_avg"] == pytest.approx(622.87 * 1024) and s["iops_avg"] == 88.98 and s["bw_samples"] == 100
    assert r["bw"] != s["bw_avg"]  # the bandwidth fio states, not the mean of its samples
    assert p.meta["workload"] == {} and p.meta["groups"] == {"Client1": 0}


def test_howto_run_status_group_and_disk_stats(text_corpus):
    p = read(text_corpus / "fio-howto_normal_output_run_status_group.txt")
    assert p.kind == "fio-text" and len(p.summary) == 0
    g = p.meta["run_status"]["0"]
    assert g["read"]["bw"] == pytest.approx(20.9 * 2 ** 20) and g["read"]["io_bytes"] == 64 * 2 ** 20
    assert (g["read"]["runtime_min"], g["read"]["runtime_max"]) == (2.973, 3.069)
    assert g["write"]["bw"] == 1231 * 1024 and g["write"]["bw_min"] == 616 * 1024
    d = read(text_corpus / "fio-howto_normal_output_disk_stats.txt")
    assert d.kind == "fio-text" and len(d.summary) == 0
    assert d.meta["disk_util"]["sda"] == {"read_ios": 16398, "write_ios": 16511, "read_sectors": 32321,
                                          "write_sectors": 65472, "read_merges": 30, "write_merges": 162,
                                          "read_ticks": 6853, "write_ticks": 819634, "in_queue": 826487,
                                          "util": 1.0}


def test_the_job_file_of_the_terse_run_names_its_groups(text_corpus):
    """The jtulak job file and its terse output: the job file's groups (new_group) are the terse groupids."""
    t = read(text_corpus / "jtulak_fio-2.1.2_terse-v3.out")
    jf = read(text_corpus / "jtulak_fio-2.1.2_terse-v3.jobfile.fio")
    for job, g in jf.meta["groups"].items():
        assert {t.meta["groups"][j] for j in t.meta["jobs"] if j.split("#")[0] == job} == {g}


# ------------------------------------------------------------------------------------------ fio 2.x normal
#: a fio 2.x normal report written with fio 2.1.2–2.16's format strings (stat.c show_thread_status_normal,
#: show_ddir_status, show_group_stats); the values are made up for this test
FIO_2X = """\
randrw: (g=0): rw=randrw, bs=4K-4K/4K-4K/4K-4K, ioengine=libaio, iodepth=64
fio-2.2.10
Starting 1 process

randrw: (groupid=0, jobs=1): err= 0: pid=30364: Sat Jul 16 14:24:12 2016
  read : io=3071.7MB, bw=55552KB/s, iops=13887, runt= 56621msec
    slat (usec): min=4, max=39819, avg= 7.85, stdev=27.68
    clat (msec): min=7, max=127, avg= 8.82, stdev= 4.49
     lat (msec): min=8, max=128, avg=10.41, stdev= 4.50
    clat percentiles (msec):
     |  1.00th=[    9],  5.00th=[   43], 10.00th=[   93], 20.00th=[  126],
     | 99.00th=[  128], 99.99th=[  128]
    bw (KB  /s): min=13672, max=45112, per=12.50%, avg=40196.34, stdev=7555.91
  write: io=1024.4MB, bw=18525KB/s, iops=4631, runt= 56621msec
    clat (usec): min=20, max=37032, avg=561.37, stdev=174.14
    clat percentiles (usec):
     |  1.00th=[  390],  5.00th=[  418]
    lat (usec) : 50=0.01%, 100=0.01%, 250=0.01%, 500=30.15%, 750=63.25%
  cpu          : usr=16.94%, sys=50.37%, ctx=12706, majf=0, minf=9
  IO depths    : 1=0.1%, 2=0.1%, 4=0.1%, 8=0.1%, 16=0.1%, 32=0.1%, >=64=100.0%
     submit    : 0=0.0%, 4=100.0%, 8=0.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%
     complete  : 0=0.0%, 4=100.0%, 8=0.0%, 16=0.0%, 32=0.0%, 64=0.1%, >=64=0.0%
     issued    : total=r=786347/w=262229/d=0, short=r=0/w=0/d=0, drop=r=0/w=0/d=0
     latency   : target=0, window=0, percentile=100.00%, depth=64

Run status group 0 (all jobs):
   READ: io=3071.7MB, aggrb=55551KB/s, minb=55551KB/s, maxb=55551KB/s, mint=56621msec, maxt=56621msec
  WRITE: io=1024.4MB, aggrb=18525KB/s, minb=18525KB/s, maxb=18525KB/s, mint=56621msec, maxt=56621msec

Disk stats (read/write):
  vda: ios=782344/260933, merge=0/11, ticks=1530780/536270, in_queue=2066420, util=98.60%
"""


def test_fio_2x_normal_output(tmp_path):
    f = tmp_path / "fio2.txt"
    f.write_text(FIO_2X)
    p = read(f)
    assert p.kind == "fio-text" and p.meta["tool_version"] == "fio-2.2.10" and p.meta["kb_base_assumed"] == 1024
    r = rows(p)
    assert r[("randrw", "read", "io_bytes")] == pytest.approx(3071.7 * 2 ** 20)
    assert p.meta["resolution"]["randrw"]["read"]["io_bytes"] == 2 ** 20  # ".7" is not a decimal fraction
    assert r[("randrw", "read", "bw")] == 55552 * 1024 and r[("randrw", "read", "iops")] == 13887
    assert r[("randrw", "read", "runtime")] == 56.621 and r[("randrw", "read", "total_ios")] == 786347
    assert r[("randrw", "write", "total_ios")] == 262229
    assert r[("randrw", "read", "slat_min")] == 4000 and r[("randrw", "read", "slat_mean")] == pytest.approx(7850)
    assert r[("randrw", "read", "clat_min")] == 7e6 and r[("randrw", "read", "clat_mean")] == pytest.approx(8.82e6)
    assert r[("randrw", "read", "clat_p5")] == 43e6 and r[("randrw", "write", "clat_p5")] == 418e3
    assert r[("randrw", "write", "clat_stddev")] == pytest.approx(174.14e3)
    assert ("randrw", "write", "slat_mean") not in r
    assert p.meta["samples"]["randrw"]["read"]["bw_avg"] == pytest.approx(40196.34 * 1024)
    g = p.meta["run_status"]["0"]
    assert g["read"]["bw"] == 55551 * 1024 and g["write"]["runtime_max"] == 56.621
    assert p.meta["disk_util"]["vda"]["util"] == pytest.approx(0.986)
    assert p.meta["job_header"]["randrw"]["rw"] == "randrw" and p.meta["workload"] == {}


# ------------------------------------------------------------------------------------------ detection
def test_detection_claims_text_only_and_leaves_the_other_formats_alone(tmp_path):
    others = [p for p in FIXTURES.rglob("*") if p.is_file() and "fio_text" not in p.parts and p.suffix != ".fio"]
    from analysis.ingest.compress import read_head
    for p in others:
        head, _ = read_head(p, 64 * 1024)
        assert fio_text.sniff(head) is None, p
        assert not fio_jobfile.sniff(head), p
    quoted = tmp_path / "README.md"
    quoted.write_text("Our run:\n```\n" + FIO_2X + "```\n")
    assert detect(quoted) is None


def test_a_combined_json_and_normal_file_is_read_as_json(tmp_path):
    """fio --output-format=json,normal: the JSON reader takes the file; the text reader says the JSON is there."""
    js, _, normal, _ = split(COMBINED[0].read_text())
    f = tmp_path / "both.out"
    f.write_text(js + normal)
    assert detect(f) == "fio-json"
    p = fio_text.parse(f, f.read_bytes())
    assert p.kind == "fio-text" and p.meta["json_at_line"] == 1 and "fio-json" in p.meta["note"]


# ------------------------------------------------------------------------------------------ damaged input
def _terse_and_normal() -> tuple[str, str]:
    _, terse, normal, _ = split((FIX / "fio-3.33_randrw-psync_normal-json-terse.out").read_text())  # t: read, write
    return terse, normal


def test_a_truncated_terse_line(tmp_path):
    terse, _ = _terse_and_normal()
    f = tmp_path / "cut.terse"
    f.write_text(terse[:len(terse) // 2])  # no newline: the file ends inside the line
    with pytest.raises(IngestError) as e:
        fio_text.parse(f, f.read_bytes())
    assert e.value.line == 1 and "cut" in str(e.value) and str(e.value).startswith(f"{f}:1: ")
    assert "expected a terse v3 line of at least 121" in str(e.value)


def test_a_terse_line_with_the_wrong_field_count_for_its_version(tmp_path):
    terse, _ = _terse_and_normal()
    fields = terse.rstrip("\n").split(";")
    f = tmp_path / "x.terse"
    f.write_text(";".join(fields[:20] + fields[21:]) + "\n")  # one percentile field missing
    with pytest.raises(IngestError, match=r":1: expected terse v3's fields in fio's order: field \d+"):
        fio_text.parse(f, f.read_bytes())
    f.write_text(";".join(["4"] + fields[1:]) + "\n")  # a v3 line labelled v4 (v4 has a trim block)
    with pytest.raises(IngestError, match=r":1: expected a terse v4 line of at least 162 ';'-separated fields"):
        fio_text.parse(f, f.read_bytes())


def test_a_normal_output_cut_inside_a_job_block(tmp_path):
    _, normal = _terse_and_normal()
    lines = normal.split("\n")
    cut = next(i for i, ln in enumerate(lines) if "clat percentiles" in ln) + 2
    f = tmp_path / "cut.txt"
    f.write_text("\n".join(lines[:cut]) + "\n")
    with pytest.raises(IngestError) as e:
        fio_text.parse(f, f.read_bytes())
    head = next(i for i, ln in enumerate(lines) if "(groupid=" in ln) + 1
    assert f"expected the job block of 't' (line {head}) to go on to its 'issued' line" in str(e.value)
    assert e.value.line == cut + 1
    f.write_text(normal.replace("IOPS=", "IOPS=x", 1))
    with pytest.raises(IngestError, match=r":\d+: expected IOPS, bandwidth and size as fio's num2str prints"):
        fio_text.parse(f, f.read_bytes())


@pytest.mark.parametrize("which", ["terse", "normal"])
def test_mutations_never_escape_the_reader(which, tmp_path):
    terse, normal = _terse_and_normal()
    data = (terse if which == "terse" else normal).encode()
    target = tmp_path / f"fio.{which}"

    @settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(mutated(data))
    def check(blob: bytes):
        parse_directly(fio_text, target, blob)

    check()
