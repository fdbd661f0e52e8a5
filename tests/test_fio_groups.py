"""A run is what fio ran: jobs are summed only within one reporting group, every option that changes the
workload is in the cell, and ``compare`` says what else differs or that nothing is in common.

The fixture ``tests/fixtures/fio_groups/sweep.json`` is fio 3.33's JSON of ``sweep.fio`` beside it, run on
this project's VM (psync randread of a 16 MiB file, 1-2 s a group): five groups, one after another
(``stonewall``), the last holding two jobs (``numjobs=2``).  Expected values are read from it with the json
module here, never from the code under test.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.ingest.walk import ingest
from analysis.stats import abtest as ab
from conftest import FIXTURES

ROOT = Path(__file__).resolve().parents[1]
SWEEP = FIXTURES / "fio_groups" / "sweep.json"


def _doc() -> dict:
    return json.loads(SWEEP.read_text())


def _iops(tmp_path: Path) -> pd.DataFrame:
    d = tmp_path / "sweep"
    d.mkdir()
    (d / "sweep.json").write_bytes(SWEEP.read_bytes())
    s = ingest(d, progress=False, jobs=1, lenient=True).summary
    return s[(s["metric"].astype(str) == "iops") & (s["kind"].astype(str) == "fio-json")]


def test_the_fixture_is_what_the_docstring_says():
    doc = _doc()
    assert doc["fio version"] == "fio-3.33"
    assert [j["groupid"] for j in doc["jobs"]] == [0, 1, 2, 3, 4, 4]


def test_one_run_per_reporting_group_and_jobs_summed_only_within_one(tmp_path):
    s = _iops(tmp_path)
    by_run = s.groupby(s["run"].astype(str))["value"].sum()
    want: dict[str, float] = {}
    for j in _doc()["jobs"]:  # the json module's view: per groupid, the jobs' IOPS summed
        want[f"sweep.json#group{j['groupid']}"] = want.get(f"sweep.json#group{j['groupid']}", 0.0) + j["read"]["iops"]
    assert by_run.to_dict() == pytest.approx(want, rel=1e-12)
    assert len(by_run) == 5
    # the two jobs of group 4 ran together: one run, and its value is their sum
    assert want["sweep.json#group4"] == pytest.approx(_doc()["jobs"][4]["read"]["iops"] + _doc()["jobs"][5]["read"]["iops"])


def test_runtime_is_part_of_the_cell_and_identical_groups_are_repeats(tmp_path):
    s = _iops(tmp_path)
    v = ab.run_values(s, ab.workload_keys(s), metrics=("iops",))
    cells = v.groupby(["bs_B", "runtime_s", "numjobs"])["run"].nunique().to_dict()
    # 4k for 1 s and for 2 s are two cells; the two 64k groups are repeats of one cell; numjobs=2 its own
    assert cells == {("4096", "1.0", "1"): 1, ("4096", "2.0", "1"): 1, ("65536", "1.0", "1"): 2,
                     ("4096", "1.0", "2"): 1}
    sixty_four = sorted(v.loc[v["bs_B"] == "65536", "value"])
    assert sixty_four == pytest.approx(sorted(j["read"]["iops"] for j in _doc()["jobs"] if j["job options"]["bs"] == "64k"))


def test_options_that_do_not_change_the_io_are_not_keyed():
    from analysis.ingest.fio_workload import workload
    wl = workload({"rw": "randread", "write_lat_log": "x", "log_avg_msec": "1000", "group_reporting": "",
                   "fsync": "32", "ramp_time": "5s"}, {"a": {"name": "a"}}, ["a"], "fio-3.33")
    assert wl["keys"]["fio_options"] == "fsync=32" and wl["keys"]["ramp_time_s"] == 5.0


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "analysis", *args], capture_output=True, text=True, cwd=ROOT)


def _sides(tmp_path: Path, a: dict, b: dict) -> tuple[Path, Path]:
    """Two folders holding the fixture's first job, its options changed to ``a`` and ``b``."""
    out = []
    for name, opts in (("A", a), ("B", b)):
        doc = _doc()
        job = dict(doc["jobs"][0])
        job["job options"] = {**job["job options"], **opts}
        doc["jobs"] = [job]
        (tmp_path / name).mkdir()
        (tmp_path / name / "out.json").write_text(json.dumps(doc))
        out.append(tmp_path / name)
    return out[0], out[1]


@pytest.mark.parametrize("fmt", ["text", "json", "csv", "markdown"])
def test_nothing_in_common_exits_2_with_one_line(tmp_path, fmt):
    a, b = _sides(tmp_path, {"bs": "4k", "rw": "write"}, {"bs": "32k", "rw": "write"})
    r = _run("compare", str(a), str(b), "--format", fmt)
    assert r.returncode == 2 and r.stdout == ""
    lines = [ln for ln in r.stderr.splitlines() if not ln.startswith(("warning:", "note:"))]
    assert lines == ["error: A has write bs_B=4 KiB, B has write bs_B=32 KiB: no workload in common"]


def test_a_secondary_option_that_differs_everywhere_is_said_not_matched(tmp_path):
    a, b = _sides(tmp_path, {"size": "4G"}, {"size": "16G"})
    r = _run("compare", str(a), str(b))
    assert r.returncode == 0, r.stderr
    assert "also differ (not cell keys): size_B 4 GiB vs 16 GiB" in r.stdout
    assert "one run a side: no test" in r.stdout


def test_a_crash_is_exit_70_with_one_line_and_the_traceback_in_a_log(monkeypatch, capsys):
    import analysis.__main__ as cli

    def boom(a):
        raise KeyError("kind")
    monkeypatch.setitem(cli._SUBCOMMANDS, "compare", (cli._SUBCOMMANDS["compare"][0], cli._compare_args, boom))
    assert cli.main(["compare", "x", "y"]) == cli.INTERNAL_ERROR == 70
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("internal error in compare: KeyError: 'kind' (traceback in ")
    log = Path(err[0].split("traceback in ")[1].split(";")[0])
    assert "KeyError" in log.read_text()
    log.unlink()


def test_the_exit_codes_are_in_every_commands_help():
    for cmd in ("compare", "history", "ingest"):
        r = _run(cmd, "--help")
        assert r.returncode == 0 and "2   bad input or nothing to do" in r.stdout and "70  internal error" in r.stdout


def test_json_after_a_stray_byte_and_two_documents_in_one_file(tmp_path):
    from analysis.ingest import read
    raw = SWEEP.read_bytes()
    (tmp_path / "noise.json").write_bytes(b">" + raw)
    p = read(tmp_path / "noise.json")
    assert p.meta["json_offset"] == 1 and p.meta["preamble"] == ">" and p.meta["documents"] == 1
    assert len(set(p.summary["job"].astype(str))) == 6  # four single jobs, two-jobs-4k#0 and #1
    other = (FIXTURES / "fio_groups" / "unified-rw-reporting.json").read_bytes()
    (tmp_path / "two.json").write_bytes(raw + b"\n" + other)
    p = read(tmp_path / "two.json")
    assert p.meta["documents"] == 2 and [d["line"] for d in p.meta["document_at"]] == [1, raw.count(b"\n") + 2]
    iops = p.summary[(p.summary["metric"].astype(str) == "iops")]
    assert len(iops) == len(_doc()["jobs"]) + 1  # neither document dropped
    groups = p.meta["workload"]["by_job"]
    assert {g["fio_group"] for g in groups.values()} == {f"1:{g}" for g in range(5)} | {"2:0"}
    (tmp_path / "cut.json").write_bytes(raw + b"\n" + other[: len(other) // 2])
    from analysis.ingest import IngestError
    with pytest.raises(IngestError) as ei:
        read(tmp_path / "cut.json")
    assert "document 2" in str(ei.value) and ei.value.line > raw.count(b"\n")


def test_a_per_job_logs_0_file_is_read_as_segments(tmp_path, monkeypatch):
    """fio's per_job_logs=0 writes every job's samples into one ``<prefix>_<type>.log``, one job's block after
    another, each restarting its time; here two of this repository's fio 3.x per-job clat logs laid one
    after the other in such a file."""
    logs = sorted((FIXTURES / "fio").rglob("*_clat.*.log"))[:2]
    assert len(logs) == 2
    a, b = (f.read_text() for f in logs)
    (tmp_path / "pj_clat.log").write_text(a + b)
    monkeypatch.setenv("CEPHQOS_LOG_UNITS", "ns")
    from analysis.ingest import read
    p = read(tmp_path / "pj_clat.log")
    assert p.meta["per_job_logs"]["segments"] == 2
    got = p.summary[p.summary["metric"].astype(str).isin(["clat_samples", "clat_mean"])]
    got = {(str(r.job), str(r.ddir), str(r.metric)): r.value for r in got.itertuples()}
    want = {}
    for k, t in enumerate((a, b)):  # per segment and direction, from the text (columns: ms, ns, ddir, bs)
        rows = np.array([[float(x) for x in ln.split(",")[:3]] for ln in t.splitlines() if ln.strip()])
        for code, ddir in ((0, "read"), (1, "write")):
            v = rows[rows[:, 2] == code, 1]
            if len(v):
                want[(f"pj#seg{k + 1}", ddir, "clat_samples")] = float(len(v))
                want[(f"pj#seg{k + 1}", ddir, "clat_mean")] = float(v.mean())
    assert got == pytest.approx(want)


def test_a_terse_output_takes_its_workload_from_the_job_file_beside_it(tmp_path):
    """The corpus's fio 2.1.2 terse v3 output and the job file that produced it: terse records no options,
    the job file does (iodepth 4/8/16 by section, randrw 80 % reads, 8 KiB); each new_group section is a
    run of four clones (numjobs=$ncpus*2, which the job file cannot resolve: no numjobs key), summed.
    Expected read IOPS are field 8 of the terse lines, read by hand: 651+687+679+687 = 2704 (group 0),
    1110+1005+1096+1134 = 4345, 1575+1711+1648+1635 = 6569."""
    src = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "fio_text"
    if not src.is_dir():
        pytest.skip("../shared is absent")
    for f in ("jtulak_fio-2.1.2_terse-v3.out", "jtulak_fio-2.1.2_terse-v3.jobfile.fio"):
        (tmp_path / f).write_bytes((src / f).read_bytes())
    r = ingest(tmp_path, progress=False, jobs=1)
    assert r.failed == [] and sorted(r.files["kind"]) == ["fio-jobfile", "fio-terse"]
    s = r.summary[(r.summary["metric"].astype(str) == "iops") & (r.summary["ddir"].astype(str) == "read")]
    runs = s.groupby(s["run"].astype(str)).agg(iops=("value", "sum"), iodepth=("iodepth", "first"),
                                               rw=("rw", "first"), bs=("bs_B", "first"), mix=("rwmixread", "first"))
    assert runs.to_dict("index") == {
        "jtulak_fio-2.1.2_terse-v3.out#group0": {"iops": 2704.0, "iodepth": 4, "rw": "randrw", "bs": 8192, "mix": 80},
        "jtulak_fio-2.1.2_terse-v3.out#group1": {"iops": 4345.0, "iodepth": 8, "rw": "randrw", "bs": 8192, "mix": 80},
        "jtulak_fio-2.1.2_terse-v3.out#group2": {"iops": 6569.0, "iodepth": 16, "rw": "randrw", "bs": 8192, "mix": 80}}
    assert set(s["fio_jobfile"].astype(str)) == {"jtulak_fio-2.1.2_terse-v3.jobfile.fio"}
    assert "numjobs" not in s or s["numjobs"].isna().all()


def test_unified_rw_reporting_is_read_as_fio_wrote_it():
    """fio 3.33 with unified_rw_reporting=1 (``--rw=randrw``) reports one ``mixed`` direction and no
    read/write: it was read as a job with no rows at all."""
    from analysis.ingest import read
    f = FIXTURES / "fio_groups" / "unified-rw-reporting.json"
    job = json.loads(f.read_text())["jobs"][0]
    assert "read" not in job and job["job options"]["unified_rw_reporting"] == "1"
    s = read(f).summary
    got = s[s["metric"].astype(str).isin(["iops", "bw"])].set_index(["ddir", "metric"])["value"].to_dict()
    assert got == {("mixed", "iops"): job["mixed"]["iops"], ("mixed", "bw"): job["mixed"]["bw_bytes"]}


def test_a_json_appended_to_itself_is_refused_not_a_second_run(tmp_path):
    """The same document twice is damage (a file appended to itself), not two runs of 2 × the IOPS."""
    from analysis.ingest import IngestError, read
    raw = SWEEP.read_bytes()
    (tmp_path / "twice.json").write_bytes(raw + raw)
    with pytest.raises(IngestError) as ei:
        read(tmp_path / "twice.json")
    assert "document 2 of this file is the same as document 1" in str(ei.value)
    assert ei.value.line == raw.count(b"\n") + 1
