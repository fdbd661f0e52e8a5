"""Conformance on real public archives nobody here wrote (tests/outside/, provenance in its SOURCES.md).

Each archive folder is ingested as a user would (`python -m analysis ingest DIR --out OUT`) and the tables are
read back with `analysis.store.read_table`; the values they must hold were worked out by hand from the files,
without the package (tests/outside/derive_expected.py -> expected.json).

The per-job values (iops, bw in B/s, clat mean in ns, runtime, workload keys, reporting-group sums; log rows
and values of bw/iops logs, the rows of latency logs) are checked, and so are: one run per fio reporting
group (the `run` key distinct per groupid); several jobs written into one fio log (time restarting per job)
kept apart, not failed; fio 2.x lat/clat/slat logs read in ns (= the log's usec x 1000, the version from the
JSON beside them); fio text output (terse v3 + normal) read.
A check of CBT tests keyed by `total_iodepth` is absent, not skipped: no CBT archive with a licence that allows
redistribution was found (see SOURCES.md, "Wanted and not found").
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from analysis.store import read_table
from conftest import ROOT

OUTSIDE = ROOT / "tests" / "outside"
EXPECTED = json.loads((OUTSIDE / "expected.json").read_text())
REL = 1e-9  # the JSON's own numbers, only unit-converted: equal up to float rounding

# archive -> the reader kind each of its files must get
KINDS = {
    "ceph-aprg-rados-stonewall": "fio-json",
    "virtualclient-fio326": "fio-json",
    "arcaflow-poisson-rate": "fio-json",
    "fioplot-fio218-2jobs-logs": None,  # the JSON and its logs
    "fio-plot-samples-fio21-logs": "fio-log",
}
TEXT_ARCHIVE = "hikalium-cdm-text"
# fio 2.1 logs holding two jobs' blocks (time restarts at 0 on line 68): read only by the reader being built
TWO_JOBS_ARCHIVE = "fio-plot-samples-fio21-logs"
TWO_JOBS_LOGS = ("m2sw1-128k-sdb-randwrite-para.results_bw.log", "m2sw1-128k-sdb-randwrite-para.results_iops.log")


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    """archive name -> (completed ingest process, its output folder); each archive ingested once."""
    done = {}

    def get(name):
        if name not in done:
            out = tmp_path_factory.mktemp(name.replace("-", "_")) / "proc"
            r = subprocess.run([sys.executable, "-m", "analysis", "ingest", str(OUTSIDE / name), "--out", str(out),
                                "--no-progress"], capture_output=True, text=True, cwd=ROOT, timeout=600)
            done[name] = (r, out)
        return done[name]
    return get


def _tables(ingested, name):
    r, out = ingested(name)
    assert r.returncode == 0, f"{name}: ingest exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    return read_table(out, "files"), read_table(out, "summary")


def _job_cases(kind="fio-json"):
    """(archive, file, jobname, ddir, expected values) for every used direction of every job."""
    for archive, files in EXPECTED.items():
        for fname, exp in files.items():
            if exp["kind"] != kind:
                continue
            for job in exp["jobs"]:
                for dd, v in job["ddirs"].items():
                    yield pytest.param(archive, fname, job, dd, v, id=f"{archive}/{fname}/{job['jobname']}/{dd}")


def _log_cases(types):
    for archive, files in EXPECTED.items():
        for fname, exp in files.items():
            if exp["kind"] == "fio-log" and exp["log_type"] in types and fname not in TWO_JOBS_LOGS:
                yield pytest.param(archive, fname, exp, id=f"{archive}/{fname}")


def _one(summary, source, job, ddir, metric):
    rows = summary[(summary["source"].astype(str) == source) & (summary["job"].astype(str) == job)
                   & (summary["ddir"].astype(str) == ddir) & (summary["metric"].astype(str) == metric)]
    assert len(rows) == 1, f"{source} {job} {ddir} {metric}: {len(rows)} rows"
    return rows.iloc[0]


def test_expected_json_is_what_the_hand_derivation_gives():
    """expected.json is reproduced exactly by derive_expected.py (standard library only, no `analysis`)."""
    script = OUTSIDE / "derive_expected.py"
    assert "import analysis" not in script.read_text() and "from analysis" not in script.read_text()
    r = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def _files(ingested, archive):
    """The files table of an archive's ingest, whatever its exit code (1: some file failed)."""
    r, out = ingested(archive)
    assert r.returncode in (0, 1), f"{archive}: ingest exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    files = read_table(out, "files")
    assert set(files["path"].astype(str)) == set(EXPECTED[archive]), "ingested files differ from the archive's"
    return files


@pytest.mark.parametrize("archive", sorted(KINDS))
def test_every_file_of_the_archive_is_read(ingested, archive):
    files = _files(ingested, archive)
    if archive == TWO_JOBS_ARCHIVE:  # its two-jobs-in-one-file logs are checked apart (xfail below)
        files = files[~files["path"].astype(str).isin(TWO_JOBS_LOGS)]
    assert set(files["status"].astype(str)) == {"ok"}, files[["path", "status", "error"]].to_string()
    for _, f in files.iterrows():
        want = KINDS[archive] or EXPECTED[archive][f["path"]]["kind"]
        assert f["kind"] == want, f["path"]
        exp = EXPECTED[archive][f["path"]]
        if exp["kind"] == "fio-json":
            assert f["tool_version"] == exp["fio_version"], f["path"]


@pytest.mark.parametrize("archive, fname, job, ddir, exp", list(_job_cases()))
def test_fio_json_job_values_match_the_hand_values(ingested, archive, fname, job, ddir, exp):
    _, s = _tables(ingested, archive)
    name = job["jobname"]
    iops = _one(s, fname, name, ddir, "iops")
    assert iops["unit"] == "1/s" and iops["value"] == pytest.approx(exp["iops"], rel=REL)
    bw = _one(s, fname, name, ddir, "bw")
    assert bw["unit"] == "B/s" and bw["value"] == pytest.approx(exp["bw_Bps"], rel=REL)
    clat = _one(s, fname, name, ddir, "clat_mean")
    assert clat["unit"] == "ns" and clat["value"] == pytest.approx(exp["clat_mean_ns"], rel=REL)
    rt = _one(s, fname, name, ddir, "runtime")
    assert rt["unit"] == "s" and rt["value"] * 1000 == pytest.approx(exp["runtime_ms"], rel=REL)


@pytest.mark.parametrize("archive, fname, job, ddir, exp", list(_job_cases()))
def test_fio_json_job_workload_keys(ingested, archive, fname, job, ddir, exp):
    """The workload fio recorded for the job (its options over the global ones) is the one on its rows."""
    _, s = _tables(ingested, archive)
    row = _one(s, fname, job["jobname"], ddir, "iops")
    opts = job["options"]
    if "rw" in opts:
        assert row["rw"] == opts["rw"]
    if "iodepth" in opts:
        assert int(row["iodepth"]) == int(opts["iodepth"])
    if "numjobs" in opts:
        assert int(row["numjobs"]) == int(opts["numjobs"])


@pytest.mark.parametrize("archive, fname", [(a, f) for a, fs in EXPECTED.items() for f, e in fs.items()
                                            if e["kind"] == "fio-json"])
def test_fio_json_reporting_group_sums(ingested, archive, fname):
    """Per reporting group (jobs of one groupid) the summed iops and bw of its jobs' rows."""
    _, s = _tables(ingested, archive)
    exp = EXPECTED[archive][fname]
    for gid, g in exp["groups"].items():
        for dd, sums in g["ddirs"].items():
            iops = sum(_one(s, fname, j, dd, "iops")["value"] for j in g["jobs"])
            bw = sum(_one(s, fname, j, dd, "bw")["value"] for j in g["jobs"])
            assert iops == pytest.approx(sums["iops_sum"], rel=REL), (gid, dd)
            assert bw == pytest.approx(sums["bw_Bps_sum"], rel=REL), (gid, dd)


FACTOR = {"bw": 1024, "iops": 1}  # KiB/s -> B/s in every fio version; iops as they are


def _series_of(ingested, archive, fname):
    files = _files(ingested, archive).set_index("path")
    assert files.loc[fname, "status"] == "ok", (fname, files.loc[fname, "error"])
    se = read_table(ingested(archive)[1], "series")
    return se[se["source"].astype(str) == fname]


def _points(se):
    return {(round(float(t), 6), round(float(v), 6)) for t, v in zip(se["t_s"], se["value"])}


def _check_log(se, exp, factor, unit):
    assert len(se) == exp["rows"]
    assert set(se["unit"].astype(str)) == {unit}
    pts = _points(se)
    for seg in exp["segments"]:
        for row in (seg["first"], seg["last"]):
            assert (round(row[0] / 1000, 6), round(row[1] * factor, 6)) in pts, row


@pytest.mark.parametrize("archive, fname, exp", list(_log_cases({"bw", "iops"})))
def test_fio_bw_and_iops_logs_match_the_hand_values(ingested, archive, fname, exp):
    se = _series_of(ingested, archive, fname)
    _check_log(se, exp, FACTOR[exp["log_type"]], "B/s" if exp["log_type"] == "bw" else "1/s")


@pytest.mark.parametrize("archive, fname, exp", list(_log_cases({"lat", "clat", "slat"})))
def test_fio_latency_logs_have_every_row(ingested, archive, fname, exp):
    """Every row of a latency log is a sample at its time (the value's unit is checked apart, below)."""
    se = _series_of(ingested, archive, fname)
    assert len(se) == exp["rows"]
    times = {round(float(t), 6) for t in se["t_s"]}
    for seg in exp["segments"]:
        assert {round(seg["first"][0] / 1000, 6), round(seg["last"][0] / 1000, 6)} <= times


# --- behaviour being built now: switched on later ---------------------------------------------------------------

@pytest.mark.parametrize("archive, fname", [("ceph-aprg-rados-stonewall", "fio_result.json"),
                                            (TEXT_ARCHIVE, "result_2414XY1719JF.txt")])
def test_one_run_per_reporting_group(ingested, archive, fname):
    """A stonewalled file is several runs, one per reporting group: rows of one groupid share one `run`, and
    no two groupids share one."""
    _, s = _tables(ingested, archive)
    exp = EXPECTED[archive][fname]
    rows = s[s["source"].astype(str) == fname]
    run_of = {}
    for job in exp["jobs"]:
        runs = set(rows[rows["job"].astype(str) == job["jobname"]]["run"].astype(str))
        assert len(runs) == 1, (job["jobname"], runs)
        run_of.setdefault(job["groupid"], set()).update(runs)
    assert all(len(r) == 1 for r in run_of.values()), run_of
    assert len({next(iter(r)) for r in run_of.values()}) == len(exp["groupids"]) == len(run_of)


@pytest.mark.parametrize("fname", TWO_JOBS_LOGS)
def test_two_jobs_in_one_fio21_log_are_kept_apart(ingested, fname):
    """The fio 2.1 randwrite logs hold two jobs' blocks (time restarts at 0 on line 68): each block is its own
    series, with the rows of that block (67 and 63) and its first and last rows."""
    exp = EXPECTED[TWO_JOBS_ARCHIVE][fname]
    se = _series_of(ingested, TWO_JOBS_ARCHIVE, fname)
    _check_log(se, exp, FACTOR[exp["log_type"]], "B/s" if exp["log_type"] == "bw" else "1/s")
    sizes = sorted(se.groupby(se["job"].astype(str)).size().tolist())
    assert sizes == sorted(seg["rows"] for seg in exp["segments"]) == [63, 67], (fname, sizes)
    for _, block in se.groupby(se["job"].astype(str)):
        t = block["t_s"].tolist()
        assert t == sorted(t), "a block's time goes back: the two jobs were mixed"


@pytest.mark.parametrize("archive, fname, exp", list(_log_cases({"lat", "clat", "slat"})))
def test_fio2_latency_logs_are_read_in_ns(ingested, archive, fname, exp):
    assert exp["value_unit"] == "usec"
    se = _series_of(ingested, archive, fname)
    _check_log(se, exp, 1000, "ns")


def test_fio_text_output_is_read(ingested):
    """fio-3.28 `--output-format=terse,normal` of 8 stonewalled groups: each job's iops, bw, clat mean and
    runtime as its terse line gives them (normal output rounds them: IOPS=83, BW=83.9MiB/s, avg=83211.78)."""
    files, s = _tables(ingested, TEXT_ARCHIVE)
    (fname, exp), = EXPECTED[TEXT_ARCHIVE].items()
    assert set(files["status"].astype(str)) == {"ok"}
    assert files.set_index("path").loc[fname, "tool_version"] == exp["fio_version"]
    for job in exp["jobs"]:
        for dd, v in job["ddirs"].items():
            assert abs(_one(s, fname, job["jobname"], dd, "iops")["value"] - v["iops"]) <= 0.5  # terse rounds
            assert _one(s, fname, job["jobname"], dd, "bw")["value"] == pytest.approx(v["bw_Bps"], rel=2e-3)
            assert _one(s, fname, job["jobname"], dd, "clat_mean")["value"] == pytest.approx(v["clat_mean_ns"],
                                                                                               rel=1e-4)
            assert _one(s, fname, job["jobname"], dd, "runtime")["value"] * 1000 == pytest.approx(v["runtime_ms"])
