"""fio job files (analysis.ingest.fio_jobfile): sections and options by fio's ini rules, no rows, the workload in
meta; other INI files (ceph.conf, tox.ini) are not claimed.  Expected values are typed from the files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from analysis.ingest import IngestError, detect, read
from analysis.ingest import fio_jobfile
from conftest import CORPUS
from test_fuzz import mutated, parse_directly

TEXT = CORPUS / "fio_text"


@pytest.fixture
def text_corpus(corpus) -> Path:
    if not TEXT.is_dir():
        pytest.skip("../shared/corpus/fio_text is absent")
    return TEXT


def test_jtulak_job_file(text_corpus):
    p = read(text_corpus / "jtulak_fio-2.1.2_terse-v3.jobfile.fio")
    assert p.kind == "fio-jobfile" and len(p.summary) == 0 and list(p.summary.columns)[-1] == "unit"
    g = p.meta["global_options"]
    assert g["rw"] == "randrw" and g["rwmixread"] == "80" and g["size"] == "200M" and g["directory"] == "/iotest"
    assert g["blocksize"] == "8k" and g["direct"] == "1" and g["runtime"] == "10" and g["ioengine"] == "libaio"
    assert g["time_based"] == "" and g["numjobs"] == "$ncpus*2"  # a bare flag; a value fio expands when it runs
    assert g["exec_prerun"] == "echo 3 > /proc/sys/vm/drop_caches"  # the trailing blank is not part of it
    assert "group_reporting" not in g  # "#group_reporting" is a comment
    assert p.meta["jobs"] == ["test-multi-file-io-4", "test-multi-file-io-8", "test-multi-file-io-16"]
    assert p.meta["job_options"]["test-multi-file-io-8"] == {"new_group": "", "iodepth": "8", "nrfiles": "20"}
    assert p.meta["groups"] == {"test-multi-file-io-4": 0, "test-multi-file-io-8": 1, "test-multi-file-io-16": 2}
    assert p.meta["effective_options"]["test-multi-file-io-16"]["iodepth"] == "16"
    assert p.meta["effective_options"]["test-multi-file-io-16"]["rw"] == "randrw"
    wl = p.meta["workload"]
    k = wl["keys"]
    assert (k["rw"], k["rwmixread"], k["bs_B"], k["direct"], k["size_B"], k["runtime_s"], k["time_based"],
            k["ioengine"], k["target"]) == ("randrw", 80, 8192, 1, 200 * 2 ** 20, 10.0, 1, "libaio", "/iotest")
    assert {j: v["iodepth"] for j, v in wl["by_job"].items()} == \
        {"test-multi-file-io-4": 4, "test-multi-file-io-8": 8, "test-multi-file-io-16": 16}
    # numjobs=$ncpus*2 is neither 1 (fio's default) nor known here: left out, and said so
    assert "numjobs" not in k and "numjobs" not in wl["defaults"] and wl["unresolved_keys"] == ["numjobs"]
    assert all(v == {"numjobs": "$ncpus*2"} for v in p.meta["unresolved"].values())


def test_pbench_job_file(text_corpus):
    p = read(text_corpus / "pbench_fio-3.7_fio.job")
    assert p.kind == "fio-jobfile" and p.meta["jobs"] == ["job-/tmp/fio"] and p.meta["groups"] == {"job-/tmp/fio": 0}
    g = p.meta["global_options"]
    assert (g["bs"], g["runtime"], g["iodepth"], g["ramp_time"], g["write_hist_log"], g["log_hist_msec"]) == \
        ("4k", "15", "32", "5", "fio", "10000")
    assert p.meta["job_options"]["job-/tmp/fio"] == {"filename": "/tmp/fio", "rw": "read", "size": "4096M",
                                                      "numjobs": "5"}
    k = p.meta["workload"]["keys"]
    assert (k["rw"], k["bs_B"], k["iodepth"], k["numjobs"], k["ioengine"], k["direct"], k["size_B"],
            k["runtime_s"], k["time_based"], k["target"]) == \
        ("read", 4096, 32, 5, "libaio", 1, 4096 * 2 ** 20, 15.0, 1, "/tmp/fio")
    assert p.meta["workload"]["defaults"] == [] and p.meta["unresolved"] == {}


JOBS = """\
; fio's semantics: a [global] applies to the jobs after it, a later one adds to it
[global]
rw=read
bs=4k
ioengine=psync

[a]
size=1m   ; an inline comment

[global]
bs = 64k  # blanks around '=' and another comment

[b]
iodepth=8

[c]
stonewall
numjobs=2

[c]
new_group
"""


def test_later_global_sections_apply_to_later_jobs(tmp_path):
    f = tmp_path / "sweep.job"
    f.write_text(JOBS)
    p = read(f)
    assert p.kind == "fio-jobfile" and p.meta["jobs"] == ["a", "b", "c#0", "c#1"]
    eff = p.meta["effective_options"]
    assert eff["a"] == {"rw": "read", "bs": "4k", "ioengine": "psync", "size": "1m"}
    assert eff["b"] == {"rw": "read", "bs": "64k", "ioengine": "psync", "iodepth": "8"}
    assert p.meta["global_options"] == {"rw": "read", "bs": "64k", "ioengine": "psync"}
    assert p.meta["job_options"]["c#0"] == {"stonewall": "", "numjobs": "2"}
    assert p.meta["groups"] == {"a": 0, "b": 0, "c#0": 1, "c#1": 2}  # stonewall, then new_group
    by = p.meta["workload"]["by_job"]
    assert by["a"]["bs_B"] == 4096 and by["b"]["bs_B"] == 65536 and by["c#0"]["numjobs"] == 2
    assert [s["name"] for s in p.meta["sections"]] == ["global", "a", "global", "b", "c", "c"]


CEPH_CONF = """\
[global]
\tfsid = 3a1b2c4d-0000-0000-0000-000000000000
\tmon host = 10.0.0.1
\tosd pool default size = 3

[osd]
\tosd_op_queue = mclock_scheduler
"""


@pytest.mark.parametrize("text", [
    CEPH_CONF,
    "[global]\nfsid=1\nmon_host=10.0.0.1\nosd_pool_default_size=3\nosd_op_queue=wpq\n",
    "[tox]\nenvlist = py311\n[testenv]\ndeps = pytest\ncommands = pytest -q\n",
    "[Unit]\nDescription=x\n[Service]\nExecStart=/bin/true\n",
    "size=3\n[global]\nrw=read\nbs=4k\n",  # an option before any section: not a fio job file
], ids=["ceph.conf", "ceph.conf-underscores", "tox.ini", "systemd", "option-first"])
def test_other_ini_files_are_not_claimed(text, tmp_path):
    f = tmp_path / "some.conf"
    f.write_text(text)
    assert not fio_jobfile.sniff(text.encode())
    assert detect(f) is None


def test_damaged_job_files_fail_with_their_line(tmp_path):
    f = tmp_path / "bad.fio"
    f.write_text("; comment\nrw=read\n[a]\n")
    with pytest.raises(IngestError, match=r"bad.fio:2: expected a '\[section\]' before options"):
        fio_jobfile.parse(f, f.read_bytes())
    f.write_text("[global]\nrw=read\n[job\nbs=4k\n")
    with pytest.raises(IngestError, match=r"bad.fio:3: expected a section header '\[name\]'"):
        fio_jobfile.parse(f, f.read_bytes())
    f.write_text("[global]\nrw=read\nmon host = x\n")
    with pytest.raises(IngestError, match=r"bad.fio:3: expected 'option=value', a bare 'option'"):
        fio_jobfile.parse(f, f.read_bytes())


def test_include_is_listed_and_only_global_sections_run_nothing(tmp_path):
    f = tmp_path / "inc.fio"
    f.write_text("[global]\nioengine=libaio\ninclude common.fio\nbs=4k\n")
    p = fio_jobfile.parse(f, f.read_bytes())
    assert p.meta["includes"] == ["common.fio"] and p.meta["jobs"] == [] and p.meta["workload"] == {}
    assert "no job section" in p.meta["note"]


def test_mutations_never_escape_the_reader(tmp_path):
    data = JOBS.encode()
    target = tmp_path / "x.fio"

    @settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES_TEXT", "150")), deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(mutated(data))
    def check(blob: bytes):
        parse_directly(fio_jobfile, target, blob)

    check()
