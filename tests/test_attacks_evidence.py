"""Attacks on the evidence: inputs that used to give a wrong result without a word, built by hand from real
files of the repository, each with what must happen now.

* Duplicated runs: one real fio run copied into run-1 … run-6 on each side of ``compare`` (or into the
  nights of a ``history``) was six independent repeats: n = 6/6, p ≈ 1e-70 on a mean latency whose copies
  differ by rounding alone, "worse (regression)", exit 1.  Runs holding the same bytes (every file's sha256)
  of one workload are one run now, with a note, unless ``--allow-duplicates``.
* Identity checks computed but ignored: a fio JSON whose IOPS was edited read ``ok`` although fio's own
  relation (iops = total_ios / runtime) said false.  It fails now, at the line of that ``"iops"``.
* A windowed fio log cut at a line boundary read ``ok`` with half its series; it is ``partial`` now, saying
  how far short of the JSON's runtime it ends.

Expected values come from the files (json module, line numbers found by hand in the text), never from the
code under test.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path

import pandas as pd

from analysis.__main__ import main
from analysis.ingest import fio
from analysis.ingest.walk import ingest

ROOT = Path(__file__).resolve().parents[1]
GRID = ROOT / "data/raw/fio-grid"
FIXTURES = ROOT / "tests/fixtures"
WINDOWED = FIXTURES / "fio/randread-4k-windowed"
CORPUS = ROOT.parent / "shared/corpus"
#: two real repeats of one cell on one device (loop-disk, randread, iodepth 8, numjobs 1): run-2 ran first
#: and faster (fio's timestamps 1795889016 and 1795889076)
FAST = GRID / "loop-disk/4k/run-2/randread-8-1.json.gz"
SLOW = GRID / "loop-disk/4k/run-1/randread-8-1.json.gz"
NOTE_TAIL = ("runs hold the same bytes as another run of the same workload (every file's sha256 equal), "
             "counted once (--allow-duplicates counts each)")


def _copies(src: Path, top: Path, n: int = 6, name: str = "run-{}") -> bytes:
    """``src`` (gzip) decompressed into ``top/run-1`` … ``top/run-n``; its bytes."""
    data = gzip.decompress(src.read_bytes())
    for i in range(1, n + 1):
        (top / name.format(i)).mkdir(parents=True)
        (top / name.format(i) / "randread-8-1.json").write_bytes(data)
    return data


def _read(data: bytes) -> dict:
    return json.loads(data)["jobs"][0]["read"]


def _note(side: str, path: Path, name: str = "run-{}") -> str:
    f = "randread-8-1.json"
    return (f"note: {side} ({path}): 5 of 6 {NOTE_TAIL}: {name.format(2)}/{f}, {name.format(3)}/{f}, "
            f"{name.format(4)}/{f} (+2 more) = {name.format(1)}/{f}")


def _json_out(capsys) -> tuple[dict, str]:
    cap = capsys.readouterr()
    return json.loads(cap.out), cap.err


def test_duplicated_runs_are_one_run_a_side(tmp_path, capsys):
    """Attack class: duplicated runs become evidence (compare).  Six copies of one real run against six
    copies of another gave n = 6/6, p = 1.2e-70 on lat_mean, "worse (regression)", exit 1.  Now each side
    is one run (n = 1/1, "one run a side: no test"), exit 0, and a note on each side names the copies."""
    a, b = tmp_path / "A", tmp_path / "B"
    fast, slow = _copies(FAST, a), _copies(SLOW, b)
    assert main(["compare", str(a), str(b), "--format", "json"]) == 0
    doc, err = _json_out(capsys)
    assert _note("A", a) in err.splitlines() and _note("B", b) in err.splitlines()
    rows = {r["metric"]: r for r in doc["rows"]}
    assert {(r["n_old"], r["n_new"]) for r in doc["rows"]} == {(1, 1)}
    assert {r["verdict"] for r in doc["rows"]} == {"one run a side: no test"}
    assert rows["iops"]["median_old"] == _read(fast)["iops"] and rows["iops"]["median_new"] == _read(slow)["iops"]
    assert not any(r["regression"] for r in doc["rows"])
    dup = doc["duplicates"]
    assert dup["allowed"] is False and dup["same_bytes"] is False and dup["shared"] == []
    assert dup["old"] == [{"kept": "run-1/randread-8-1.json",
                           "copies": [f"run-{i}/randread-8-1.json" for i in range(2, 7)],
                           "sha256": [hashlib.sha256(fast).hexdigest()]}]
    assert dup["new"][0]["sha256"] == [hashlib.sha256(slow).hexdigest()]


def test_allow_duplicates_counts_each_copy_and_copies_have_no_spread(tmp_path, capsys):
    """Attack class: duplicated runs become evidence, with the user's ``--allow-duplicates``.  Counted as six
    repeats, six equal values have no spread: every cell "cannot test: no spread on either side" (before:
    lat_mean's copies, equal but for rounding in the mean of their logs, gave p = 1.2e-70 and a regression)."""
    a, b = tmp_path / "A", tmp_path / "B"
    _copies(FAST, a), _copies(SLOW, b)
    assert main(["compare", str(a), str(b), "--format", "json", "--allow-duplicates"]) == 0
    doc, err = _json_out(capsys)
    assert {(r["n_old"], r["n_new"]) for r in doc["rows"]} == {(6, 6)}
    assert {r["verdict"] for r in doc["rows"]} == {"cannot test: no spread on either side"}
    assert doc["duplicates"]["allowed"] is True and len(doc["duplicates"]["old"][0]["copies"]) == 5
    assert "each counted, as --allow-duplicates asks" in err


def test_the_same_bytes_on_both_sides_are_said(tmp_path, capsys):
    """Attack class: duplicated runs become evidence (A and B one folder of copies).  Said in a note and in
    the JSON; every change is 0 and nothing regresses."""
    a = tmp_path / "A"
    _copies(FAST, a)
    assert main(["compare", str(a), str(a), "--format", "json"]) == 0
    doc, err = _json_out(capsys)
    assert ("note: A and B hold the same bytes: each of their 1 distinct run(s) is on both sides (every file's "
            "sha256 equal), so no change can show") in err.splitlines()
    assert doc["duplicates"]["same_bytes"] is True
    assert {r["delta_pct"] for r in doc["rows"]} == {0.0}


def test_two_reporting_groups_of_one_file_are_not_copies_of_each_other(tmp_path, capsys):
    """Attack class: duplicated runs become evidence (the rule's limit).  sweep.json's groups 2 and 3 ran one
    workload (bs=64k, stonewalled: two repeats in one file, the same bytes as runs go); copies of the file
    are copies group by group.  Two copies on side A and one on B: the 64k cell has n = 2/2, not 4/2 or 1/1."""
    src = FIXTURES / "fio_groups/sweep.json"
    jobs = json.loads(src.read_text())["jobs"]
    groups_64k = {j["groupid"] for j in jobs if j["job options"].get("bs") == "64k"}
    assert len(groups_64k) == 2
    for d in ("A/1", "A/2", "B"):
        (tmp_path / d).mkdir(parents=True)
        shutil.copy(src, tmp_path / d / "sweep.json")
    assert main(["compare", str(tmp_path / "A"), str(tmp_path / "B"), "--format", "json",
                 "--metric", "iops"]) == 0
    doc, err = _json_out(capsys)
    rows = [r for r in doc["rows"] if r["bs_B"] == "65536"]
    assert rows and {(r["n_old"], r["n_new"]) for r in rows} == {(2, 2)}
    groups = len({j["groupid"] for j in jobs})
    assert f"A ({tmp_path / 'A'}): {groups} of {2 * groups} {NOTE_TAIL}" in err
    assert doc["duplicates"]["same_bytes"] is True  # every run of A is one of B's, and back


def _nights(top: Path) -> None:
    """Nights 01–06 copies of the faster (earlier) run, 07–12 of the slower (later) one."""
    for k in range(1, 13):
        night = top / f"night-{k:02d}"
        night.mkdir(parents=True)
        (night / "randread-8-1.json").write_bytes(gzip.decompress((FAST if k <= 6 else SLOW).read_bytes()))


def test_a_history_of_copied_nights_has_two_runs(tmp_path, capsys):
    """Attack class: duplicated runs become evidence (history).  Twelve nights holding two real runs, each
    copied six times, gave 7 changes at night-07 with p down to 4e-64, exit 1.  Now the history has two runs
    (the first copy of each), too few for a change, exit 0, and a note names the copies; with
    ``--allow-duplicates`` the user's count stands (exit 1, as before)."""
    _nights(tmp_path)
    assert main(["history", str(tmp_path)]) == 0
    cap = capsys.readouterr()
    f = "randread-8-1.json"
    assert (f"note: the history: 10 of 12 {NOTE_TAIL}: night-02/{f}, night-03/{f}, night-04/{f} (+2 more) = "
            f"night-01/{f}; night-08/{f}, night-09/{f}, night-10/{f} (+2 more) = night-07/{f}") in cap.err.splitlines()
    assert "2 points, 2 runs" in cap.out and "0 unacknowledged regression(s)" in cap.out
    assert main(["history", *sorted(str(p) for p in tmp_path.iterdir())]) == 0  # one folder a point
    assert "night-02/randread-8-1.json, night-03" in capsys.readouterr().err
    assert main(["history", str(tmp_path), "--allow-duplicates"]) == 1
    assert "each counted, as --allow-duplicates asks" in capsys.readouterr().err


def _iops_line(text: str, needle: str) -> int:
    lines = [i + 1 for i, line in enumerate(text.splitlines()) if needle in line]
    assert len(lines) == 1
    return lines[0]


def test_an_edited_iops_fails_its_file_at_the_line(tmp_path, capsys):
    """Attack class: identity checks computed but ignored.  randread-4k-windowed.json with its IOPS edited
    (1999.750062 → 9999.750062) read ok (exit 0) although total_ios / runtime says 1999.75.  Now the file fails
    at the line of that "iops", naming job, direction and both numbers; the real JSON beside it stays ok."""
    text = (WINDOWED / "randread-4k-windowed.json").read_text()
    read = json.loads(text)["jobs"][0]["read"]
    edited = text.replace('"iops" : 1999.750062', '"iops" : 9999.750062')
    assert edited != text
    (tmp_path / "edited.json").write_text(edited)
    shutil.copy(FIXTURES / "fio/randrw-4k-perio/randrw-4k-perio.json", tmp_path / "real.json")
    assert main(["ingest", str(tmp_path), "--out", str(tmp_path.parent / "out"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    line = _iops_line(edited, "9999.750062")
    want = (f"{tmp_path / 'edited.json'}:{line}: expected job 'win' read iops = total_ios / runtime, as fio computes "
            f"it: {read['total_ios']} IOs in {read['runtime']} ms are "
            f"{read['total_ios'] * 1000 / read['runtime']:.6g} IOPS, the file says 9999.75 (an edited number?)")
    assert f"  {want}" in err.splitlines()
    files = pd.read_parquet(tmp_path.parent / "out/files.parquet").set_index("path")
    assert files["status"].to_dict() == {"edited.json": "failed", "real.json": "ok"}


def _bytes(p: Path) -> bytes:
    raw = p.read_bytes()
    return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw


def test_no_real_fio_json_fails_the_identity_check():
    """Attack class: identity checks computed but ignored (the rule's false alarms).  Every real fio JSON of
    the fixtures, tests/outside, the grid captures and the shared corpus satisfies fio's relation within the
    tolerance: iops equals total_ios × 1000 / runtime (ms) to 1e-6, relative, for each job and direction."""
    roots = [FIXTURES, ROOT / "tests/outside", GRID, ROOT / "data/raw/fio-grid-pilot", CORPUS / "fio_json"]
    files = {p: _bytes(p) for r in roots if r.is_dir() for p in sorted(r.rglob("*"))
             if p.is_file() and (p.name.endswith((".json", ".json.gz", ".txt")))}
    files = {p: data for p, data in files.items() if fio.sniff(data[:1 << 16])}
    assert len(files) > 100
    worst, checked = 0.0, 0
    for p, data in files.items():
        parsed = fio.decode(p, data)
        ic = parsed.meta["identity_check"]
        assert ic.get("ok", True), (p, ic)
        docs, _ = fio.load_all(p, data)  # the relation by hand, on the json module's numbers
        for d in docs:
            for job in d.get("jobs") or d.get("client_stats") or []:
                for ddir in ("read", "write", "trim", "mixed"):
                    x = job.get(ddir)
                    if isinstance(x, dict) and x.get("runtime") and x.get("total_ios") and x.get("iops"):
                        worst = max(worst, abs(x["iops"] / (x["total_ios"] * 1000 / x["runtime"]) - 1))
                        checked += 1
    assert checked > 250 and worst < 1e-6


def _cut(src_dir: Path, dest: Path, log: str, keep: int) -> list[str]:
    shutil.copytree(src_dir, dest)
    lines = (src_dir / log).read_text().splitlines(keepends=True)
    (dest / log).write_text("".join(lines[:keep]))
    return lines


def test_a_windowed_log_cut_at_a_line_boundary_is_partial(tmp_path, capsys):
    """Attack class: a file cut exactly at a line boundary.  win_clat.1.log (0.5 s windows of a 4.001 s job)
    cut to its first 4 lines read ok with half its series.  Now it is partial, saying where it ends against
    the JSON's runtime; the uncut logs beside it stay ok, and compare names it."""
    lines = _cut(WINDOWED, tmp_path / "w", "win_clat.1.log", 4)
    opts = json.loads((WINDOWED / "randread-4k-windowed.json").read_text())
    runtime_ms = opts["jobs"][0]["read"]["runtime"]
    window_ms = int(opts["jobs"][0]["job options"]["log_avg_msec"])
    ends_ms = int(lines[3].split(",")[0])
    assert (runtime_ms, window_ms, ends_ms) == (4001, 500, 2000)
    r = ingest(tmp_path / "w", progress=False)
    f = r.files.set_index("path")
    assert f.loc["win_clat.1.log", "status"] == "partial"
    assert {p: s for p, s in f["status"].items() if p != "win_clat.1.log"} == {
        "COMMAND": "context", "randread-4k-windowed.json": "ok", "win_bw.1.log": "ok", "win_clat_hist.1.log": "ok",
        "win_iops.1.log": "ok", "win_lat.1.log": "ok", "win_slat.1.log": "empty"}
    why = (f"the read windows end at {ends_ms / 1000:g} s, job 'win' ran {runtime_ms / 1000:g} s "
           f"(randread-4k-windowed.json; windows of {window_ms / 1000:g} s, a whole log ends within one of the "
           "runtime): the log was cut")
    assert json.loads(f.loc["win_clat.1.log", "meta_json"])["partial_reason"] == why
    assert (r.series["source"].astype(str) == "win_clat.1.log").sum() == 4
    assert main(["compare", str(tmp_path / "w"), str(WINDOWED), "--metric", "iops"]) == 0
    assert f"note: {tmp_path / 'w'}: win_clat.1.log: partial: {why}" in capsys.readouterr().err.splitlines()


def test_a_log_one_window_short_is_whole(tmp_path):
    """Attack class: a file cut exactly at a line boundary (the rule's limit).  fio drops a bw/iops log's last
    partial window (win_iops.1.log ends at 3.5 s of 4.001 s, as fio wrote it): a log cut by one more window
    (3.0 s) is within the rule's 2 windows + 10 % and stays ok; cut to 2.5 s it is partial."""
    _cut(WINDOWED, tmp_path / "one", "win_iops.1.log", 6)
    _cut(WINDOWED, tmp_path / "two", "win_iops.1.log", 5)
    st = {d: ingest(tmp_path / d, progress=False).files.set_index("path").loc["win_iops.1.log", "status"]
          for d in ("one", "two")}
    assert st == {"one": "ok", "two": "partial"}  # 4.001 − 3.0 = 1.0 s ≤ 1.4 s; 4.001 − 2.5 = 1.5 s > 1.4 s


def test_no_real_windowed_log_is_taken_for_a_cut_one():
    """Attack class: a file cut exactly at a line boundary (the rule's false alarms).  Every windowed log with
    its fio JSON beside it in the fixtures, tests/outside and the grid captures (over 1,000 logs, fio 2.18 and
    3.33, 0.25–1 s windows, 2–10 s jobs) is read ok."""
    roots = [FIXTURES / "fio", ROOT / "tests/outside/fioplot-fio218-2jobs-logs", GRID, ROOT / "data/raw/fio-grid-pilot"]
    windowed = 0
    for root in roots:
        f = ingest(root, progress=False, lenient=True).files
        logs = f[f["kind"].astype(str) == "fio-log"]
        metas = [json.loads(m) for m in logs["meta_json"]]
        windowed += sum(bool(m.get("windowed")) for m in metas)
        assert not [p for p, m in zip(logs["path"], metas) if m.get("cut")], root
        assert set(logs["status"]) == {"ok"}, root
    assert windowed > 1000


def test_a_stalled_job_s_whole_log_is_not_taken_for_a_cut_one():
    """Attack class: a file cut exactly at a line boundary (the real file the time rule alone would flag).  A
    qos-2026 run whose last writes hung on recovery: fio wrote no bw/iops window without a completed IO, so
    its iops log ends at 65 s of an 82.5 s job, as a cut log would.  Its windows hold all but the last partial
    window's IOs (8250 of 8280), so it is whole: ok, like the latency logs that end at the runtime."""
    run = ROOT / "data/raw/ceph-qos/qos-2026/recovery_scrub/high_client_ops/rep-01"
    text = gzip.decompress((run / "fio.json.gz").read_bytes()).decode()
    write = json.loads(text[text.index("{"):])["jobs"][0]["write"]
    log = gzip.decompress((run / "client_iops.1.log.gz").read_bytes()).decode()
    iops = [line.split(",") for line in log.splitlines()]
    assert (int(iops[-1][0]), write["runtime"]) == (65050, 82504)  # 17.5 s short: over 2 s + 8.25 s
    assert (sum(int(x[1]) for x in iops), write["total_ios"]) == (8250, 8280)  # 1 s windows: IOPS × 1 s each
    f = ingest(run, progress=False, lenient=True).files.set_index("path")
    logs = f[f["kind"].astype(str) == "fio-log"]
    assert {"client_iops.1.log.gz", "client_bw.1.log.gz", "client_lat.1.log.gz"} <= set(logs.index)
    assert set(logs["status"]) == {"ok"}
