"""Attacks by a cut at a line or record boundary: real files shortened by hand so that they read cleanly,
each with what must happen now.

A file cut exactly where a line or a record ends has no torn last line: before, a per-IO or histogram fio
log, a sysutil log and a binary block trace read ``ok`` with a part of their series.  What else was
written of the same run tells: fio's JSON (``total_ios``, the runtime) for its logs, and the capture's
``run.json`` for sysutil (``cpu.wall_s``) and block traces (``trace.bytes``).  Each is ``partial`` now,
with both numbers, and the uncut files beside it stay ok.

Expected values come from the files (json module; lines and records counted by hand), never from the code
under test.
"""

from __future__ import annotations

import gzip
import json
import shutil
import struct
from pathlib import Path

import pytest

from analysis.__main__ import main
from analysis.ingest import fio_log, sysutil
from analysis.ingest.base import Parsed
from analysis.ingest.completeness import shortfall
from analysis.ingest.runfolder import RunFolder
from analysis.ingest.walk import ingest

ROOT = Path(__file__).resolve().parents[1]
FIO = ROOT / "tests/fixtures/fio"
PERIO = FIO / "randrw-4k-perio"        # fio 3.33, randrw 300/200 IOPS for 3 s, per-IO logs
WINDOWED = FIO / "randread-4k-windowed"  # fio 3.33, randread 2000 IOPS for 4 s, 0.5 s windows and histograms
#: a block-2026 run: fio read 4k QD16 on a loop device under bfq, with sysutil and a 0.5 s block trace
BLOCK_RUN = ROOT / "data/raw/block/block-2026/fio-raw-read-4k-qd16/bfq/rep-01"


def _cut(src_dir: Path, dest: Path, log: str, keep: int) -> list[str]:
    """``src_dir`` copied to ``dest`` with ``log`` cut to its first ``keep`` lines; the log's lines."""
    shutil.copytree(src_dir, dest)
    lines = (src_dir / log).read_text().splitlines(keepends=True)
    (dest / log).write_text("".join(lines[:keep]))
    return lines


def _status(files, path: str) -> tuple[str, str | None]:
    f = files.set_index("path")
    meta = json.loads(f.loc[path, "meta_json"]) if isinstance(f.loc[path, "meta_json"], str) else {}
    why = meta.get("partial_reason") or "; ".join(meta.get("incomplete") or []) or None
    return f.loc[path, "status"], why


def _per_direction(lines: list[str]) -> dict[str, int]:
    """Lines per direction of a fio log (column 3: 0 read, 1 write)."""
    n = {"read": 0, "write": 0}
    for line in lines:
        n[("read", "write")[int(line.split(",")[2])]] += 1
    return n


def test_a_per_io_log_cut_at_a_line_is_partial(tmp_path, capsys):
    """perio_clat.1.log holds one line per IO (900 reads, 600 writes: fio's total_ios).  Cut to its first
    1,400 lines it read ok; now it is partial with the lines and the IOs of each short direction, and the
    other logs stay ok."""
    doc = json.loads((PERIO / "randrw-4k-perio.json").read_text())["jobs"][0]
    total = {d: doc[d]["total_ios"] for d in ("read", "write")}
    lines = _cut(PERIO, tmp_path / "p", "perio_clat.1.log", 1400)
    assert _per_direction(lines) == total == {"read": 900, "write": 600}
    kept = _per_direction(lines[:1400])
    assert kept == {"read": 840, "write": 560}  # both more than 8 IOs short
    files = ingest(tmp_path / "p", progress=False).files
    status, why = _status(files, "perio_clat.1.log")
    assert status == "partial"
    assert why == "; ".join(
        f"the {d} lines are {kept[d]:,} IOs, job 'perio' completed {total[d]:,} (randrw-4k-perio.json; a "
        "per-IO log has one line per IO): the log was cut" for d in ("read", "write"))
    others = {p: s for p, s in zip(files["path"], files["status"]) if p.endswith(".log") and p != "perio_clat.1.log"}
    assert others == {"perio_bw.1.log": "ok", "perio_iops.1.log": "ok", "perio_lat.1.log": "ok",
                      "perio_slat.1.log": "empty"}
    assert main(["ingest", str(tmp_path / "p"), "--out", str(tmp_path / "out")]) == 0  # partial is no failure
    err = capsys.readouterr().err
    assert f"1 partial (read, incomplete):\n  perio_clat.1.log: {why}\n" in err


def test_a_per_io_log_a_few_lines_short_is_whole(tmp_path):
    """The rule's limit: a per-IO log is whole within 8 IOs of total_ios (fio logs the IOs in flight at the
    end of ramp_time without counting them, so a log may hold more, never fewer).  Cut where 8 reads (and
    fewer writes) are gone it stays ok; where 9 reads are gone it is partial."""
    lines = (PERIO / "perio_lat.1.log").read_text().splitlines(keepends=True)
    gone = {}  # lines cut from the end → (reads, writes) among them, counted by hand
    for k in range(1, 40):
        gone[k] = (_per_direction(lines[-k:])["read"], _per_direction(lines[-k:])["write"])
    k8 = max(k for k, (r, w) in gone.items() if r == 8 and w <= 8)
    k9 = min(k for k, (r, _) in gone.items() if r == 9)
    st = {}
    for k in (k8, k9):
        _cut(PERIO, tmp_path / str(k), "perio_lat.1.log", len(lines) - k)
        st[gone[k][0]] = _status(ingest(tmp_path / str(k), progress=False).files, "perio_lat.1.log")[0]
    assert st == {8: "ok", 9: "partial"}


def test_a_large_per_io_log_read_in_blocks_is_judged_the_same(tmp_path):
    """Logs of 256 MiB and more are read in blocks (``parse_stream``): the cut log read so, 4 KiB a block,
    is partial with the same reason as when read whole."""
    _cut(PERIO, tmp_path / "p", "perio_clat.1.log", 1400)
    path = tmp_path / "p/perio_clat.1.log"
    whole = fio_log.parse(path, None, RunFolder(path.parent))
    blocks = fio_log.parse_stream(path, chunk_bytes=4096, folder=RunFolder(path.parent))
    assert blocks.meta["streamed"]["blocks"] > 5
    assert whole.partial and blocks.partial
    assert blocks.meta["partial_reason"] == whole.meta["partial_reason"]
    assert "the read lines are 840 IOs, job 'perio' completed 900" in blocks.meta["partial_reason"]


def test_a_histogram_log_cut_at_a_line_is_partial(tmp_path):
    """win_clat_hist.1.log has 7 intervals of 0.5 s (ending 0.501 … 3.501 s) of a 4.001 s job; fio does not
    write the last partial one.  Cut to 5 intervals (ends 2.501 s: 1.5 s short, over 2 intervals + 10 % of
    the runtime, and 5,003 of 8,001 IOs) it read ok; now partial.  Cut to 6 it is within the rule: ok."""
    doc = json.loads((WINDOWED / "randread-4k-windowed.json").read_text())["jobs"][0]
    assert (doc["read"]["runtime"], doc["read"]["total_ios"], doc["job options"]["log_hist_msec"]) == (4001, 8001, "500")
    lines = (WINDOWED / "win_clat_hist.1.log").read_text().splitlines()
    assert [int(x.split(",")[0]) for x in lines] == [501, 1001, 1501, 2001, 2501, 3001, 3501]
    held = sum(sum(int(v) for v in x.split(",")[3:]) for x in lines[:5])
    assert held == 5003
    st = {}
    for keep in (5, 6):
        _cut(WINDOWED, tmp_path / str(keep), "win_clat_hist.1.log", keep)
        st[keep] = _status(ingest(tmp_path / str(keep), progress=False).files, "win_clat_hist.1.log")
    assert st[6] == ("ok", None)
    assert st[5] == ("partial", "the read intervals end at 2.501 s, job 'win' ran 4.001 s (randread-4k-windowed.json; "
                     f"intervals of 0.5 s, a whole log ends within one of the runtime; they hold {100 * held / 8001:.0f} % "
                     "of its IOs): the log was cut")


@pytest.fixture()
def block_run(tmp_path) -> Path:
    """BLOCK_RUN copied with sysutil.jsonl and trace.blktrace decompressed."""
    dest = tmp_path / "run"
    shutil.copytree(BLOCK_RUN, dest)
    for name in ("sysutil.jsonl", "trace.blktrace"):
        (dest / name).write_bytes(gzip.decompress((dest / f"{name}.gz").read_bytes()))
        (dest / f"{name}.gz").unlink()
    return dest


def test_a_sysutil_log_cut_at_a_line_is_partial(block_run):
    """The run's monitor ran 4.338 s (run.json cpu.wall_s) and wrote 5 lines 1 s apart: they cover
    4 + 1 s.  Cut to its first 3 lines (covering 3 s) it read ok; now partial.  Cut by nothing, ok."""
    record = json.loads((block_run / "run.json").read_text())
    lines = (block_run / "sysutil.jsonl").read_text().splitlines(keepends=True)
    t = [json.loads(x)["t"] for x in lines]
    assert (record["cpu"]["wall_s"], len(t)) == (4.338, 5)
    assert _status(ingest(block_run, progress=False).files, "sysutil.jsonl") == ("ok", None)
    (block_run / "sysutil.jsonl").write_text("".join(lines[:3]))
    covered = t[2] - t[0] + 1.0  # the median interval is 1 s (the stamps by hand)
    assert sorted(round(b - a, 2) for a, b in zip(t, t[1:]))[1:3] == [1.0, 1.0]
    assert _status(ingest(block_run, progress=False).files, "sysutil.jsonl") == (
        "partial", f"its lines cover {covered:.4g} s, the monitor ran 4.338 s (run.json cpu.wall_s; one line per "
                   "1 s): the log was cut")


def _record_ends(data: bytes) -> list[int]:
    """Where each blk_io_trace record ends: a 48-byte header whose last two bytes (little-endian u16,
    offset 46) are the length of the payload after it (blktrace_api.h)."""
    ends, at = [], 0
    while at < len(data):
        (pdu,) = struct.unpack_from("<H", data, at + 46)
        at += 48 + pdu
        ends.append(at)
    return ends


def test_a_block_trace_cut_at_a_record_is_partial(block_run):
    """The tracer wrote 12,313,187 bytes (run.json trace.bytes), the file's size.  Cut after the record that
    ends nearest its middle, the trace read ok; now partial with both sizes."""
    record = json.loads((block_run / "run.json").read_text())
    data = (block_run / "trace.blktrace").read_bytes()
    assert record["trace"]["bytes"] == len(data) == 12313187
    ends = _record_ends(data)
    assert ends[-1] == len(data)
    k = min(ends, key=lambda e: abs(e - len(data) // 2))
    (block_run / "trace.blktrace").write_bytes(data[:k])
    status, why = _status(ingest(block_run, progress=False).files, "trace.blktrace")
    assert status == "partial"
    assert why == (f"it holds {k:,} bytes of the 12,313,187 the tracer wrote (run.json trace.bytes; "
                   f"{100 * k / len(data):.0f} %): the trace was cut")


def test_a_phase_trace_is_checked_against_its_phase(tmp_path):
    """rados-block-2026 records each phase's trace under the phase (``seq.trace.bytes`` for
    trace-seq.blktrace.gz): the real file holds them all; cut by one record, it is short."""
    run = ROOT / "data/raw/block/rados-block-2026/rados-4k-qd16/mq-deadline/rep-01"
    record = json.loads((run / "run.json").read_text())
    data = gzip.decompress((run / "trace-seq.blktrace.gz").read_bytes())
    assert record["seq"]["trace"]["bytes"] == len(data) == 323360
    whole = Parsed(path="x", kind="blktrace", meta={})
    assert shortfall(whole, run / "trace-seq.blktrace.gz", record) is None
    assert whole.meta["recorded_bytes"] == {"run.json": "seq.trace", "bytes": 323360, "file_bytes": 323360}
    short = tmp_path / "trace-seq.blktrace"
    short.write_bytes(data[:_record_ends(data)[-2]])
    why = shortfall(Parsed(path=str(short), kind="blktrace", meta={}), short, record)
    assert why is not None and why.endswith("bytes of the 323,360 the tracer wrote (run.json seq.trace.bytes; "
                                            "100 %): the trace was cut")


def test_no_real_capture_file_is_taken_for_a_cut_one():
    """The rules' false alarms: every block trace of data/raw (48) holds the bytes its run.json recorded,
    and the sysutil logs of the 36 traced block runs and of the 120 qos-reef runs are whole."""
    traces = sorted((ROOT / "data/raw/block").rglob("*.blktrace.gz"))
    assert len(traces) == 48
    for p in traces:
        parsed = Parsed(path=str(p), kind="blktrace", meta={})
        assert shortfall(parsed, p, RunFolder(p.parent).record()) is None, p
        assert parsed.meta["recorded_bytes"]["bytes"] == parsed.meta["recorded_bytes"]["file_bytes"]
    logs = [r / "sysutil.jsonl.gz" for r in sorted({p.parent for p in traces})]
    logs += sorted((ROOT / "data/raw/ceph-qos/qos-reef").glob("*/*/rep-*/sysutil.jsonl.gz"))
    assert len(logs) == 36 + 120  # 24 block-2026 runs with one trace, 12 rados-block-2026 runs with two
    for p in logs:
        parsed = sysutil.parse(p, gzip.decompress(p.read_bytes()))
        assert not parsed.partial and shortfall(parsed, p, RunFolder(p.parent).record()) is None, p
