"""Binary blk_io_trace records, blkparse text and btt text: hand-made traces with known answers, the
third-party samples in ../shared/corpus/blkparse, and the cross-check between the three."""

from __future__ import annotations

import gzip
from pathlib import Path
import shutil
import struct
import subprocess

import numpy as np
import pandas as pd
import pytest

from analysis.ingest import IngestError, read
from analysis.ingest import blktrace as bt
from analysis.ingest.detect import detect

from conftest import FIXTURES

FIXTURES_BLK = FIXTURES / "blktrace"
DEV = (7 << 20) | 3  # loop3 as the kernel encodes it → "7,3"
W, R = bt.TC_WRITE, bt.TC_READ


def rec(t: int, code: int, cat: int = 0, sector: int = 0, nsect: int = 0, pid: int = 42, dev: int = DEV,
        pdu: bytes = b"", order: str = "<", error: int = 0) -> bytes:
    dt = np.dtype([(n, order + f) for n, f in bt._FIELDS])
    h = np.zeros(1, dt)
    h["magic"], h["time"], h["sector"], h["bytes"] = bt.MAGIC | bt.VERSION, 1_000_000 + t, sector, nsect * 512
    h["action"], h["pid"], h["device"], h["error"], h["pdu_len"] = (cat << 16) | code, pid, dev, error, len(pdu)
    return h.tobytes() + pdu


def hand_trace(order: str = "<") -> bytes:
    """Four requests (times in ns since the first record):

    1. write: bio A Q 0 @100+8 (G 1), bio B Q 2 @108+8 back-merged (M 3), bio C Q 4 @92+8 front-merged
       (F 5); I 6 @92+24, D 10, C 30 → bios' Q2C 30, 28, 26; D2C 20; Q2D 10, 8, 6.
    2. read: Q 40 @500+16, G 41, I 42, D 43, C 53 → Q2C 13, D2C 10.
    3. write, requeued: Q 60 @1000+8, G 61, I 62, D 63, R 64, D 70, C 80 → D2C 10 (last issue), Q2C 20.
    4. two writes merged without a trace event: Q 90 @2000+8 (G 91, I 92), Q 93 @2008+8 (G 94, I 95),
       D 100 @2000+16, C 110 → Q2C 20 and 17, D2C 10 each.
    Plus a process-name record, a plug/unplug pair (8-byte payload) and a BFQ-style message whose
    payload contains the magic, so the reader must follow the record chain, not the magic.
    """
    r = lambda *a, **k: rec(*a, order=order, **k)  # noqa: E731
    fake = struct.pack(order + "I", bt.MAGIC | bt.VERSION) + b"\xff" * 44 + b"bfq0 in the payload"
    return b"".join([
        r(0, bt.TN_PROCESS, bt.TC_NOTIFY, pdu=b"fio\0"),
        r(0, bt.TA_Q, W, 100, 8), r(1, bt.TA_G, W, 100, 8), r(1, 9, 0),
        r(2, bt.TA_Q, W, 108, 8), r(3, bt.TA_M, W, 108, 8),
        r(4, bt.TA_Q, W, 92, 8), r(5, bt.TA_F, W, 92, 8),
        r(5, 10, 0, pdu=struct.pack(">Q", 1)),
        r(6, bt.TA_I, W, 92, 24), r(7, bt.TN_MESSAGE, bt.TC_NOTIFY, pdu=fake),
        r(10, bt.TA_D, W, 92, 24), r(30, bt.TA_C, W, 92, 24, pid=0),
        r(40, bt.TA_Q, R, 500, 16, pid=43), r(41, bt.TA_G, R, 500, 16), r(42, bt.TA_I, R, 500, 16),
        r(43, bt.TA_D, R, 500, 16), r(53, bt.TA_C, R, 500, 16),
        r(60, bt.TA_Q, W, 1000, 8), r(61, bt.TA_G, W, 1000, 8), r(62, bt.TA_I, W, 1000, 8),
        r(63, bt.TA_D, W, 1000, 8), r(64, bt.TA_R, W, 1000, 8), r(70, bt.TA_D, W, 1000, 8),
        r(80, bt.TA_C, W, 1000, 8),
        r(90, bt.TA_Q, W, 2000, 8), r(91, bt.TA_G, W, 2000, 8), r(92, bt.TA_I, W, 2000, 8),
        r(93, bt.TA_Q, W, 2008, 8), r(94, bt.TA_G, W, 2008, 8), r(95, bt.TA_I, W, 2008, 8),
        r(100, bt.TA_D, W, 2000, 16), r(110, bt.TA_C, W, 2000, 16),
    ])


def _write(tmp_path, data: bytes, name: str = "loop3.blktrace.0"):
    p = tmp_path / name
    p.write_bytes(data)
    return p


@pytest.mark.parametrize("order", ["<", ">"])
def test_hand_trace_requests_and_bios(tmp_path, order):
    parsed = read(_write(tmp_path, hand_trace(order)))
    assert parsed.kind == "blktrace"
    assert parsed.meta["byte_order"] == ("little" if order == "<" else "big")
    assert parsed.meta["records"] == 33
    assert parsed.meta["process_names"] == {42: "fio"}
    assert parsed.meta["notify_records"] == 2
    req = parsed.tables["requests"].sort_values("c_ns").reset_index(drop=True)
    assert list(req["c_ns"]) == [30, 53, 80, 110]
    assert list(req["ddir"]) == ["write", "read", "write", "write"]
    assert list(req["n_bios"]) == [3, 1, 1, 2]
    assert list(req["q_ns"]) == [0, 40, 60, 90]
    assert list(req["d_ns"]) == [10, 43, 70, 100]
    assert list(req["q2c_ns"]) == [30, 13, 20, 20]
    assert list(req["d2c_ns"]) == [20, 10, 10, 10]
    assert list(req["rwbs"]) == ["W", "R", "W", "W"]
    assert list(req["nbytes"]) == [24 * 512, 16 * 512, 8 * 512, 16 * 512]
    assert req.loc[0, "g_ns"] == 1 and req.loc[0, "i_ns"] == 6  # I found at the request's new start
    assert req.loc[1, "g_ns"] == 41 and req.loc[1, "i_ns"] == 42
    bios = parsed.tables["bios"].sort_values("q_ns").reset_index(drop=True)
    assert list(bios["merge"]) == ["", "M", "F", "", "", "", ""]
    assert list(bios["q2c_ns"]) == [30, 28, 26, 13, 20, 20, 17]
    assert list(bios["q2d_ns"]) == [10, 8, 6, 3, 10, 10, 7]
    assert parsed.meta["bio_groups_without_completion"] == 0
    assert parsed.meta["requeues"] == 1
    v = parsed.value
    assert v("completed", "write", "7,3") == 3 and v("completed", "read", "7,3") == 1
    assert v("queued", "write", "7,3") == 6 and v("merges", "write", "7,3") == 2
    assert v("q2c_mean", "write", "7,3") == pytest.approx((30 + 28 + 26 + 20 + 20 + 17) / 6)
    assert v("d2c_mean", "write", "7,3") == pytest.approx((20 * 3 + 10 * 3) / 6)
    assert v("q2c_mean", "", "7,3") == pytest.approx((30 + 28 + 26 + 13 + 20 + 20 + 17) / 7)
    assert v("completed_bytes", "", "7,3") == (24 + 16 + 8 + 16) * 512
    assert v("span", "", "7,3") == pytest.approx(110e-9)
    assert v("events", "", "7,3") == 31  # blkparse counts no notify records


def test_detect_and_rwbs():
    assert bt.sniff(hand_trace()) and bt.sniff(hand_trace(">"))
    assert not bt.sniff(b"  8,0    3        1     0.000000000   697  G   W 223490 + 8 [kjournald]\n")
    cats = np.array([bt.TC_WRITE | bt.TC_SYNC, bt.TC_READ | bt.TC_AHEAD, bt.TC_FLUSH | bt.TC_WRITE | bt.TC_FUA,
                     bt.TC_FLUSH, bt.TC_DISCARD | bt.TC_WRITE, bt.TC_READ | bt.TC_META])
    nbytes = np.array([4096, 4096, 0, 0, 4096, 4096])
    assert list(bt.rwbs(cats << 16, nbytes)) == ["WS", "RA", "FWF", "FN", "D", "RM"]
    assert bt.dev_name(DEV) == "7,3"


@pytest.fixture(params=["c", "numpy"])
def walker(request, monkeypatch):
    """Run a test with the C record walker (_blkscan.c) and with the numpy fallback."""
    from analysis.ingest import blktrace as bt
    if request.param == "numpy":
        monkeypatch.setattr(bt, "_clib", lambda: None)
    elif bt._clib() is None:
        pytest.skip("no C compiler here")
    return request.param


def test_bad_records_name_the_byte_offset(tmp_path, walker):
    good = hand_trace()
    # wrong magic in the 3rd record (records 0 and 1 are 48+4 and 48 bytes long)
    bad = bytearray(good)
    bad[100:104] = b"\0\0\0\0"
    with pytest.raises(IngestError) as e:
        read(_write(tmp_path, bytes(bad), "a.bin"))
    assert e.value.offset == 100 and "magic" in str(e.value) and "after the record at byte 52" in str(e.value)
    # truncated payload: the file ends inside the last record
    with pytest.raises(IngestError) as e:
        read(_write(tmp_path, good[:-10], "b.bin"))
    assert e.value.offset == len(good) - 48 and "truncated" in str(e.value)
    # unknown action code
    unk = good + rec(200, 30, W, 0, 0)
    with pytest.raises(IngestError) as e:
        read(_write(tmp_path, unk, "c.bin"))
    assert e.value.offset == len(good) and "unknown action" in str(e.value)
    # a version this reader does not know
    v6 = bytearray(good)
    v6[0] = 6
    with pytest.raises(IngestError) as e:
        read(_write(tmp_path, bytes(v6), "d.bin"))
    assert e.value.offset == 0 and "version 6" in str(e.value)


# ---- third-party samples -------------------------------------------------------------------------

def test_takeoverjp_binary_matches_btt_and_blkparse(corpus):
    d = corpus / "blkparse"
    binr = read(d / "takeoverjp_sample.blktrace.0")
    text = read(d / "derived_local_render" / "takeoverjp_sample.blkparse-1.2.0.txt")
    btt = read(d / "derived_local_render" / "takeoverjp_sample.btt-1.2.0.txt")
    assert (binr.kind, text.kind, btt.kind) == ("blktrace", "blkparse", "btt")
    dev = "259,0"
    # counts equal blkparse's own summary ("Reads Completed: 963", "Reads Queued: 963", 6741 entries)
    assert binr.value("completed", "read", dev) == text.value("completed", "read", dev) == 963
    assert binr.value("queued", "read", dev) == text.value("queued", "read", dev) == 963
    assert binr.value("completed_bytes", "read", dev) == text.value("completed_bytes", "read", dev) == 3852 * 1024
    assert binr.value("events", "", dev) == text.value("events", "", dev) == 6741
    assert len(binr.tables["requests"]) == 963
    # mean Q2C and D2C equal btt's within 1 % (btt prints 56.609 µs and 55.949 µs, N 963)
    assert btt.value("q2c_n", job="all") == 963
    for m in ("q2c", "d2c"):
        assert binr.value(f"{m}_mean", "", dev) == pytest.approx(btt.value(f"{m}_mean", job="all"), rel=0.01)
    # the text render carries the same events: identical per-bio latencies
    a = binr.tables["bios"].sort_values("q_ns")["q2c_ns"].to_numpy()
    b = text.tables["bios"].sort_values("q_ns")["q2c_ns"].to_numpy()
    np.testing.assert_array_equal(a, b)
    assert all(c["ok"] for c in text.meta["crosscheck"].values())
    assert binr.meta["bio_groups_without_completion"] == 0


def test_blkparse_doc_sample(corpus):
    p = read(corpus / "blkparse" / "blktrace-doc_blkparse_live_sda_with_summary.txt")
    v = p.value
    # the Total (8,0) block of the tool's summary
    assert v("completed", "write", "8,0") == 11 and v("completed_bytes", "write", "8,0") == 168 * 1024
    assert v("queued", "write", "8,0") == 11 and v("merges", "write", "8,0") == 31
    assert v("timer_unplugs", "", "8,0") == 3 and v("events", "", "8,0") == 89
    assert v("skips", "", "8,0") == 0
    assert p.meta["events"] == 16 and p.meta["skipped_lines"] == 3  # "...", "^C", "..."
    # the doc shows M lines without their Q lines: counted, not guessed
    assert p.meta["merge_events_without_q"] == 6
    req = p.tables["requests"].sort_values("c_ns").reset_index(drop=True)
    assert list(req["nbytes"]) == [56 * 512, 8 * 512]
    assert req.loc[0, "q2c_ns"] == 9_507_758 - 2_197
    assert req.loc[1, "d2c_ns"] == 13_542_170 - 9_542_980
    # only 16 of the 89 events are shown, so the recount cannot match the tool's and says so
    assert not p.meta["crosscheck"]["8,0 write completed"]["ok"]
    assert not p.partial


def test_blkparse_passthrough_sample(corpus):
    p = read(corpus / "blkparse" / "blktrace-doc_blkparse_scsi_pc_commands.txt")
    assert p.meta["events"] == 5 and p.meta["pc_events"] == 3
    assert len(p.tables["requests"]) == 0  # the completion is a passthrough one
    assert p.partial  # no summary in the excerpt


def test_btt_doc_sample(corpus):
    p = read(corpus / "blkparse" / "blktrace-doc_btt_sample_output.txt")
    v = p.value
    assert v("q2c_mean", job="all") == 394_797_701 and v("q2c_n", job="all") == 491566
    assert v("q2q_min", job="all") == 455 and v("d2c_max", job="all") == 2_011_319_687
    assert v("q2qdm_n", job="all") == 491531
    assert v("d2c_share", job="8,0") == pytest.approx(0.410914)
    assert v("i2d_share", job="all") == pytest.approx(0.162534)
    assert v("q_count", job="8,32") == 244754 and v("merge_ratio", job="all") == pytest.approx(56.1)
    assert v("blk_max", job="8,0") == 1024
    assert v("q2q_nseeks", job="9,0") == 491532 and v("d2d_seek_mean", job="8,0") == pytest.approx(219326.9)
    assert v("plugs", job="8,0") == 1152 and v("timer_unplugs", job="8,0") == 137
    assert v("q_plugged_share", job="8,0") == pytest.approx(0.00107460846)
    assert v("active_at_q_mean", job="8,32") == pytest.approx(133.0)
    assert "Q2D Histogram" in p.meta["sections"]


def test_btt_bad_row_names_line(tmp_path):
    p = tmp_path / "btt.txt"
    p.write_text("==================== All Devices ====================\n\n"
                 "            ALL           MIN           AVG           MAX           N\n"
                 "--------------- ------------- ------------- ------------- -----------\n\n"
                 "Q2Q               0.000060735   0.000359135   0.130342651         962\n"
                 "Q2C               0.000053029   oops          0.000103591         963\n")
    assert detect(p) == "btt"
    with pytest.raises(IngestError) as e:
        read(p)
    assert e.value.line == 7


# ---- real ftrace captures from this VM, against blkparse 1.2.0 and btt on the same records ---------

FTRACE = ("mq-deadline", "bfq")


@pytest.mark.parametrize("sched", FTRACE)
def test_ftrace_capture_matches_blkparse_and_btt(sched):
    """tests/fixtures/blktrace/make.sh says how these were recorded and how the tool outputs were made."""
    from analysis.ingest import blkparse
    d = FIXTURES_BLK
    f = f"ftrace-loop-{sched}-4k-write"
    ours = read(d / f"{f}.blktrace.gz")
    btt = read(d / f"{f}.btt.txt")
    lines = (d / f"{f}.blkparse-summary.txt").read_text().split("\n")
    tool = {(r[0], r[1], r[2]): r[3] for r in blkparse._tool_rows(*blkparse._summary_blocks(lines, 0))}
    dev = "7,0"
    for ddir in ("read", "write"):
        for m in ("completed", "completed_bytes", "queued", "queued_bytes"):
            assert ours.value(m, ddir, dev) == tool[(dev, ddir, m)], (ddir, m)
    assert ours.value("events", "", dev) == tool[(dev, "", "events")]
    assert ours.value("merges", "write", dev) == tool[(dev, "write", "merges")] == 0
    # btt's All Devices means (printed to the ns): equal within 1 %, and counts of bios with a completion
    for m in ("q2c", "d2c"):
        assert ours.value(f"{m}_mean", "", dev) == pytest.approx(btt.value(f"{m}_mean", job="all"), rel=0.01)
    done = ours.tables["bios"]["q2c_ns"].notna().sum()
    assert done == btt.value("q2c_n", job="all")
    if sched == "bfq":
        assert ours.meta["notify_records"] > 0  # BFQ's messages travel in the stream; blkparse drops them


@pytest.mark.skipif(shutil.which("blkparse") is None or shutil.which("btt") is None,
                    reason="blkparse/btt not installed (make tools installs Debian's blktrace as root)")
def test_live_blkparse_and_btt_agree_with_our_reader(tmp_path):
    """Run the real tools on a fixture trace now (not only their stored output)."""
    src = FIXTURES_BLK / "ftrace-loop-mq-deadline-4k-write.blktrace.gz"
    raw = tmp_path / "trace.bin"
    raw.write_bytes(gzip.decompress(src.read_bytes()))
    txt = tmp_path / "parsed.txt"
    with open(raw, "rb") as fin, open(txt, "wb") as fout:
        subprocess.run(["blkparse", "-i", "-", "-d", str(tmp_path / "dump.bin")], stdin=fin, stdout=fout, check=True)
    out = subprocess.run(["btt", "-i", "dump.bin"], cwd=tmp_path, capture_output=True, check=True).stdout
    (tmp_path / "btt.txt").write_bytes(out)
    ours, text, btt = read(raw), read(txt), read(tmp_path / "btt.txt")
    assert all(c["ok"] for c in text.meta["crosscheck"].values())
    assert ours.value("completed", "write", "7,0") == text.value("completed", "write", "7,0")
    a = ours.tables["requests"].sort_values(["c_ns", "sector"])["d2c_ns"].to_numpy()
    b = text.tables["requests"].sort_values(["c_ns", "sector"])["d2c_ns"].to_numpy()
    np.testing.assert_allclose(a, b)  # same events, same model, text at ns resolution
    assert ours.value("q2c_mean", "", "7,0") == pytest.approx(btt.value("q2c_mean", job="all"), rel=0.01)


def _struct_oracle(data: bytes) -> dict:
    """The format read with struct, one record at a time: the event records (notify bit clear) in file
    order, and the counts over all records."""
    rows, notify, times, pos = [], 0, [], 0
    while pos < len(data):
        magic, _, t, sector, nbytes, action, pid, dev, cpu, err, pdu = struct.unpack_from("<IIQQIIIIIHH", data, pos)
        assert magic == 0x65617407
        times.append(t)
        if (action >> 16) & bt.TC_NOTIFY:
            notify += 1
        else:
            rows.append((t, sector, nbytes, action, pid, dev, err))
        pos += 48 + pdu
    return {"rows": rows, "notify": notify, "t0": min(times), "span": max(times) - min(times), "records": len(times)}


@pytest.mark.parametrize("name", ["ftrace-loop-bfq-4k-write.blktrace.gz", "ftrace-loop-mq-deadline-4k-write.blktrace.gz"])
def test_c_walker_and_numpy_path_decode_alike(walker, name):
    """Real captures, one with BFQ's message records (payloads between headers): each path decodes the
    event records as struct does, time-sorted (stable), with the file's record counts, t0 and span."""
    p = FIXTURES_BLK / name
    data = gzip.decompress(p.read_bytes())
    ref = _struct_oracle(data)
    tr = bt.decode(p, data)
    if name.startswith("ftrace-loop-bfq"):
        assert ref["records"] == 20000 and ref["notify"] > 0
    cols = np.array(ref["rows"], dtype=np.int64).reshape(-1, 7)
    cols = cols[np.argsort(cols[:, 0], kind="stable")]
    ours = np.column_stack([tr.time + tr.t0_ns, tr.sector, tr.nbytes, tr.action, tr.pid, tr.device, tr.error])
    assert np.array_equal(ours, cols)
    assert (tr.records, tr.notify, tr.t0_ns, tr.span_ns) == (ref["records"], ref["notify"], ref["t0"], ref["span"])


def test_c_pass_hands_over_to_numpy_where_its_tables_end(tmp_path, monkeypatch):
    """More (device, CPU) pairs than the C pass tracks (1,024): the numpy path decodes, the same trace."""
    if bt._clib() is None:
        pytest.skip("no C compiler here")
    off = bt._dtype("<").fields["cpu"][1]
    recs = [rec(i, bt.TA_Q, W, 8 * i, 8) for i in range(1100)]
    data = b"".join(r[:off] + struct.pack("<I", i) + r[off + 4:] for i, r in enumerate(recs))
    p = _write(tmp_path, data)
    buf = np.frombuffer(data, np.uint8)
    assert bt._events_c(bt._clib(), p, buf, bt.record_offsets(p, buf, "<"), "<") is None
    a = bt.decode(p, data)
    monkeypatch.setattr(bt, "_clib", lambda: None)
    b = bt.decode(p, data)
    assert len(a.time) == 1100 and all(np.array_equal(getattr(a, f), getattr(b, f))
                                       for f in ("time", "sector", "nbytes", "action", "pid", "device", "error"))


def test_btt_bad_section_row_says_what_was_expected(tmp_path):
    """A damaged row of a device table names the section, the header it should fill and what it held."""
    good = (FIXTURES_BLK / "ftrace-loop-bfq-4k-write.btt.txt").read_text()
    bad = good.replace(" (  7,  0) |     1249     1248     1.0 |", " (  7,  0) |     1249     many     1.0 |", 1)
    assert bad != good
    p = tmp_path / "btt.txt"
    p.write_text(bad)
    with pytest.raises(IngestError) as e:
        read(p)
    line = bad.splitlines().index(next(ln for ln in bad.splitlines() if "many" in ln)) + 1
    assert e.value.line == line
    msg = str(e.value)
    assert "section 'Device Merge Information'" in msg and "'#Q #D Ratio BLKmin" in msg and "many" in msg


def test_cpu_order_rule_on_hand_records(tmp_path, walker):
    """Back in time on one CPU by more than 1 ms fails at that record; the same step on another CPU, or by
    less than 1 ms (the tolerance), or on a notify record, does not."""
    trace = b"".join
    off = bt._dtype("<").fields["cpu"][1]  # byte offset of the u32 cpu field in the header

    def cpu(b: bytes, n: int) -> bytes:
        return b[:off] + struct.pack("<I", n) + b[off + 4:]
    q = lambda t, c=0: cpu(rec(t, bt.TA_Q, W, 100 + t, 8), c)  # noqa: E731
    ok = trace([q(5_000_000), q(4_500_000), q(1_000, 1), cpu(rec(0, bt.TN_PROCESS, bt.TC_NOTIFY, pdu=b"x\0"), 0)])
    bt.decode(_write(tmp_path, ok), ok)
    bad = trace([q(5_000_000), q(1_000, 1), q(3_000_000)])
    with pytest.raises(IngestError) as e:
        bt.decode(_write(tmp_path, bad), bad)
    assert e.value.offset == 2 * 48 and "CPU 0 of device 7,3 goes back 2.000 ms" in str(e.value)


def test_btt_cut_or_doubled_report(tmp_path):
    """A report cut at a line end lacks sections btt always prints → partial, saying which; cut inside a
    line → partial, that line unread; a second report in the same file → failed at its title line."""
    good = (FIXTURES_BLK / "ftrace-loop-mq-deadline-4k-write.btt.txt").read_text()
    lines = good.splitlines(keepends=True)
    cut = next(i for i, ln in enumerate(lines) if "Plug Information" in ln)
    p = tmp_path / "btt.txt"
    p.write_text("".join(lines[:cut]))
    r = read(p)
    assert r.partial and r.meta["incomplete"] == [
        "sections btt always prints are missing: Plug Information, Active Requests At Q Information (output cut?)"]
    assert r.value("d2c_mean", job="all") == 163350  # what was there is kept: 0.000163350 s
    merge = next(i for i, ln in enumerate(lines) if ln.startswith(" (  7,  0) |     2002     2001"))
    p.write_text("".join(lines[:merge]) + lines[merge][:30])  # "… |     2002     20" cut mid-number
    r = read(p)
    assert r.partial and f"the file ends inside line {merge + 1} (cut)" in r.meta["incomplete"][0]
    assert "q_count" not in set(r.summary["metric"])  # the cut row is not read as 2002 / 20
    p.write_text(good + good)
    with pytest.raises(IngestError) as e:
        read(p)
    assert e.value.line == len(lines) + 1 and "'All Devices' appears again" in str(e.value)
    assert not read(FIXTURES_BLK / "ftrace-loop-mq-deadline-4k-write.btt.txt").partial


def test_blkparse_summary_cut_or_doubled(tmp_path, corpus):
    """blkparse closes its summary with ``Events (maj,min): N entries``: without it the file is partial; an
    event line after the summary (two outputs in one file) fails at that line."""
    src = (corpus / "blkparse" / "blktrace-doc_blkparse_live_sda_with_summary.txt").read_text()
    lines = src.splitlines(keepends=True)
    ev = next(i for i, ln in enumerate(lines) if ln.startswith("Events (8,0)"))
    p = tmp_path / "bp.txt"
    p.write_text("".join(lines[:ev]))
    r = read(p)
    assert r.partial and r.meta["incomplete"] == [
        "the summary has no closing 'Events (maj,min): N entries' line (output cut)"]
    p.write_text(src + src)
    with pytest.raises(IngestError) as e:
        read(p)
    first_event = next(i for i, ln in enumerate(lines) if ln.startswith("  8,0 "))
    assert e.value.line == len(lines) + first_event + 1 and "an event line follows it" in str(e.value)


# --- decode a block at a time (the file never held whole) -------------------------------------------
@pytest.mark.parametrize("block", [bt.HEADER, 1000, 1 << 16])
@pytest.mark.parametrize("source", ["gz-file", "plain-file", "bytes"])
def test_decode_by_blocks_equals_the_struct_oracle(tmp_path, walker, block, source):
    """BFQ's message records put payloads between headers, so block edges fall inside records: the file
    read block by block (gzip on the fly, plain, or bytes in memory) decodes as struct does."""
    gz = FIXTURES_BLK / "ftrace-loop-bfq-4k-write.blktrace.gz"
    data = gzip.decompress(gz.read_bytes())
    ref = _struct_oracle(data)
    if source == "gz-file":
        tr = bt.decode(gz, None, block_bytes=block)
    elif source == "plain-file":
        tr = bt.decode(_write(tmp_path, data), None, block_bytes=block)
    else:
        tr = bt.decode(gz, data, block_bytes=block)
    cols = np.array(ref["rows"], dtype=np.int64).reshape(-1, 7)
    cols = cols[np.argsort(cols[:, 0], kind="stable")]
    ours = np.column_stack([tr.time + tr.t0_ns, tr.sector, tr.nbytes, tr.action, tr.pid, tr.device, tr.error])
    assert len(ours) == 8_752 and np.array_equal(ours, cols)  # blkparse: "Events (7,0): 8752 entries"
    assert (tr.records, tr.notify, tr.t0_ns, tr.span_ns) == (ref["records"], ref["notify"], ref["t0"], ref["span"])


def test_process_names_carry_across_blocks(tmp_path, walker):
    """Process-name records in different blocks: the last record of a pid wins, in file order."""
    def name(t, pid, s):
        return rec(t, bt.TN_PROCESS, bt.TC_NOTIFY, pid=pid, pdu=s.encode() + b"\0")
    data = b"".join([name(0, 1, "fio"), rec(10, bt.TA_Q, W, 8, 8), name(20, 2, "kworker/0:1"),
                     rec(30, bt.TA_Q, W, 16, 8), name(40, 1, "fio-2")])
    p = _write(tmp_path, data)
    for block in (bt.HEADER, 64, len(data)):
        tr = bt.decode(p, None, block_bytes=block)
        assert list(tr.comm.items()) == [(2, "kworker/0:1"), (1, "fio-2")]
        assert (tr.records, tr.notify, len(tr.time)) == (5, 3, 2)


@pytest.mark.parametrize("block", [4096, 1 << 24])
def test_a_bad_record_in_a_later_block_names_its_absolute_offset(tmp_path, walker, block):
    """A magic overwritten in the middle of a real trace: the same message and byte offset whatever the
    block size (the offset is the file's, not the block's)."""
    data = bytearray(gzip.decompress((FIXTURES_BLK / "ftrace-loop-bfq-4k-write.blktrace.gz").read_bytes()))
    starts = bt.record_offsets(Path("x"), np.frombuffer(bytes(data), np.uint8), "<")
    at = int(starts[len(starts) // 2 + 3])
    data[at:at + 4] = b"\0\0\0\0"
    p = _write(tmp_path, bytes(data))
    with pytest.raises(IngestError) as e:
        bt.decode(p, None, block_bytes=block)
    prev = int(starts[len(starts) // 2 + 2])
    assert e.value.offset == at
    assert f"after the record at byte {prev}" in str(e.value)


def test_cpu_going_back_in_a_later_block_still_fails(tmp_path, walker):
    """The CPU-order rule carries from block to block: the step back 2 ms lands in the third block."""
    off = bt._dtype("<").fields["cpu"][1]
    q = lambda t, c=0: rec(t, bt.TA_Q, W, 100 + t, 8)[:off] + struct.pack("<I", c) + rec(t, bt.TA_Q, W, 100 + t, 8)[off + 4:]  # noqa: E731
    bad = b"".join([q(5_000_000), q(1_000, 1), q(3_000_000)])
    with pytest.raises(IngestError) as e:
        bt.decode(_write(tmp_path, bad), None, block_bytes=bt.HEADER)
    assert e.value.offset == 2 * 48 and "CPU 0 of device 7,3 goes back 2.000 ms" in str(e.value)


def test_blkparse_completion_error_that_is_no_errno_names_its_line(corpus, tmp_path):
    """A completion's ``[error]`` is an errno; a 21-digit one (found by the fuzz test: it overflowed int64
    and escaped the reader as OverflowError) fails with the line."""
    lines = (corpus / "blkparse" / "blktrace-doc_blkparse_live_sda_with_summary.txt").read_text().split("\n")
    i = next(k for k, ln in enumerate(lines) if " C " in ln and ln.rstrip().endswith("[0]"))
    lines[i] = lines[i].rstrip()[:-3] + "[999999999999999999990]"
    p = tmp_path / "blkparse.txt"
    p.write_text("\n".join(lines))
    with pytest.raises(IngestError) as e:
        read(p)
    assert e.value.line == i + 1 and "errno" in str(e.value)


def test_c_asof_join_is_merge_asof():
    """blk_asof (C) gives the rows pandas.merge_asof gives, both directions, with and without exact
    matches, on keys and times drawn from a few values (ties in time and key everywhere)."""
    if bt._clib() is None:
        pytest.skip("no C compiler: the pandas join is the only one")
    rng = np.random.default_rng(7)
    seen = set()
    for _ in range(1500):
        nl, nr, nk = int(rng.integers(0, 50)), int(rng.integers(0, 50)), int(rng.integers(1, 4))
        by = [f"k{i}" for i in range(nk)]
        kv = int(rng.integers(1, 4))
        left = pd.DataFrame({**{b: rng.integers(0, kv, nl) for b in by}, "t": rng.integers(0, 8, nl)})
        right = pd.DataFrame({**{b: rng.integers(0, kv, nr) for b in by}, "tr": rng.integers(0, 8, nr)})
        for direction in ("backward", "forward"):
            for exact in (True, False):
                got = bt.asof_join(left, right, by, direction, exact, rt="tr")
                want = bt.asof_join_pandas(left, right, by, direction, exact, rt="tr")
                assert np.array_equal(got, want), (direction, exact, left, right)
                seen.update(np.sign(got).tolist())
    assert seen == {-1, 0, 1}  # misses and matches both happened


@pytest.mark.parametrize("name", ["ftrace-loop-bfq-4k-write.blktrace.gz", "ftrace-loop-mq-deadline-4k-write.blktrace.gz"])
def test_requests_and_bios_are_the_same_with_the_pandas_join(name, monkeypatch):
    """A real capture paired with the C as-of join and with pandas.merge_asof: same tables, same notes."""
    p = FIXTURES_BLK / name
    tr = bt.decode(p, gzip.decompress(p.read_bytes()))
    req, bios, notes = bt.io_tables(tr)
    monkeypatch.setattr(bt, "asof_join", bt.asof_join_pandas)
    req2, bios2, notes2 = bt.io_tables(tr)
    pd.testing.assert_frame_equal(req, req2, check_exact=True)
    pd.testing.assert_frame_equal(bios, bios2, check_exact=True)
    assert notes == notes2 and len(req) > 1000 and req["d_ns"].notna().mean() > 0.9
