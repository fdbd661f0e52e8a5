"""The data dictionary: every table, column and metric of the processed tables, with its unit and source.

``python -m analysis dictionary`` writes it as Markdown into ``docs/tables.md``, between :data:`BEGIN` and
:data:`END`; ``tests/test_dictionary.py`` fails when a reader emits a metric (kind, name, unit) no entry
here matches, or when that section is stale.  Metric names are regular expressions over the tidy ``metric`` column
(``<q>`` = a percentile such as ``99`` or ``99.9``); units are the tidy ``unit`` column's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: (table, column, meaning)
TABLES: tuple[tuple[str, str, str], ...] = (
    ("files", "path", "the file, relative to the ingested folder"),
    ("files", "size_bytes, sha256", "its size (B) and SHA-256"),
    ("files", "kind", "the format detected from its content (the kinds below), or a context kind: run.json, "
                      "benchmark_config.yaml, capture-aux, cbt-aux, notes, cbt-derived, cbt-settings, cbt-config"),
    ("files", "tool_version", "what the file says of the tool (fio-3.33, ceph version …)"),
    ("files", "status", "ok · partial (the reader marked it incomplete) · failed (error, error_line; also an "
                        "empty, unrecognised, unlisted or changed file) · empty (a fio log fio left empty; any "
                        "empty file with --lenient) · unrecognised (--lenient) · context"),
    ("files", "manifest", "ok · missing (not in MANIFEST.sha256: failed, read with --lenient) · MISMATCH (failed, "
                          "read with --lenient) · absent (no manifest)"),
    ("files", "meta_json", "the reader's notes: assumptions, cross-checks against the tool's own summary"),
    ("summary", "source, kind", "the file and its format"),
    ("summary", "job", "fio job, pool (timeline), device maj,min (block traces), cpuN / osd.N (sysutil)"),
    ("summary", "ddir", "read · write · trim · '' (no direction)"),
    ("summary", "metric, value, unit", "one number per row; units: ns, s, B, B/s, 1/s, count, ratio"),
    ("summary", "campaign, scenario, arm, profile, repeat, run",
     "run keys from run.json (our captures) or CBT's benchmark_config.yaml / ceph_settings.out"),
    ("summary", "op_queue",
     "the OSD's op queue (wpq, mclock_scheduler, …; osd_op_queue): CBT's ceph_settings.out, else its "
     "benchmark_config.yaml, else run.json's scheduler when it names an op queue; profile is the mClock profile"),
    ("summary", "io_scheduler",
     "the block layer's IO scheduler (none, mq-deadline, kyber, bfq, …): run.json's scheduler when it names no "
     "op queue. One meaning per column: no table has a scheduler column"),
    ("summary", "osd_qos (compare only)",
     "analysis.stats.abtest: the op queue, or the mClock profile under mclock_scheduler (wpq, high_client_ops, …)"),
    ("summary", "archive", "CBT: the folder that holds results/, as a path below the ingested folder (the "
                         "folder's name when it is the ingested one); id-<hash> repeats across archives of one YAML"),
    ("summary", "ceph_release, ceph_version",
     "our Ceph captures: the release and version every daemon reported at bring-up (pacific 16.2.15, reef 18.2.7)"),
    ("summary", "(other run.json scalars)", "e.g. target, rw, bs, iodepth, max_scrubs, scrub_cost, redone"),
    ("summary", "repeat, iodepth, op_size, bs_B, numjobs, concurrent_ops, concurrent_procs, vol_size, plan_order, "
                "attempt, device_size_mib, max_scrubs, scrub_cost, requested_scrub_priority",
     "numbers (Int64; op_size, bs_B, scrub_cost in B, vol_size and device_size_mib in MiB), as are duration_s and "
     "osd_restart_s (float, s); other keys are string categories (bs is fio's notation, e.g. 128k); a run.json "
     "or CBT value of such a key that is not a finite number fails that file (analysis.schema)"),
    ("summary", "rw, rwmixread, bs, bs_B, bs_read_B, bs_write_B, iodepth, numjobs, ioengine, direct, size_B, "
                "runtime_s, time_based, target, fio_version",
     "the workload fio recorded in its own JSON (global options, then each job's; analysis.ingest.fio_workload), "
     "on the JSON's rows and on the rows of the logs whose companion it is (that job's keys): rwmixread in % reads "
     "(mixed modes), sizes in B (bs_read_B/bs_write_B when fio was given bs=4k,64k), direct and time_based 0/1, "
     "runtime_s in s, target = filename, else directory, else pool/rbdname. An option fio did not record is fio's "
     "default (rw read, bs 4096, iodepth 1, numjobs 1, direct 0), listed in meta_json's workload.defaults; a file "
     "with no options recorded (fio 2.1) gets none. Where a file's jobs ran different workloads each job's rows "
     "carry its own. run.json's or CBT's keys win where both give one"),
    ("summary", "target, repeat (bench_fio)",
     "fio-plot's bench_fio layout <target>/[<mode><mix>/]<bs>[/run-N]/<mode>-<iodepth>-<numjobs>.json: the target "
     "folder's name and N; nothing else is read from names"),
    ("summary", "fio_timestamp", "fio JSON: the report's ``timestamp`` (unix s, when fio wrote it), on the JSON's "
                                 "rows: a run's time where no run.json says when it started (python -m analysis history)"),
    ("summary", "run (fio)", "without a run.json or CBT run: the fio JSON's path, on its rows and its logs' (one fio "
                             "invocation is one run); <path>#group<N> for each reporting group of a file whose jobs "
                             "ran one after another (stonewall, new_group, wait_for)"),
    ("summary", "fio_group, ramp_time_s, fio_options, fio_jobfile",
     "fio: a job's reporting group where a file holds several (groupid; <document>:<groupid> for several JSON "
     "documents in one file; <groupid>.<job> for a job that waited for another); ramp_time in s; every other "
     "option that changes the IO, as name=value pairs in name order (not the job name, filename, log or report "
     "options); the job file a text output's workload came from"),
    ("summary", "workload, total_iodepth, volume, client_host",
     "CBT's workloads layout: the workload's name, the test's total depth over its volumes, the output's volume "
     "number and the client host, from benchmark_config.yaml and the test folder; run = the test folder"),
    ("files", "workload_conflict", "where run.json or CBT's YAML and the fio JSON's options disagree (rw, bs_B, iodepth, "
                                   "numjobs, ioengine, direct, rwmixread; CBT mode and op_size), e.g. 'iodepth: "
                                   "run.json 16, fio 32'; the run context's value is kept"),
    ("series", "(summary's columns) + t_s", "one row per sample; t_s: seconds from the file's own start. Stored "
     "with campaign as its only run key; the others are stored once per file in files and joined on source = path "
     "by analysis.store.read_table and the DuckDB source (analysis.stats.aggregate.source)"),
    ("blk_requests", "sector, bytes, rwbs, pid, q, g, i, d, c (ns)",
     "one row per block request (completion) from blktrace / blkparse, with the run keys"),
)


@dataclass(frozen=True)
class Metric:
    kinds: tuple[str, ...]
    pattern: str
    unit: str
    meaning: str
    table: str = "summary"

    def matches(self, kind: str, metric: str, unit: str) -> bool:
        return kind in self.kinds and self.unit == unit and re.fullmatch(self.pattern, metric) is not None


Q = r"p\d+(?:\.\d+)?"  # a percentile name: p50, p99.9
LAT = r"(?:slat|clat|lat)"
FIO = ("fio-json", "fio-text", "fio-terse")
LOG = ("fio-log",)
HIST = ("fio-hist-log",)
RB = ("rados-bench",)
TL = ("ceph-pg-timeline",)
SU = ("sysutil",)
GP = ("getput",)
BLK = ("blktrace", "blkparse")

METRICS: tuple[Metric, ...] = (
    # fio --output-format=json/json+ (fio 2.1–3.3x)
    Metric(FIO, "iops", "1/s", "IOPS of the job and direction (fio's own)"),
    Metric(FIO, "bw", "B/s", "bandwidth (JSON: bw_bytes, fio 2.x bw KiB/s × 1024; text: as printed, to its precision)"),
    Metric(FIO, "io_bytes", "B", "bytes transferred"),
    Metric(FIO, "total_ios", "count", "IOs completed"),
    Metric(FIO, "runtime", "s", "the job's runtime in that direction"),
    Metric(FIO, rf"{LAT}_(?:mean|stddev|min|max)", "ns", "submission / completion / total latency moments"),
    Metric(FIO, rf"{LAT}_samples", "count", "latency samples"),
    Metric(FIO, rf"{LAT}_{Q}", "ns", "latency percentile as fio printed it (json+: checked against its bins)"),
    # fio logs (write_*_log, per IO or windowed)
    Metric(LOG, rf"{LAT}_(?:mean|min|max|stddev)", "ns", "latency log moments"),
    Metric(LOG, r"bw_(?:mean|min|max|stddev)", "B/s", "bandwidth log moments (KiB/s × 1024)"),
    Metric(LOG, r"iops_(?:mean|min|max|stddev)", "1/s", "IOPS log moments"),
    Metric(LOG, r"(?:slat|clat|lat|bw|iops)_samples", "count", "log lines"),
    Metric(LOG, rf"{LAT}_{Q}", "ns", "exact percentile of a per-IO latency log"),
    Metric(LOG, r"(?:slat|clat|lat)", "ns", "per-IO or window latency", "series"),
    Metric(LOG, r"bw", "B/s", "window bandwidth", "series"),
    Metric(LOG, r"iops", "1/s", "window IOPS", "series"),
    # fio histogram logs
    Metric(HIST, rf"{LAT}_{Q}", "ns", "percentile over the log's bins (whole run)"),
    Metric(HIST, rf"{LAT}_samples", "count", "IOs counted in the bins"),
    Metric(HIST, rf"{LAT}_{Q}", "ns", "percentile per interval", "series"),
    Metric(HIST, rf"{LAT}_samples", "count", "IOs per interval", "series"),
    # rados bench (text, --show-time, --format json; Ceph 0.47–18)
    Metric(RB, r"bw(?:_stddev|_max|_min)?", "B/s", "bandwidth (its MB/sec is MiB/s)"),
    Metric(RB, r"iops(?:_stddev|_max|_min)?", "1/s", "IOPS"),
    Metric(RB, r"lat_(?:mean|stddev|max|min)", "ns", "op latency"),
    Metric(RB, r"total_time", "s", "Total time run"),
    Metric(RB, r"ops_total", "count", "Total writes/reads made"),
    Metric(RB, r"(?:op_size|object_size)", "B", "op and object size"),
    Metric(RB, r"(?:cur_ops|started|finished)", "count", "per-second progress line", "series"),
    Metric(RB, r"(?:avg_bw|cur_bw)", "B/s", "per-second bandwidth", "series"),
    Metric(RB, r"(?:last_lat|avg_lat)", "ns", "per-second latency", "series"),
    # getput (Swift/S3 PUT/GET/DEL, commit 8df6328; CBT output.gwN): one line per test, --psum per process
    Metric(GP, r"bw", "B/s", "MB/Sec × 2**20 (its MB is MiB); puts, gets, mixed (a delete's is nominal: not given)"),
    Metric(GP, r"iops", "1/s", "Ops/Sec (summed over processes)"),
    Metric(GP, r"(?:ops_total|errors|retries)", "count",
           "Ops, Errs, Ret (a total's Ret is its last process's: getput does not sum it)"),
    Metric(GP, r"lat_(?:mean|median|min|max)", "ns", "op latency (printed in s: mean/median 3, min/max 2 decimals)"),
    Metric(GP, r"client_cpu", "ratio", "%CPU / 100: the client host's busy share of all CPUs over the test"),
    Metric(GP, r"op_size", "B", "OSize (cvt2KMG: k/m/g = 2**10/20/30); a get's is the bytes read"),
    Metric(GP, r"(?:procs|clients)", "count", "Proc and Clts of a total line"),
    Metric(GP, r"span", "s", "End − Start (HH:MM:SS, 1 s resolution)"),
    Metric(GP, r"lat_bin_\d+", "count", "--ldist: ops with latency from the bound in the name (ns) to the next"),
    Metric(GP, r"puts_per_proc", "count", "PutsPerProc: objects one process wrote"),
    # the background-operation timeline (capture/ceph/pgpoll.py)
    Metric(TL, r"(?:scrub|snaptrim|recovery)_duration", "s", "the operation's duration (poll resolution)"),
    Metric(TL, r"(?:scrub|snaptrim|recovery)_start", "s", "the operation's mark on the timeline clock"),
    Metric(TL, r"scrub_rate", "B/s", "logical bytes deep-scrubbed per second"),
    Metric(TL, r"(?:scrub_rate_objects|snaptrim_rate|recovery_rate)", "1/s", "objects per second"),
    Metric(TL, r"(?:scrub_pgs|scrub_pgs_done|scrub_objects|snaptrim_objects|recovery_objects)", "count",
           "the operation's size"),
    Metric(TL, r"scrub_bytes", "B", "logical bytes of the scrubbed pool"),
    Metric(TL, r"pgs(?:_active_clean|_scrubbing|_deep_scrubbing|_snaptrim|_recovering)?", "count",
           "PGs by state per sample", "series"),
    Metric(TL, r"(?:objects|objects_degraded|objects_misplaced|objects_unfound|snaptrim_queue|objects_scrubbed)",
           "count", "objects per sample", "series"),
    Metric(TL, r"(?:bytes|bytes_scrubbed)", "B", "bytes per sample", "series"),
    # the capture's 1 Hz system log (capture/ceph/monitor.py)
    Metric(SU, r"cpu_(?:busy|iowait|steal)", "ratio", "CPU fractions (per CPU; summary job 'all' for busy)"),
    Metric(SU, r"osd_(?:queued|in_flight|pool_in_flight)", "count",
           "ops queued for a PG / in flight per OSD / in flight on the watched pool's PGs"),
    Metric(SU, r"osd_cpu", "ratio", "an OSD's CPU (fraction of one CPU)"),
    Metric(SU, r"proc_cpu", "ratio", "a watched process's CPU, e.g. radosgw (fraction of one CPU)"),
    Metric(SU, r"mem_(?:available|cached)", "B", "memory"),
    Metric(SU, r"disk_(?:read|write)_iops", "1/s", "device IOPS (/proc/diskstats)"),
    Metric(SU, r"disk_(?:read|write)_bw", "B/s", "device bandwidth"),
    Metric(SU, r"disk_util(?:_max)?", "ratio", "device %util / 100"),
    Metric(SU, r"load1", "count", "1-minute load average"),
    Metric(SU, r"samples", "count", "lines read"),
    Metric(SU, r"cpu_(?:busy|iowait|steal)|osd_cpu|proc_cpu|disk_util", "ratio", "per second", "series"),
    Metric(SU, r"osd_(?:queued|in_flight|pool_in_flight)|load1", "count", "per second", "series"),
    Metric(SU, r"mem_(?:available|cached)", "B", "per second", "series"),
    Metric(SU, r"disk_(?:read|write)_iops", "1/s", "per second", "series"),
    Metric(SU, r"disk_(?:read|write)_bw", "B/s", "per second", "series"),
    # block traces (binary records, blkparse text) and btt
    Metric(BLK, r"(?:completed|queued|merges|requeues|dispatches|events|depth|io_unplugs|timer_unplugs|skips)",
           "count", "request counts (blkparse's own summary where printed)"),
    Metric(BLK, r"(?:completed|queued|dispatches|merges)_bytes", "B", "bytes"),
    Metric(BLK, r"iops", "1/s", "completions per second over the trace span"),
    Metric(BLK, r"bw", "B/s", "bytes per second over the trace span"),
    Metric(BLK, rf"(?:q2c|d2c|q2d)_(?:mean|max|{Q})", "ns", "per-bio Q→C, D→C, Q→D (btt's Q2C, D2C, Q2D)"),
    Metric(BLK, r"span", "s", "first to last event"),
    Metric(BLK, r"iops", "1/s", "per 1 s of completion time", "series"),
    Metric(BLK, r"bw", "B/s", "per 1 s of completion time", "series"),
    Metric(BLK, r"(?:d2c|q2c)_mean", "ns", "per 1 s of completion time", "series"),
    Metric(("btt",), r"[a-z0-9]+_(?:min|mean|max)", "ns", "btt's ALL MIN AVG MAX rows (Q2Q, Q2C, D2C, …)"),
    Metric(("btt",), r"[a-z0-9]+_n", "count", "its N column"),
    Metric(("btt",), r"(?:q2g|g2i|q2m|i2d|d2c)_share", "ratio", "Device Overhead: share of Q2C"),
    Metric(("btt",), r"(?:q_count|d_count|blk_min|blk_mean|blk_max|blk_total)", "count", "Device Merge Information"),
    Metric(("btt",), r"merge_ratio|q_plugged_share", "ratio", "merge ratio; share of Qs plugged"),
    Metric(("btt",), r"(?:q2q|d2d)_(?:nseeks|seek_mean|seek_median)", "count", "seek information (sectors)"),
    Metric(("btt",), r"(?:plugs|timer_unplugs|live_periods|active_at_q_mean|ios_per_unplug|ios_per_timer_unplug)",
           "count", "plugs, IOs per unplug, active periods"),
    Metric(("btt",), r"(?:active|inactive)_mean", "s", "I/O active period information"),
)


def lookup(kind: str, metric: str, unit: str, table: str = "summary") -> Metric | None:
    """The first entry that describes (kind, metric, unit) of ``table``, or None."""
    for m in METRICS:
        if m.table == table and m.matches(kind, metric, unit):
            return m
    return None


BEGIN, END = "<!-- dictionary:begin (python -m analysis dictionary) -->", "<!-- dictionary:end -->"


def markdown() -> str:
    """The README section, markers included."""
    out = [BEGIN, "## The processed tables: columns and metrics", "",
           "Generated by `python -m analysis dictionary` from `analysis/dictionary.py`; a test fails when a",
           "reader emits a metric this section lacks, or when the section is stale. Units are the `unit`",
           "column's: ns, s, B, B/s, 1/s, count, ratio. `<q>` in a name is a percentile (`p50`, `p99.9`).", "",
           "### Tables and columns", "", "| table | column | meaning |", "|---|---|---|"]
    out += [f"| `{t}` | {c} | {m} |" for t, c, m in TABLES]
    for table in ("summary", "series"):
        out += ["", f"### Metrics of `{table}`", "", "| kind | metric | unit | meaning |", "|---|---|---|---|"]
        for m in METRICS:
            if m.table == table:
                name = m.pattern.replace(Q, "p<q>").replace("|", "\\|")
                out.append(f"| {', '.join(m.kinds)} | `{name}` | {m.unit} | {m.meaning} |")
    return "\n".join(out + [END]) + "\n"


def readme_with_section(readme: str) -> str:
    """``readme`` with its dictionary section replaced by :func:`markdown` (appended if it has none)."""
    if BEGIN in readme and END in readme:
        a, b = readme.index(BEGIN), readme.index(END) + len(END)
        return readme[:a] + markdown().rstrip("\n") + readme[b:]
    return readme.rstrip("\n") + "\n\n" + markdown()


def readme_section(readme: str) -> str:
    """The dictionary section of ``readme`` (markers included, newline-terminated), or ""."""
    if BEGIN not in readme or END not in readme:
        return ""
    return readme[readme.index(BEGIN):readme.index(END) + len(END)] + "\n"
