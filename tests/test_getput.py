"""``analysis.ingest.getput``: getput output built from getput's own format (commit 8df6328 in
``../shared/tools/getput``; getput is Python 2 and does not run here), bad and cut input, CBT's layout.

Every sample below is labelled with the getput function whose format strings it was built from (spacing
from the format strings, numbers chosen by hand so that getput's arithmetic holds).  Expected values are
computed by hand in the comments: MB/Sec × 2**20 → B/s (getput's ``rate = bytes / elapsed / 1024 / 1024``),
seconds × 10**9 → ns, %CPU / 100 → ratio.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.ingest import IngestError, detect, read
from analysis.ingest import getput as gp
from analysis.ingest.validate import problems

FIX = Path(__file__).resolve().parent / "fixtures" / "getput" / "getput-8df6328_psum_ldist_ppp.txt"
MIB = 1048576

# Built from print_header() (Rank column: --rank defaults to '0') and print_line(): two process counts,
# so the header is printed again (main loop: header_printed = 0 per --procs value); --putsperproc's line
# (main loop, "PutsPerProc: %s") after the 32-process put.  16 procs: put 6004 ops in 60 s = 100.07 ops/s,
# × 4 MiB = 400.28 MiB/s (printed 400.27: the total sums per-process rates); get 12015 / 60 = 200.25 ops/s
# = 801.00 MiB/s; 32 procs: 8445 / 60 = 140.75 ops/s = 563.00 MiB/s, PutsPerProc 31 × 264 + 261 = 8445.
REPEATED = """\
Rank Test  Clts Proc  OSize  Start     End        MB/Sec   Ops   Ops/Sec Errs Latency  Median    LatRange   %CPU Ret
0    put      1   16     4m  14:02:11  14:03:11   400.27  6004    100.07    0   0.160   0.151  0.05-01.62  61.25   3
0    get      1   16     4m  14:03:13  14:04:13   801.00 12015    200.25    2   0.080   0.077  0.01-00.93  48.50   0
Rank Test  Clts Proc  OSize  Start     End        MB/Sec   Ops   Ops/Sec Errs Latency  Median    LatRange   %CPU Ret
0    put      1   32     4m  14:05:00  14:06:00   563.00  8445    140.75    0   0.227   0.215  0.06-02.31  70.00   5
PutsPerProc: """ + ":".join(["264"] * 31 + ["261"]) + "\n"

# Built from print_output() with --psum and --mixopts m on a p1g1 test of 4 processes (print_line's mixed
# branch): the put processes 0 and 2 are printed as 'put', then their total 'p1' with Proc 4/2*1 = 2; the get
# processes 1 and 3 as 'get', then 'g1'; then the 'tot' call prints only 'p1g1' with Proc 4 (psum_print is 0
# for 'tot' under m).  p1 = 50 + 60 ops, 5 + 6 ops/s, 20 + 24 MiB/s; g1 = 100 + 120, 10 + 12, 40 + 48.
MIXED_M = """\
Rank Test  Clts Proc  OSize  Start     End        MB/Sec   Ops   Ops/Sec Errs Latency  Median    LatRange   %CPU Ret
0    put      1    0     4m  09:00:00  09:00:10    20.00    50      5.00    0   0.200   0.190  0.10-00.40  20.00   0
0    put      1    2     4m  09:00:00  09:00:10    24.00    60      6.00    0   0.167   0.160  0.08-00.35  20.00   1
0    p1       1    2     4m  09:00:00  09:00:10    44.00   110     11.00    0   0.182   0.170  0.08-00.40  20.00   1
0    get      1    1     4m  09:00:00  09:00:10    40.00   100     10.00    0   0.100   0.090  0.05-00.20  20.00   0
0    get      1    3     4m  09:00:00  09:00:10    48.00   120     12.00    0   0.083   0.080  0.04-00.19  20.00   0
0    g1       1    2     4m  09:00:00  09:00:10    88.00   220     22.00    0   0.091   0.085  0.04-00.20  20.00   0
0    p1g1     1    4     4m  09:00:00  09:00:10   132.00   330     33.00    0   0.121   0.100  0.04-00.40  20.00   0
"""

# Built from print_header()/print_line() with --utc (Timestamp column, " %d" before Ret) and --psum, -n 50:
# both processes did 50 ops, so 'put 1' alone would also look like the total of 'put 0' — it is not:
# 'put 2' (Proc 2, Ops 100) is.  The test ran over midnight: End − Start = 10 s.
EQUAL_OPS = """\
Rank Test  Clts Proc  OSize  Start     End        MB/Sec   Ops   Ops/Sec Errs Latency  Median    LatRange   %CPU Timestamp  Ret
0    put      1    0     4m  23:59:58  00:00:08    20.00    50      5.00    0   0.200   0.200  0.19-00.21   5.00 1700000000   0
0    put      1    1     4m  23:59:58  00:00:08    20.00    50      5.00    0   0.200   0.200  0.18-00.22   5.00 1700000000   0
0    put      1    2     4m  23:59:58  00:00:08    40.00   100     10.00    0   0.200   0.200  0.18-00.22   5.00 1700000000   0
"""

# Built from print_line() with --nohead (print_header prints nothing): a 1.5 MiB object prints OSize '1m'
# (cvt2KMG: 1572864 / 1024 = 1536 > 1023 → 1536 / 1024 = 1 in Python 2), 1 op/s = 1.50 MiB/s; a delete with
# no ops prints latency '000.00' and range 0.00-00.00 (print_line's 'if ops' branch).
NOHEAD = """\
0    put      1    1     1m  09:00:00  09:00:10     1.50    10      1.00    0   1.000   1.000  0.90-01.10  20.00   0
0    del      1    1     1m  09:00:11  09:00:11     0.00     0      0.00    0 000.00   0.000  0.00-00.00  20.00   0
"""

# Built from gpmulti's print_header() and print_results() (no Rank, '#Test', Clts = nodes): 708375 ops in
# 300 s = 2361.25 ops/s × 4 MiB = 9445.00 MiB/s.
GPMULTI = """\
#Test  Clts  Proc  OSize  Start     End         MB/Sec    Ops  Ops/Sec Errs Latency  Median    LatRange    %CPU Ret
put       4   512     4m  10:00:00  10:05:00   9445.00 708375  2361.25    0   0.867   0.800  0.05-09.99   55.50   7
"""


def write(tmp_path: Path, text: str, name: str = "out.txt") -> Path:
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def values(parsed, job: str) -> dict[str, float]:
    s = parsed.summary
    sel = s[s["job"] == job]
    return dict(zip(sel["metric"].astype(str), sel["value"]))


def test_sizes_as_getput_converts_them():
    assert gp.size_from_kmg("4m") == 4194304 and gp.size_from_kmg("1k") == 1024
    assert gp.size_from_kmg("1000") == 1000 and gp.size_from_kmg("2G") == 2147483648
    assert gp.size_to_kmg(4194304) == "4m" and gp.size_to_kmg(1000) == "1000"
    assert gp.size_to_kmg(1572864) == "1m"   # cvt2KMG's integer division: 1.5 MiB prints as 1m
    assert gp.size_to_kmg(1536) == "1536" and gp.size_to_kmg(5120000) == "4m"  # 5000k → 4m
    with pytest.raises(ValueError):
        gp.size_from_kmg("4mb")


def test_the_fixture_psum_ldist_putsperproc():
    p = read(FIX)  # tests/fixtures/getput/make_fixture.py: print_header/print_line format strings
    assert p.kind == "getput" and not p.partial and p.meta["psum"] and p.meta["tests"] == 3
    assert p.meta["echo"].startswith("getput -cbkt")
    put = values(p, "put")
    assert put["bw"] == 36 * MIB and put["iops"] == 9.0 and put["ops_total"] == 90
    assert put["errors"] == 1 and put["retries"] == 2          # Ret of the total = its last process's
    assert put["lat_mean"] == 222_000_000 and put["lat_median"] == 210_000_000
    assert put["lat_min"] == 90_000_000 and put["lat_max"] == 1_200_000_000
    assert put["client_cpu"] == pytest.approx(0.355) and put["op_size"] == 4194304
    assert put["procs"] == 2 and put["clients"] == 1 and put["span"] == 10
    # --ldist 1: buckets 0.0 0.1 … 0.5 1.0 … 5.0 s, named by lower bound in ns
    assert put["lat_bin_0"] == 2 and put["lat_bin_100000000"] == 40 and put["lat_bin_500000000"] == 2
    assert put["lat_bin_1000000000"] == 1 and put["lat_bin_5000000000"] == 0
    p0 = values(p, "put/proc0")
    assert p0["bw"] == 16 * MIB and p0["ops_total"] == 40 and p0["lat_mean"] == 250_000_000
    assert "procs" not in p0                                   # Proc of a --psum line is its process number
    assert p0["puts_per_proc"] == 40 and values(p, "put/proc1")["puts_per_proc"] == 50
    dl = values(p, "del")
    assert "bw" not in dl and dl["iops"] == 45.0 and dl["span"] == 2    # a delete's MB/Sec is nominal
    s = p.summary
    assert set(s.loc[s["job"] == "get", "ddir"]) == {"read"} and set(s.loc[s["job"] == "del", "ddir"]) == {""}
    assert problems(p.kind, p.summary, p.series) == []


def test_repeated_header_and_recurring_test_names(tmp_path):
    p = gp.parse(write(tmp_path, REPEATED), None)
    assert [h["line"] for h in p.meta["headers"]] == [1, 4] and not p.partial
    assert list(dict.fromkeys(p.summary["job"].astype(str))) == ["put#0", "get", "put#1", *[
        f"put#1/proc{i}" for i in range(32)]]
    assert values(p, "put#0")["bw"] == 400.27 * MIB and values(p, "put#0")["procs"] == 16
    assert values(p, "get")["errors"] == 2 and values(p, "get")["lat_max"] == 930_000_000
    assert values(p, "put#1")["iops"] == 140.75 and values(p, "put#1")["procs"] == 32
    assert values(p, "put#1/proc31")["puts_per_proc"] == 261
    assert p.meta["checks"]["mbps_vs_iops_x_osize_max_abs_diff"] == pytest.approx(0.01)  # 400.28 vs 400.27


def test_mixopts_m_parts_take_their_processes(tmp_path):
    p = gp.parse(write(tmp_path, MIXED_M), None)
    assert p.meta["tests"] == 3 and not p.partial
    assert values(p, "p1")["ops_total"] == 110 and values(p, "p1")["procs"] == 2
    assert values(p, "p1/proc2")["bw"] == 24 * MIB
    assert values(p, "g1/proc3")["iops"] == 12.0
    assert values(p, "p1g1")["bw"] == 132 * MIB and values(p, "p1g1")["procs"] == 4
    s = p.summary
    ddir = dict(zip(s["job"].astype(str), s["ddir"].astype(str)))
    assert ddir["p1"] == "write" and ddir["g1/proc1"] == "read" and ddir["p1g1"] == ""


def test_equal_ops_utc_and_midnight(tmp_path):
    p = gp.parse(write(tmp_path, EQUAL_OPS), None)
    assert p.meta["tests"] == 1 and p.meta["headers"][0]["utc"]
    assert values(p, "put")["ops_total"] == 100 and values(p, "put")["procs"] == 2
    assert values(p, "put")["span"] == 10  # 23:59:58 → 00:00:08


def test_nohead_truncated_size_and_zero_ops(tmp_path):
    path = write(tmp_path, NOHEAD)
    assert detect(path) == "getput"
    p = read(path)
    put, dl = values(p, "put"), values(p, "del")
    assert put["bw"] == 1.5 * MIB and put["op_size"] == 1048576   # '1m' read as getput reads it
    assert p.meta["osize_exact"] is False
    assert dl["ops_total"] == 0 and dl["lat_mean"] == 0 and dl["lat_max"] == 0


def test_gpmulti_merged_lines(tmp_path):
    p = read(write(tmp_path, GPMULTI))
    v = values(p, "put")
    assert v["clients"] == 4 and v["procs"] == 512 and v["bw"] == 9445 * MIB and v["ops_total"] == 708375
    assert v["retries"] == 7 and v["lat_max"] == 9_990_000_000


def test_cbt_layout_keys(tmp_path):
    rel = "results/00000000/id-1/osd_ra-00000128/op_size-04194304/procs-00000016/p/shared/output.gw0"
    p = read(write(tmp_path, REPEATED.split("Rank", 2)[0] + "Rank" + REPEATED.split("Rank")[1], rel))
    assert p.meta["cbt"] == {"osd_ra": 128, "op_size": 4194304, "procs": 16, "test": "p", "ctype": "shared",
                             "gateway": 0}
    assert p.meta["checks"]["cbt_op_size"] == "ok" and p.meta["checks"]["cbt_procs"] == "ok"
    assert p.meta["osize_exact"] is True
    other = "results/00000000/id-1/osd_ra-00000128/op_size-01048576/procs-00000008/p/shared/output.gw1"
    q = read(write(tmp_path, REPEATED.split("PutsPerProc")[0], other))
    assert "not the path's op_size 1048576" in q.meta["checks"]["cbt_op_size"]
    assert q.meta["checks"]["cbt_procs"].startswith("totals name [16, 32]")


def test_detect_picks_getput_only_for_getput(tmp_path):
    assert detect(FIX) == "getput"
    assert detect(write(tmp_path, GPMULTI, "g.txt")) == "getput"
    rados = Path(__file__).resolve().parent / "fixtures" / "rados_bench" / "ceph-16.2.15_write_4k_t16_8s.txt"
    assert detect(rados) == "rados-bench"
    assert not gp.sniff(b"hello\n0 put\n")


def test_malformed_line_names_file_and_line(tmp_path):
    bad = REPEATED.replace("12015", "12O15")
    path = write(tmp_path, bad)
    with pytest.raises(IngestError) as e:
        gp.parse(path, None)
    assert e.value.line == 3 and f"{path}:3:" in str(e.value) and "column ops: expected an integer" in str(e.value)
    short = REPEATED.replace("  48.50   0\n", "\n")
    with pytest.raises(IngestError, match=r":3: getput result line: expected 16 fields"):
        gp.parse(write(tmp_path, short, "s.txt"), None)
    with pytest.raises(IngestError, match=r":6: PutsPerProc: 3 counts, expected one per process \(32"):
        gp.parse(write(tmp_path, REPEATED.split("PutsPerProc")[0] + "PutsPerProc: 1:2:3\n", "p.txt"), None)


def test_cross_check_mbps_against_ops_and_size(tmp_path):
    # 801.00 → 811.00: Ops/Sec 200.25 × 4 MiB = 801.00, rounding allows 0.005 + 0.005 × 4
    path = write(tmp_path, REPEATED.replace("   801.00 ", "   811.00 "))
    with pytest.raises(IngestError) as e:
        gp.parse(path, None)
    assert e.value.line == 3 and "MB/Sec 811.00 is not Ops/Sec 200.25 × OSize 4m" in str(e.value)
    # 400.27 vs 400.28 is within rounding (passes); 400.24 is not (0.04 > 0.025)
    gp.parse(write(tmp_path, REPEATED, "ok.txt"), None)
    with pytest.raises(IngestError, match=r":2: MB/Sec 400.24"):
        gp.parse(write(tmp_path, REPEATED.replace("400.27", "400.24"), "b.txt"), None)
    # the truncated '1m' of a 1.5 MiB object passes; 2.10 MiB/s at 1 op/s cannot come from a 1m-printed size
    with pytest.raises(IngestError, match=r":1: MB/Sec 2.10"):
        gp.parse(write(tmp_path, NOHEAD.replace("  1.50 ", "  2.10 "), "c.txt"), None)


def test_other_cross_checks(tmp_path):
    text = FIX.read_text()
    # a --ldist bucket changed: 40 → 41 on the put total (line 5)
    bad = text.replace("    2    40    32    12", "    2    41    32    12")
    with pytest.raises(IngestError, match=r":5: --ldist buckets add up to 91, Ops is 90"):
        gp.parse(write(tmp_path, bad), None)
    # the total's Errs 1 → 3 no longer the sum of its processes' (0 + 1)
    lines = text.splitlines(keepends=True)
    lines[4] = lines[4].replace("     9.00    1", "     9.00    3")
    with pytest.raises(IngestError, match=r":5: total errs 3 is not the sum of its 2 --psum lines"):
        gp.parse(write(tmp_path, "".join(lines), "e.txt"), None)
    # a median above the maximum latency
    with pytest.raises(IngestError, match=r":2: Median 0.951 s outside LatRange 0.05-00.62"):
        gp.parse(write(tmp_path, REPEATED.replace("0.151", "0.951").replace("01.62", "00.62"), "m.txt"), None)


def test_truncated_file_is_partial(tmp_path):
    text = FIX.read_text()
    # cut in the middle of the del total (last line): that line is dropped, the del processes stay
    cut = text[: text.rindex("\n", 0, len(text) - 1) + 40]
    p = gp.parse(write(tmp_path, cut), None)
    assert p.partial and "cut" in p.meta["partial_reason"] and p.meta["cut_line"] == 12
    assert values(p, "del/proc1")["iops"] == 25.0 and "del" not in set(p.summary["job"].astype(str))
    assert values(p, "get")["bw"] == 72 * MIB
    # cut after a header only
    p = gp.parse(write(tmp_path, REPEATED.split("0    put")[0], "h.txt"), None)
    assert p.partial and p.summary.empty and "header(s) without result lines" in p.meta["partial_reason"]
    # an error line from getput (error(): 'Error -- Host: …') ends the run early
    p = gp.parse(write(tmp_path, REPEATED + "Error -- Host: c1 getput: container 'x' doesn't exist\n", "x.txt"),
                 None)
    assert p.partial and p.meta["errors_printed"] == 1 and p.meta["skipped_lines"] == 1


def test_psum_lines_without_total_before_a_header_fail(tmp_path):
    lines = FIX.read_text().splitlines(keepends=True)
    text = "".join(lines[:4]) + lines[1] + "".join(lines[6:])  # put's total and PutsPerProc gone, a header
    with pytest.raises(IngestError, match=r":3: --psum lines of 'put' do not add up"):
        gp.parse(write(tmp_path, text), None)


def test_a_cbt_getput_archive_gives_procs_and_ctype_as_run_keys(tmp_path):
    """CBT's benchmark_config.yaml of a getput benchmark: its procs (a number) and ctype become run-key
    columns, as the project's own RGW runs have them (capture/rgw's run.json)."""
    from analysis.ingest.walk import ingest
    arch = tmp_path / "cbt" / "results" / "00000000" / "id-1"
    out = arch / "osd_ra-00000128" / "op_size-04194304" / "procs-00000016" / "p" / "shared"
    out.mkdir(parents=True)
    (out / "output.gw0").write_text(REPEATED.split("Rank", 2)[0] + "Rank" + REPEATED.split("Rank")[1])
    (arch / "benchmark_config.yaml").write_text(
        "cluster:\n  benchmark: getput\n  op_size: 4194304\n  osd_ra: 128\n  procs: 16\n  test: p\n"
        "  ctype: shared\n  iteration: 0\n")
    s = ingest(tmp_path / "cbt", lenient=True).summary
    got = s[(s["metric"] == "bw") & (s["job"] == "put")]
    assert len(got) == 1
    assert got["procs"].iloc[0] == 16 and str(got["procs"].dtype) == "Int64"
    assert got["ctype"].astype(str).iloc[0] == "shared" and got["benchmark"].astype(str).iloc[0] == "getput"
