"""The workload fio records in its JSON as run keys (analysis.ingest.fio_workload and the walk): global vs
job options, several jobs per file, fio's defaults only where fio recorded options, logs keyed by their
companion's job, run.json stays authoritative and disagreements are recorded, fio-plot's bench_fio layout."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from analysis.ingest import fio_workload as fw
from analysis.ingest.context import bench_fio_context
from analysis.ingest.manifest import load_manifest
from analysis.ingest.walk import ingest
from conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "fio"


def _doc(global_options: dict | None, jobs: list[tuple[str, dict]]) -> dict:
    """A minimal fio 3.x JSON document: one read direction per job, the given options."""
    d = {"fio version": "fio-3.33", "timestamp": 1, "jobs": []}
    if global_options is not None:
        d["global options"] = global_options
    for name, opts in jobs:
        d["jobs"].append({"jobname": name, "groupid": 0, "error": 0, "job options": opts,
                          "read": {"io_bytes": 4096 * 100, "io_kbytes": 400, "bw_bytes": 409600, "bw": 400,
                                   "iops": 100.0, "runtime": 1000, "total_ios": 100,
                                   "clat_ns": {"min": 1, "max": 3, "mean": 2.0, "stddev": 0.5, "N": 100}}})
    return d


def _write(path: Path, doc: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def test_size_and_time_grammar():
    assert fw.size_bytes("4k") == 4096 and fw.size_bytes("1M") == 1 << 20 and fw.size_bytes("4096") == 4096
    assert fw.size_bytes("50000Mi") == 50000 << 20 and fw.size_bytes("1G") == 1 << 30
    assert fw.size_bytes("4k", kb_base=1000) == 4000 and fw.size_bytes("4ki", kb_base=1000) == 4096
    assert fw.size_bytes("50%") is None and fw.size_bytes("4k-64k") is None
    assert fw.seconds("60") == 60 and fw.seconds("60s") == 60 and fw.seconds("2m") == 120
    assert fw.seconds("500ms") == 0.5 and fw.seconds("abc") is None


def test_job_options_override_global_ones_and_defaults_fill_what_fio_left_out(tmp_path):
    doc = _doc({"bs": "1M", "iodepth": "64", "ioengine": "libaio", "direct": "1", "runtime": "60s",
                "time_based": "1", "filename": "/dev/sdb"},
               [("j", {"iodepth": "8", "rw": "randread"})])
    res = ingest(_write(tmp_path / "one.json", doc))
    row = res.summary[res.summary["metric"] == "iops"].iloc[0]
    assert (row["rw"], row["bs_B"], row["iodepth"], row["ioengine"], row["direct"]) == \
        ("randread", 1 << 20, 8, "libaio", 1)
    assert (row["runtime_s"], row["time_based"], row["target"], row["fio_version"]) == \
        (60.0, 1, "/dev/sdb", "fio-3.33")
    assert row["numjobs"] == 1  # not recorded: fio's default, and the meta says so
    meta = json.loads(res.files.loc[res.files["path"] == "one.json", "meta_json"].item())
    assert "numjobs" in meta["workload"]["defaults"] and "iodepth" not in meta["workload"]["defaults"]
    assert str(res.summary["iodepth"].dtype) == "Int64" and str(res.summary["bs_B"].dtype) == "Int64"


def test_per_direction_block_sizes_and_mixed_modes():
    keys, _ = fw.job_workload({"rw": "randrw", "bs": "4k,64k", "rwmixwrite": "30"})
    assert keys["bs_read_B"] == 4096 and keys["bs_write_B"] == 65536 and "bs_B" not in keys
    assert keys["rwmixread"] == 70
    keys, defaults = fw.job_workload({"rw": "randrw"})
    assert keys["rwmixread"] == 50 and "rwmixread" in defaults
    keys, _ = fw.job_workload({"rw": "randread", "buffered": "0"})
    assert keys["direct"] == 1 and "rwmixread" not in keys


def test_two_jobs_of_different_workloads_in_one_file_keep_their_own_keys(corpus):
    """kubestr's output: a randread and a randwrite job in one file (fio 3.20, gtod_reduce)."""
    p = corpus / "fio_json" / "kubestr_fio-3.20_read_iops_gtod_reduce.json"
    res = ingest(p)
    s = res.summary[res.summary["metric"] == "iops"]
    by_job = dict(zip(s["job"].astype(str), s["rw"].astype(str)))
    assert by_job == {"read_iops": "randread", "write_iops": "randwrite"}
    assert set(s["iodepth"]) == {64} and set(s["bs_B"]) == {4096} and set(s["target"]) == {"/dataset"}
    f = res.files.iloc[0]
    assert pd.isna(f.get("rw")) and f["iodepth"] == 64  # the file row keeps what both jobs share


def test_global_options_and_per_job_options_of_a_real_two_job_file(corpus):
    """gcsfuse: global bs 1M, iodepth 64; job 1 numjobs 40 reading, job 2 numjobs 10 writing."""
    res = ingest(corpus / "fio_json" / "gcsfuse_fio-3.30_multiple_jobs_job_options.json")
    s = res.summary[res.summary["metric"] == "bw"].set_index("job")
    assert s.loc["1_thread", "numjobs"] == 40 and s.loc["2_thread", "numjobs"] == 10
    assert s.loc["1_thread", "rw"] == "read" and s.loc["2_thread", "rw"] == "write"  # read: fio's default
    assert set(s["bs_B"]) == {1 << 20} and set(s["iodepth"]) == {64}
    assert s.loc["1_thread", "target"] == "gcs/3mb" and s.loc["2_thread", "target"] == "gcs/5mb"


def test_fio_2_1_records_no_options_so_no_workload_is_assumed(corpus):
    res = ingest(corpus / "fio_json" / "pkb_fio-2.1.4_sample-result.json")
    assert "rw" not in res.summary or res.summary["rw"].isna().all()
    assert "iodepth" not in res.summary or res.summary["iodepth"].isna().all()


def test_client_server_output_keys_per_host(corpus):
    res = ingest(corpus / "fio_json" / "pbench_fio-3.7_client-server_fio-result.txt")
    s = res.summary[(res.summary["metric"] == "iops") & (res.summary["job"].astype(str) != "All clients")]
    assert len(s) and set(s["rw"]) == {"read"} and set(s["numjobs"]) == {5} and set(s["iodepth"]) == {32}
    assert set(s["target"]) == {"/tmp/fio"}


def test_logs_take_the_keys_of_their_companion_json_job():
    """A fio JSON with two jobs and their per-job logs (fio 3.33, captured here)."""
    res = ingest(FIXTURES / "randwrite-4k-2jobs-offset")
    logs = res.series[res.series["kind"].astype(str) == "fio-log"]
    assert len(logs) and set(logs["rw"]) == {"randwrite"} and set(logs["bs_B"]) == {4096}
    js = res.summary[res.summary["kind"].astype(str) == "fio-json"]
    assert set(logs["iodepth"]) == set(js["iodepth"]) and logs["iodepth"].notna().all()


def test_run_json_stays_authoritative_and_a_disagreement_is_recorded(tmp_path):
    d = tmp_path / "run1"
    _write(d / "fio.json", _doc({"iodepth": "32", "rw": "randread"}, [("j", {})]))
    (d / "run.json").write_text(json.dumps({"campaign": "c", "iodepth": 16, "rw": "randread"}))
    res = ingest(tmp_path)
    assert set(res.summary["iodepth"]) == {16}
    f = res.files.set_index("path").loc["run1/fio.json"]
    assert f["workload_conflict"] == "iodepth: run.json 16, fio 32"


def test_bench_fio_layout_names_target_and_repeat_only(tmp_path):
    out = tmp_path / "out"
    for sub in ("dev-a/4k/run-1", "dev-a/4k/run-2", "dev-b/randrw70/4k"):
        _write(out / sub / "randread-16-4.json", _doc(None, [("j", {"rw": "randread", "iodepth": "16"})]))
    assert bench_fio_context(out / "dev-a/4k/run-2", out) == {"target": "dev-a", "repeat": 2,
                                                                "context_source": "bench_fio"}
    assert bench_fio_context(out / "dev-b/randrw70/4k", out)["target"] == "dev-b"
    assert bench_fio_context(out / "dev-a/4k/run-2", out / "dev-a")["target"] == "dev-a"  # the target folder as root
    _write(out / "notes/results/x.json", _doc(None, [("j", {"rw": "write"})]))
    assert bench_fio_context(out / "notes/results", out) == {}  # no bench_fio names: nothing guessed
    res = ingest(out)
    s = res.summary[res.summary["metric"] == "iops"].sort_values("source")
    assert s["target"].tolist()[:3] == ["dev-a", "dev-a", "dev-b"]
    assert pd.isna(s["target"].iloc[3])  # x.json records no filename and no layout names one
    assert s["repeat"].tolist()[:2] == [1, 2] and pd.isna(s["repeat"].iloc[2])
    assert s["iodepth"].tolist() == [16, 16, 16, 1]  # x.json: fio's default (it recorded rw only)


def test_a_subfolder_of_a_manifested_tree_is_checked_against_its_manifest(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f").write_text("x")
    (tmp_path / "MANIFEST.sha256").write_text("0" * 64 + "  a/b/f\n" + "1" * 64 + "  c/g\n")
    assert load_manifest(tmp_path / "a") == {"b/f": "0" * 64}
    assert load_manifest(tmp_path / "c" / "nothing") is None
    shutil.rmtree(tmp_path / "a")
    assert load_manifest(tmp_path) == {"a/b/f": "0" * 64, "c/g": "1" * 64}


# --- a bare time_based, which fio before 3.39 leaves out of its JSON ------------------------------------

WINDOWED = FIXTURES / "randread-4k-windowed"  # fio 3.33 run with a bare --time_based (its COMMAND file)


def test_fio_3_33_does_not_record_a_bare_time_based_so_it_is_not_keyed():
    """The fixture ran with ``--time_based`` (its COMMAND) on fio 3.33, whose JSON has no time_based (json
    module): it was keyed time_based=0, fio's default, as if size-limited.  Now there is no such key; what
    its IO says is said: 32,772,096 B moved of a 64 MiB file in 4.001 s of runtime 4 (json module) cannot
    tell."""
    assert "--time_based" in (WINDOWED / "COMMAND").read_text().split()
    doc = json.loads((WINDOWED / "randread-4k-windowed.json").read_text())
    job = doc["jobs"][0]
    assert doc["fio version"] == "fio-3.33"
    assert "time_based" not in job["job options"] and "time_based" not in doc["global options"]
    assert (job["read"]["io_bytes"], doc["global options"]["size"], job["read"]["runtime"]) == (32772096, "64M", 4001)
    files = ingest(WINDOWED, progress=False).files.set_index("path")
    row = files.loc["randread-4k-windowed.json"]
    assert pd.isna(row.get("time_based"))
    wl = json.loads(row["meta_json"])["workload"]
    assert "time_based" not in wl["keys"] and "time_based" not in wl["defaults"]
    assert wl["time_based_from"] == {"win": "not recorded (fio-3.33 leaves a bare time_based out of its JSON); its "
                                            "IO cannot tell: it ran its runtime within its size, as a time-based job "
                                            "and one limited by it both do"}


def test_what_the_io_says_of_an_unrecorded_time_based():
    """The IO decides where it can: more bytes than size × numjobs × loops only a time-based job moves; a job
    that ended without an error well before its runtime was not time-based."""
    k = {"size_B": 1 << 20, "runtime_s": 2.0, "numjobs": 1}
    assert fw.time_based_from_io(k, {"io_bytes": 2259087360, "runtime_s": 2.001}).startswith(
        "its IO says time-based: it moved 2259087360 B, more than size 1048576 B × 1")
    assert fw.time_based_from_io(k, {"io_bytes": 1 << 20, "runtime_s": 0.002}).startswith(
        "its IO says not time-based: it ended at 0.002 s of runtime 2 s")
    assert fw.time_based_from_io(k, {"io_bytes": 1 << 20, "runtime_s": 0.002, "error": 5}).startswith(
        "its IO cannot tell")  # an error ends a time-based job early too
    assert fw.time_based_from_io({**k, "numjobs": 4}, {"io_bytes": 3 << 20, "runtime_s": 2.0}).startswith(
        "its IO cannot tell")  # four clones of 1 MiB each


def test_fio_3_39_records_a_bare_time_based():
    """fio 3.39 writes a bare flag as "" (json module on a real qos-reef output): time_based=1, recorded."""
    import gzip
    p = ROOT / "data/raw/ceph-qos/qos-reef/snaptrim_recovery/balanced/rep-01/fio.json.gz"
    text = gzip.decompress(p.read_bytes()).decode()
    doc = json.loads(text[text.index("{"):])
    assert (doc["fio version"], doc["jobs"][0]["job options"]["time_based"]) == ("fio-3.39", "")
    keys, defaults = fw.job_workload(doc["jobs"][0]["job options"], doc["fio version"])
    assert keys["time_based"] == 1 and "time_based" not in defaults and "time_based_from" not in keys


@pytest.mark.parametrize("argv, want", [
    (["fio", "--name=x", "--time_based", "--runtime=3"], 1),
    (["fio", "--name=x", "--time_based=1"], 1),
    (["fio", "--name=x", "--time_based=0"], 0),
    (["fio", "--name=x", "--runtime=3"], 0),        # the whole workload on the line: fio's default
    (["fio", "job.fio", "--output=x.json"], None),  # a job file may set it
    ("fio --time_based", None), ([], None), (["fio", 3], None),
])
def test_a_recorded_command_line_decides_time_based(argv, want):
    assert fw.argv_time_based(argv) == want


def test_a_capture_run_takes_time_based_from_its_command_line(tmp_path):
    """A real qos-v2 run (fio 3.33, no time_based in its JSON) whose run.json records fio_argv with
    ``--time_based``: its JSON and logs are keyed time_based=1, said to come from run.json."""
    import gzip
    src = ROOT / "data/raw/ceph-qos/qos-v2/scrub/wpq/rep-01"
    rec = json.loads((src / "run.json").read_text())
    assert "--time_based" in rec["fio_argv"]
    text = gzip.decompress((src / "fio.json.gz").read_bytes()).decode()
    doc = json.loads(text[text.index("{"):])
    assert doc["fio version"] == "fio-3.33" and "time_based" not in doc["jobs"][0]["job options"]
    run = tmp_path / "run"
    shutil.copytree(src, run)
    (run / "MANIFEST.sha256").unlink(missing_ok=True)
    f = ingest(run, progress=False, lenient=True).files
    fio_rows = f[f["kind"].astype(str).isin(["fio-json", "fio-log"])]
    assert len(fio_rows) > 3 and set(fio_rows["time_based"].astype(str)) == {"1"}
    meta = json.loads(fio_rows.set_index("path").loc["fio.json.gz", "meta_json"])
    assert meta["time_based_from"] == "run.json fio_argv"


def test_a_filename_fio_repeats_in_job_options_names_every_file(tmp_path):
    """fio 3.34 repeats ``"filename"`` in a job's options once per device when the job file gives it
    several times (fio issue #1571, its excerpt: four NVMe devices); the json module keeps the last alone.
    The target is all four, joined as fio's own ``filename=a:b:c:d``."""
    doc = _doc(None, [("reads0", {"rw": "randread"})])
    text = json.dumps(doc, indent=1)
    names = ["Nvme0n1", "Nvme1n1", "Nvme2n1", "Nvme3n1"]
    text = text.replace('"rw": "randread"', '"rw": "randread", ' + ", ".join(f'"filename": "{n}"' for n in names))
    assert json.loads(text)["jobs"][0]["job options"]["filename"] == "Nvme3n1"  # what a plain reading gives
    (tmp_path / "x.json").write_text(text)
    f = ingest(tmp_path, progress=False).files.set_index("path")
    assert f.loc["x.json", "target"] == "Nvme0n1:Nvme1n1:Nvme2n1:Nvme3n1"
