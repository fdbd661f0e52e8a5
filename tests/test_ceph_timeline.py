"""``analysis.ingest.ceph_timeline``: timelines built here, where the answers are known by construction.

Times are T0 + multiples of 1/8 s, exact in binary at this magnitude, so durations compare with ``==``.

Standard scenario (``standard()``), 20 samples at T0+1 … T0+20, pools ``scrub`` (2.0–2.3) and ``snap``
(3.0–3.3), 4 PGs each:

* marks: fio_start T0+2.5, deep_scrub_requested (scrub) T0+4.5, snap_removed (snap) T0+11, fio_end T0+18.5;
* scrub pool: 100 objects / 4 MiB per PG; PG i deep-scrubs from T0+5+i to its "deep-scrub ok" at
  T0+6.25+i, its last_deep_scrub_stamp becomes T0+6.375+i → scrub_duration 9.25 − 4.5 = 4.75 s from the
  events, 9.375 − 4.5 = 4.875 s from the stamps;
* snap pool: 250 objects per PG; queue 0 at the mark (T0+11) and in the next sample (T0+12: not yet
  queued), 10 per PG with snaptrim/snaptrim_wait at T0+13…15 (objects 225 at 14, 15), idle again at
  T0+16 with 200 objects → snaptrim_duration 5 s, 200 clones, 40 objects/s;
* event lines are written two samples late (as the cluster log is), i.e. up to 1.75 s back in time.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from analysis.ingest import IngestError, detect, read
from analysis.ingest import ceph_timeline as ct
from analysis.ingest import fio, fio_log, radosbench

T0 = 1763740000.0
FIELDS = ["pgid", "state", "num_objects", "num_bytes", "degraded", "misplaced", "unfound",
          "snaptrimq_len", "last_scrub_stamp", "last_deep_scrub_stamp"]
POOLS = {"1": "client", "2": "scrub", "3": "snap", "4": "recovery"}
VERSION = "ceph version 16.2.15 (618f440892089921c3e944a991122ddc44e60516) pacific (stable)"
MIB4 = 4 * 1024 * 1024
FIX = Path(__file__).resolve().parent / "fixtures"


def header(**kw) -> dict:
    h = {"format": "cephqos-pg-timeline", "version": 1, "ceph_version": VERSION, "pools": POOLS,
         "pg_fields": FIELDS, "interval_s": 1.0, "started_unix": T0}
    h.update(kw)
    return h


def pg(pgid: str, **kw) -> dict:
    d = {"pgid": pgid, "state": "active+clean", "num_objects": 0, "num_bytes": 0, "degraded": 0,
         "misplaced": 0, "unfound": 0, "snaptrimq_len": 0, "last_scrub_stamp": T0 - 2000.0,
         "last_deep_scrub_stamp": T0 - 1000.0}
    d.update(kw)
    return d


def write(path: Path, lines: list[dict], *, hdr: dict | None = None, trailer: bool = True,
          tail: str = "") -> Path:
    """Header, the lines (PG dicts → rows in the header's pg_fields order), trailer, raw ``tail``."""
    hdr = hdr or header()
    fields = hdr["pg_fields"]
    out = [json.dumps(hdr)]
    for obj in lines:
        if "pgs" in obj:
            obj = {**obj, "pgs": [[p[f] for f in fields] for p in obj["pgs"]]}
        out.append(json.dumps(obj))
    if trailer:
        n = sum(1 for o in lines if "pgs" in o or "error" in o)
        out.append(json.dumps({"t": max(o["t"] for o in lines) + 0.5, "end": True, "samples": n}))
    path.write_text("\n".join(out) + "\n" + tail)
    return path


SCRUB_START = [5.0, 6.0, 7.0, 8.0]
SCRUB_OK = [6.25, 7.25, 8.25, 9.25]


def scrub_pg(i: int, k: float) -> dict:
    ok = SCRUB_OK[i]
    return pg(f"2.{i}", num_objects=100, num_bytes=MIB4,
              state="active+clean+scrubbing+deep" if SCRUB_START[i] <= k < ok else "active+clean",
              last_deep_scrub_stamp=T0 + ok + 0.125 if ok + 0.125 <= k else T0 - 1000.0)


def snap_pg(j: int, k: float, trim: bool = True) -> dict:
    busy = trim and 13 <= k < 16
    objects = 250 if (k < 14 or not trim) else 225 if k < 16 else 200
    return pg(f"3.{j}", num_objects=objects, num_bytes=objects * 4096, snaptrimq_len=10 if busy else 0,
              state=("active+clean+snaptrim" if j < 2 else "active+clean+snaptrim_wait") if busy
              else "active+clean")


def standard(n: int = 20, events: bool = True, trim: bool = True) -> list[dict]:
    marks = [{"t": T0 + 2.5, "mark": "fio_start"},
             {"t": T0 + 4.5, "mark": "deep_scrub_requested", "pool": "scrub"},
             {"t": T0 + 11.0, "mark": "snap_removed", "pool": "snap"},
             {"t": T0 + 18.5, "mark": "fio_end"}]
    evs = []
    if events:
        for i in range(4):
            evs += [{"t": T0 + SCRUB_START[i], "event": "deep-scrub starts", "pgid": f"2.{i}",
                     "osd": "osd.0"},
                    {"t": T0 + SCRUB_OK[i], "event": "deep-scrub ok", "pgid": f"2.{i}", "osd": "osd.1"}]
        evs += [{"t": T0 + 3.0, "event": "scrub starts", "pgid": "3.1", "osd": "osd.2"},
                {"t": T0 + 12.0, "event": "deep-scrub ok", "pgid": "3.1", "osd": "osd.2"}]  # other pool
    lines: list[dict] = []
    for k in range(1, n + 1):
        lines.append({"t": T0 + k, "pgs": [scrub_pg(i, k) for i in range(4)]
                      + [snap_pg(j, k, trim) for j in range(4)]})
        if k == 10:
            lines.append({"t": T0 + 10.5, "error": "pg dump: -110 timed out"})
        lines += [m for m in marks if k - 1 < m["t"] - T0 <= k]
        lines += [e for e in evs if k - 3 < e["t"] - T0 <= k - 2]  # the cluster log lags two polls
    return lines


def series_value(r, pool: str, metric: str, t_s: float) -> float:
    s = r.series
    hit = s.loc[(s["job"] == pool) & (s["metric"] == metric) & (s["t_s"] == t_s), "value"]
    assert len(hit) == 1, (pool, metric, t_s, len(hit))
    return float(hit.iloc[0])


# ------------------------------------------------------------------------------- standard scenario
def test_standard_summary_and_meta(tmp_path):
    r = read(write(tmp_path / "timeline.jsonl", standard()))
    assert r.kind == "ceph-pg-timeline"
    assert not r.partial
    assert r.meta["incomplete"] == []
    assert r.value("scrub_duration", job="scrub") == 4.75
    assert r.meta["scrub_duration_from"] == "events"
    assert r.value("scrub_bytes", job="scrub") == 4 * MIB4
    assert r.value("scrub_objects", job="scrub") == 400
    assert r.value("scrub_rate", job="scrub") == 16777216 / 4.75
    assert r.value("scrub_rate_objects", job="scrub") == 400 / 4.75
    assert r.value("scrub_pgs", job="scrub") == 4
    assert r.value("scrub_pgs_done", job="scrub") == 4
    assert r.value("snaptrim_duration", job="snap") == 5.0
    assert r.value("snaptrim_objects", job="snap") == 200
    assert r.value("snaptrim_rate", job="snap") == 40.0
    assert "recovery_duration" not in set(r.summary["metric"])
    units = dict(zip(r.summary["metric"], r.summary["unit"]))
    assert units == {"scrub_pgs": "count", "scrub_pgs_done": "count", "scrub_objects": "count",
                     "scrub_bytes": "B", "scrub_duration": "s", "scrub_rate": "B/s",
                     "scrub_rate_objects": "1/s", "snaptrim_duration": "s", "snaptrim_objects": "count",
                     "snaptrim_rate": "1/s", "scrub_start": "s", "snaptrim_start": "s"}
    # the marks on the fio_start clock: requested at +4.5 s, removed at +11 s, fio spawned at +2.5 s
    assert r.value("scrub_start", job="scrub") == 2.0 and r.value("snaptrim_start", job="snap") == 8.5
    assert set(r.summary["ddir"]) == {""}
    m = r.meta
    assert m["tool_version"] == "16.2.15" and m["ceph_version"] == VERSION
    assert m["t0_unix"] == T0 + 2.5 and m["t0_from"] == "fio_start"
    assert m["marks"] == {"fio_start": 0.0, "deep_scrub_requested": 2.0, "snap_removed": 8.5,
                          "fio_end": 16.0}
    assert m["mark_pools"] == {"deep_scrub_requested": "scrub", "snap_removed": "snap"}
    assert m["samples"] == 20 and m["poll_errors"] == 1 and m["events"] == 10
    assert m["resolution_s"] == 1.0
    assert m["pools"] == POOLS and m["pg_fields"] == FIELDS
    assert m["trailer"] is True and m["trailer_samples"] == 21


def test_standard_series(tmp_path):
    r = read(write(tmp_path / "timeline.jsonl", standard()))
    s = r.series
    assert list(s.columns) == ["source", "job", "ddir", "metric", "value", "unit", "t_s"]
    assert set(s["ddir"]) == {""}
    assert set(s["job"]) == {"scrub", "snap"}
    # 20 samples × (pgs + 5 flag counts + 6 sums) per pool, + objects/bytes_scrubbed for the scrub pool
    assert len(s) == 20 * 12 * 2 + 20 * 2
    assert sorted(set(s.loc[s["metric"] == "pgs", "t_s"])) == [k - 2.5 for k in range(1, 21)]
    assert set(s.loc[s["metric"] == "pgs", "value"]) == {4.0}
    # T0+6 (t_s 3.5): PG 2.0 and 2.1 deep-scrubbing, 2.2 and 2.3 clean
    assert series_value(r, "scrub", "pgs_deep_scrubbing", 3.5) == 2
    assert series_value(r, "scrub", "pgs_scrubbing", 3.5) == 2
    assert series_value(r, "scrub", "pgs_active_clean", 3.5) == 2
    assert series_value(r, "scrub", "pgs_deep_scrubbing", 7.5) == 0
    assert series_value(r, "scrub", "objects_scrubbed", 2.5) == 0     # T0+5
    assert series_value(r, "scrub", "objects_scrubbed", 4.5) == 100   # T0+7: 2.0 stamped at 6.375
    assert series_value(r, "scrub", "objects_scrubbed", 6.5) == 300   # T0+9
    assert series_value(r, "scrub", "objects_scrubbed", 7.5) == 400   # T0+10
    assert series_value(r, "scrub", "bytes_scrubbed", 17.5) == 4 * MIB4
    assert series_value(r, "scrub", "bytes", 0.5) == 4 * MIB4
    # snap pool: T0+13 (t_s 10.5) trimming, T0+16 idle with 800 objects
    assert series_value(r, "snap", "pgs_snaptrim", 10.5) == 4
    assert series_value(r, "snap", "snaptrim_queue", 10.5) == 40
    assert series_value(r, "snap", "pgs_active_clean", 10.5) == 0
    assert series_value(r, "snap", "snaptrim_queue", 9.5) == 0
    assert series_value(r, "snap", "objects", 13.5) == 800
    assert series_value(r, "snap", "bytes", 13.5) == 800 * 4096
    units = s.groupby("metric", observed=True)["unit"].first().astype(str).to_dict()
    assert units["bytes"] == "B" and units["bytes_scrubbed"] == "B" and units["objects"] == "count"
    assert units["snaptrim_queue"] == "count" and units["pgs_recovering"] == "count"


def test_pg_fields_order_is_taken_from_the_header(tmp_path):
    hdr = header(pg_fields=list(reversed(FIELDS)))
    r = read(write(tmp_path / "t.jsonl", standard(), hdr=hdr))
    assert r.value("scrub_duration", job="scrub") == 4.75
    assert r.value("snaptrim_objects", job="snap") == 200
    assert series_value(r, "snap", "snaptrim_queue", 10.5) == 40


def test_time_base_without_fio_start(tmp_path):
    lines = [o for o in standard() if o.get("mark") != "fio_start"]
    r = read(write(tmp_path / "t.jsonl", lines))
    assert r.meta["t0_from"] == "started_unix" and r.meta["t0_unix"] == T0
    assert r.meta["marks"]["deep_scrub_requested"] == 4.5
    assert sorted(set(r.series["t_s"])) == [float(k) for k in range(1, 21)]


def test_scrub_falls_back_to_stamps(tmp_path):
    r = read(write(tmp_path / "t.jsonl", standard(events=False)))
    assert r.meta["scrub_duration_from"] == "stamps"
    assert r.value("scrub_duration", job="scrub") == 4.875
    assert r.value("scrub_rate", job="scrub") == 16777216 / 4.875
    assert r.meta["events"] == 0 and not r.partial


def test_unfinished_scrub(tmp_path):
    # 8 samples: 2.0 (ok 6.25) and 2.1 (ok 7.25) done, 2.2 and 2.3 not
    lines = [o for o in standard(n=8) if o["t"] <= T0 + 8]
    r = read(write(tmp_path / "t.jsonl", lines))
    assert r.partial
    assert "scrub_duration" not in set(r.summary["metric"])
    assert "scrub_rate" not in set(r.summary["metric"])
    assert r.value("scrub_pgs_done", job="scrub") == 2
    assert r.value("scrub_pgs", job="scrub") == 4
    assert r.value("scrub_bytes", job="scrub") == 4 * MIB4
    assert any("scrub" in x and "2 of 4" in x for x in r.meta["incomplete"])


def test_snaptrim_not_queued_at_the_mark(tmp_path):
    # the samples at the mark (T0+11) and just after it (T0+12) show queue 0: not the end
    r = read(write(tmp_path / "t.jsonl", standard()))
    assert series_value(r, "snap", "snaptrim_queue", 8.5) == 0   # at the mark
    assert series_value(r, "snap", "snaptrim_queue", 9.5) == 0   # one sample after
    assert r.value("snaptrim_duration", job="snap") == 16.0 - 11.0


def test_snaptrim_never_seen(tmp_path):
    r = read(write(tmp_path / "t.jsonl", standard(trim=False)))
    assert r.partial
    assert not {"snaptrim_duration", "snaptrim_rate", "snaptrim_objects"} & set(r.summary["metric"])
    assert any("snaptrim" in x and "never seen" in x for x in r.meta["incomplete"])
    assert r.value("scrub_duration", job="scrub") == 4.75


def test_snaptrim_unfinished(tmp_path):
    lines = [o for o in standard(n=14) if o["t"] <= T0 + 14]
    r = read(write(tmp_path / "t.jsonl", lines))
    assert r.partial
    assert "snaptrim_duration" not in set(r.summary["metric"])
    assert any("snaptrim" in x and "unfinished" in x for x in r.meta["incomplete"])
    assert r.value("scrub_duration", job="scrub") == 4.75


# ------------------------------------------------------------------------------------ recovery
def recovery_lines(zero_at_mark: bool = False) -> list[dict]:
    """Pool ``client`` (1.0–1.3) clean throughout; pool ``recovery`` (4.0–4.3) recovers after the
    recovery_enabled mark at T0+3.5 and is active+clean with nothing degraded at T0+8."""
    lines: list[dict] = [{"t": T0 + 0.5, "mark": "fio_start"}]
    for k in range(1, 11):
        if k <= 3:
            deg, mis = (0, 0) if zero_at_mark else (30, 20)
            state = "peering" if zero_at_mark else "active+undersized+degraded+remapped+backfill_wait"
        elif k < 7:
            deg, mis = {4: (20, 10), 5: (30, 20), 6: (10, 15)}[k]
            state = "active+recovering+degraded"
        elif k == 7:
            deg, mis, state = 0, 0, "active+clean+remapped"
        else:
            deg, mis, state = 0, 0, "active+clean"
        pgs = [pg(f"1.{i}", num_objects=10) for i in range(4)]
        pgs += [pg(f"4.{i}", state=state, num_objects=50, degraded=deg, misplaced=mis) for i in range(4)]
        lines.append({"t": T0 + k, "pgs": pgs})
        if k == 3:
            lines.append({"t": T0 + 3.5, "mark": "recovery_enabled"})
    return lines


def test_recovery(tmp_path):
    r = read(write(tmp_path / "t.jsonl", recovery_lines()))
    assert not r.partial
    assert r.meta["mark_pools"] == {}
    assert r.value("recovery_duration", job="") == 8.0 - 3.5
    assert r.value("recovery_objects", job="") == 4 * (30 + 20)
    assert r.value("recovery_rate", job="") == 200 / 4.5
    assert series_value(r, "recovery", "objects_degraded", 1.5) == 120     # T0+2
    assert series_value(r, "recovery", "objects_misplaced", 1.5) == 80
    assert series_value(r, "recovery", "pgs_recovering", 3.5) == 4         # T0+4
    assert series_value(r, "recovery", "pgs_recovering", 1.5) == 4         # backfill_wait
    assert series_value(r, "recovery", "pgs_active_clean", 6.5) == 0       # active+clean+remapped
    assert series_value(r, "client", "pgs_recovering", 3.5) == 0


def test_recovery_objects_counted_after_the_mark(tmp_path):
    # nothing degraded/misplaced at the mark (PGs still peering): max over (3.5, 8.5] = T0+5's 4 × 50
    r = read(write(tmp_path / "t.jsonl", recovery_lines(zero_at_mark=True)))
    assert r.value("recovery_objects", job="") == 200
    assert r.value("recovery_duration", job="") == 4.5


def test_recovery_unfinished(tmp_path):
    lines = [o for o in recovery_lines() if o["t"] <= T0 + 7]
    r = read(write(tmp_path / "t.jsonl", lines))
    assert r.partial
    assert "recovery_duration" not in set(r.summary["metric"])
    assert r.value("recovery_objects", job="") == 200
    assert any("recovery" in x for x in r.meta["incomplete"])


# ---------------------------------------------------------------------------- partial / errors
def test_no_trailer_is_partial(tmp_path):
    r = read(write(tmp_path / "t.jsonl", standard(), trailer=False))
    assert r.partial and r.meta["trailer"] is False
    assert any("trailer" in x for x in r.meta["incomplete"])
    assert r.value("scrub_duration", job="scrub") == 4.75
    assert r.meta["samples"] == 20


def test_truncated_last_line_is_partial(tmp_path):
    tail = '{"t": 1763740021.0, "pgs": [["2.0", "active+cl'
    r = read(write(tmp_path / "t.jsonl", standard(), trailer=False, tail=tail))
    assert r.partial and r.meta["truncated_last_line"] is True
    assert r.meta["samples"] == 20
    assert r.value("snaptrim_duration", job="snap") == 5.0


def test_broken_last_line_with_newline_is_an_error(tmp_path):
    p = write(tmp_path / "t.jsonl", standard()[:3], trailer=False, tail='{"t": 1763740021.0, "pg\n')
    with pytest.raises(IngestError) as e:
        read(p)
    assert e.value.line == 5


def small(tmp_path: Path, *rows: str) -> Path:
    p = tmp_path / "small.jsonl"
    p.write_text("\n".join([json.dumps(header())] + list(rows)) + "\n")
    return p


S1 = '{"t": 1763740001.0, "pgs": [["2.0", "active+clean", 1, 2, 0, 0, 0, 0, null, null]]}'
S2 = '{"t": 1763740002.0, "pgs": [["2.0", "active+clean", 1, 2, 0, 0, 0, 0, null, null]]}'
END = '{"t": 1763740003.0, "end": true, "samples": 2}'


def test_small_valid_file(tmp_path):
    r = read(small(tmp_path, S1, S2, END))
    assert not r.partial and r.meta["samples"] == 2 and r.summary.empty
    assert series_value(r, "scrub", "bytes", 2.0) == 2


def test_bad_json_in_the_middle(tmp_path):
    with pytest.raises(IngestError) as e:
        read(small(tmp_path, S1, '{"t": 1763740001.5, "mark": "fio_start"', S2, END))
    assert e.value.line == 3
    assert ":3:" in str(e.value)


def test_non_monotonic_time(tmp_path):
    back = '{"t": 1763740000.5, "pgs": []}'  # 1.5 s before the sample on line 3
    with pytest.raises(IngestError) as e:
        read(small(tmp_path, S1, S2, back, END))
    assert e.value.line == 4 and "backwards" in e.value.message
    ok = '{"t": 1763740001.25, "pgs": []}'   # 0.75 s back: within the tolerance
    assert read(small(tmp_path, S1, S2, ok, END)).meta["samples"] == 3


def test_mark_going_back(tmp_path):
    m1 = '{"t": 1763740002.0, "mark": "fio_start"}'
    m2 = '{"t": 1763740000.5, "mark": "fio_end"}'
    with pytest.raises(IngestError) as e:
        read(small(tmp_path, S1, m1, S2, m2, END))
    assert e.value.line == 5


def test_t_not_a_number(tmp_path):
    with pytest.raises(IngestError) as e:
        read(small(tmp_path, S1, '{"t": "soon", "mark": "fio_start"}', S2, END))
    assert e.value.line == 3 and '"t"' in e.value.message
    with pytest.raises(IngestError) as e:
        read(small(tmp_path, S1, S2, '{"end": true, "samples": 2}'))
    assert e.value.line == 4


def test_bad_pg_row(tmp_path):
    short = '{"t": 1763740002.0, "pgs": [["2.0", "active+clean", 1]]}'
    with pytest.raises(IngestError) as e:
        read(small(tmp_path, S1, short, END))
    assert e.value.line == 3 and "pg_fields" in e.value.message
    text = '{"t": 1763740002.0, "pgs": [["2.0", "active+clean", "many", 2, 0, 0, 0, 0, null, null]]}'
    with pytest.raises(IngestError) as e:
        read(small(tmp_path, S1, text, END))
    assert e.value.line == 3 and "num_objects" in e.value.message


@pytest.mark.parametrize("first, words", [
    ('[1, 2]', "cephqos-pg-timeline"),
    ('{"format": "other", "version": 1}', "cephqos-pg-timeline"),
    ('{"format": "cephqos-pg-timeline", "version": 2, "pools": {}, "pg_fields": ["pgid", "state"]}',
     "version 1"),
    ('{"format": "cephqos-pg-timeline", "version": 1, "pools": {"1": "a"}}', "pg_fields"),
    ('{"format": "cephqos-pg-timeline", "version": 1, "pg_fields": ["pgid", "state"]}', "pools"),
    ('{"format": "cephqos-pg-timeline", "version": 1, "pools": {}, "pg_fi', "cephqos-pg-timeline"),
])
def test_bad_header(tmp_path, first, words):
    data = (first + "\n" + S1 + "\n" + END + "\n").encode()
    with pytest.raises(IngestError) as e:
        ct.parse(tmp_path / "h.jsonl", data)
    assert e.value.line == 1 and words in e.value.message
    if first.startswith('{"format": "cephqos'):  # detected by content, then rejected by the reader
        p = tmp_path / "h.jsonl"
        p.write_bytes(data)
        with pytest.raises(IngestError) as e2:
            read(p)
        assert e2.value.line == 1 and words in e2.value.message


# ----------------------------------------------------------------------------------- detection
def test_detection_and_gzip(tmp_path):
    p = write(tmp_path / "timeline.jsonl", standard())
    assert detect(p) == "ceph-pg-timeline"
    gz = tmp_path / "timeline.jsonl.gz"
    with open(p, "rb") as f, gzip.open(gz, "wb") as g:
        shutil.copyfileobj(f, g)
    assert detect(gz) == "ceph-pg-timeline"
    a, b = read(p), read(gz)
    assert b.kind == "ceph-pg-timeline" and b.meta.get("compression") == "gzip"
    pd.testing.assert_frame_equal(a.summary.drop(columns="source"), b.summary.drop(columns="source"))
    pd.testing.assert_frame_equal(a.series.drop(columns="source"), b.series.drop(columns="source"))
    assert a.partial == b.partial


def test_compact_separators_detected(tmp_path):
    # pgpoll.py writes json.dumps(obj, separators=(",", ":"))
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps(header(), separators=(",", ":")) + "\n" + S1 + "\n" + END + "\n")
    assert read(p).kind == "ceph-pg-timeline"


def test_sniffers_do_not_cross(tmp_path):
    head = write(tmp_path / "t.jsonl", standard()).read_bytes()[:65536]
    assert ct.sniff(head)
    assert not fio.sniff(head)
    assert not radosbench.sniff(head)
    assert not fio_log.sniff(head)
    fio_json = sorted((FIX / "fio").glob("*/*.json"))
    assert fio_json
    for f in fio_json:
        assert not ct.sniff(f.read_bytes()[:65536]), f
        assert detect(f) == "fio-json", f
    assert not ct.sniff(b'{"fio version": "fio-3.28", "format": "cephqos-pg-timeline"}\n')
    assert not ct.sniff(b'{\n"format": "cephqos-pg-timeline"}\n')  # not on the first line


def test_header_only_and_empty_samples(tmp_path):
    r = read(small(tmp_path, '{"t": 1763740003.0, "end": true, "samples": 0}'))
    assert r.meta["samples"] == 0 and r.series.empty and r.summary.empty and not r.partial
    r = read(small(tmp_path, '{"t": 1763740001.0, "pgs": []}',
                   '{"t": 1763740001.5, "mark": "recovery_enabled"}'))
    assert r.partial and r.meta["samples"] == 1 and r.series.empty
    assert "recovery_duration" not in set(r.summary["metric"])
    r = read(small(tmp_path))
    assert r.partial and r.meta["samples"] == 0 and r.meta["trailer"] is False


def test_fuzz_seed_fixture():
    # tests/fixtures/ceph_timeline/make_fixture.py: 40 polls, the 22nd failed; every operation finishes
    r = read(FIX / "ceph_timeline" / "scrub-snaptrim-recovery.jsonl")
    assert r.kind == "ceph-pg-timeline" and not r.partial
    assert r.meta["samples"] == 39 and r.meta["poll_errors"] == 1 and r.meta["trailer_samples"] == 40
    assert r.meta["scrub_duration_from"] == "events"
    assert r.value("scrub_pgs_done", job="scrub") == 4
    assert r.value("scrub_objects", job="scrub") == 1200
    assert set(r.summary["metric"]) >= {"scrub_duration", "snaptrim_duration", "recovery_duration"}


@pytest.mark.parametrize("field,value,expected", [
    ("last_deep_scrub_stamp", 1e300, '"last_deep_scrub_stamp" as a number in [0, 1e+10) or null (unix s), got 1e+300'),
    ("last_scrub_stamp", -1.0, '"last_scrub_stamp" as a number in [0, 1e+10) or null (unix s), got -1.0'),
    ("degraded", -3, '"degraded" as a number in [0, 1e+15) or null, got -3'),
    ("num_bytes", 1e18, '"num_bytes" as a number in [0, 1e+18) or null, got 1e+18'),
])
def test_pg_values_out_of_range_fail_with_their_line(tmp_path, field, value, expected):
    """A stamp is unix s (0 = never scrubbed), a count or size is ≥ 0 and below what a cluster holds: a
    value outside fails at its line instead of moving a scrub duration to 1e300 s."""
    lines = standard()
    k = next(i for i, o in enumerate(lines) if "pgs" in o and o["t"] == T0 + 7)
    lines[k] = {**lines[k], "pgs": [pg("2.1", **{field: value})] + lines[k]["pgs"][1:]}
    p = write(tmp_path / "tl.jsonl", lines)
    with pytest.raises(IngestError) as e:
        read(p)
    assert e.value.line == k + 2 and expected in str(e.value)  # + header line, 1-based
