"""fio ``--output-format=json`` / ``json+`` reader, fio 2.1 to 3.3x.

Schema drift handled here:

* fio 2.x prints latencies in µs under ``slat``/``clat``/``lat``; fio ≥ 3.0 prints ns under
  ``slat_ns``/``clat_ns``/``lat_ns``.  Both become ``*_mean``/``*_stddev``/``*_min``/``*_max`` in ns.
* fio 2.x ``bw`` is KiB/s (kb_base 1024) and ``io_bytes`` is KiB; fio ≥ 3.0 adds ``bw_bytes``/``io_kbytes``
  and makes ``io_bytes`` bytes.  Bandwidth becomes B/s.
* Text before the opening ``{`` (error messages, ``terminating on signal``, client/server ``hostname=``
  banners, ``Jobs:`` progress, a stray ``>``) is skipped and kept in ``meta["preamble"]`` with its length in
  bytes (``json_offset``); trailing text is counted.  Several documents in one file (runs appended) are
  each read (``meta["documents"]``); one that does not decode fails the file at its line.
* ``client_stats`` (``fio --client``) instead of ``jobs``; jobs are named ``<hostname>/<jobname>``.
* Repeated job names (``numjobs`` without ``group_reporting``) become ``name#0``, ``name#1``, …
* Duplicate JSON keys (fio 2.1 pads percentile objects with ``"0.00" : 0``) are counted in
  ``meta["duplicate_keys"]``; the padding is not a percentile and is dropped.  A ``filename`` or
  ``directory`` given several times (fio 3.34 repeats it in ``job options``) keeps every value, joined
  with ``:`` (:data:`JOINED_OPTIONS`).
* json+ ``bins``: fio 3.x maps bin value (ns) → count; fio 2.x maps bin *index* → count with
  ``FIO_IO_U_PLAT_*`` constants.  Percentiles are recomputed from the bins exactly as fio does and the
  largest relative difference to the printed ones is recorded in ``meta["percentile_check"]``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .base import IngestError, Parsed, json_number, line_of_offset, summary_frame
from .fio_bins import percentiles_from_bins, plat_idx_to_val
from .fio_workload import workload
from ..schema import FIELD_MAX_BYTES

KIND = "fio-json"
RUN_FOLDER = True  # parse() takes the ingest's RunFolder (``folder=``): one parse for the JSON and its logs
_DDIRS = ("read", "write", "trim", "mixed")  # mixed: unified_rw_reporting=1 (fio ≥ 2.1)
_LAT_KINDS = ("slat", "clat", "lat")
_START = re.compile(rb'\{\s*"fio version"')
_START_TEXT = re.compile(r'\{\s*"fio version"')
_ALL_CLIENTS = re.compile(r"^All clients(@\d+)?$")


def sniff(head: bytes) -> bool:
    """fio JSON: an object whose first key is ``"fio version"``, possibly after fio's own text.

    Text that quotes fio JSON inside a Markdown code fence (a README) is not fio output.
    """
    if b'"fio version"' not in head:  # what _START needs: a fast no for the other formats
        return False
    m = _START.search(head)
    return m is not None and b"```" not in head[:m.start()]


class _TooLong(Exception):
    """A JSON key or string longer than :data:`~.keys.FIELD_MAX_BYTES` (its key, its length in bytes)."""


def _long(text: str) -> bool:
    return len(text) > FIELD_MAX_BYTES // 4 and len(text.encode("utf-8", "surrogatepass")) > FIELD_MAX_BYTES


def _long_in(items: list[Any]) -> bool:
    """Whether a list (lists in it too; objects were checked as they were built) holds a string that is too long."""
    stack = [items]
    while stack:
        for x in stack.pop():
            if type(x) is str and _long(x):
                return True
            if type(x) is list:
                stack.append(x)
    return False


#: options fio repeats in ``job options``, once per value, when a job file gives them more than once (fio
#: issue #1571, fio-3.34: one ``"filename"`` per device): their values joined with ``:``, the separator
#: fio's own ``filename=a:b`` takes, so that the target names every file the job ran on, not the last
JOINED_OPTIONS = ("filename", "directory")


def _pairs_hook(counter: list[int]):
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        d: dict[str, Any] = {}
        for k, v in pairs:
            if _long(k) or (type(v) is str and _long(v)) or (type(v) is list and _long_in(v)):
                raise _TooLong(k)  # a 200 MB job name: refused before the frames and meta copy it
            if k in d:
                counter[0] += 1
                if k in JOINED_OPTIONS and type(v) is str and type(d[k]) is str:
                    v = f"{d[k]}:{v}"
            d[k] = v
        return d
    return hook


#: byte-order marks and what they say: UTF-8's is skipped, the others' text is not UTF-8
BOM_UTF8 = b"\xef\xbb\xbf"
#: a ``\\u`` escape of a surrogate in JSON text: a lone one decodes to no character
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _lone_surrogate(doc: Any) -> str | None:
    """A string of ``doc`` holding a lone surrogate (a ``\\udcff`` escape: no character, not UTF-8), or None."""
    stack = [doc]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            for k, v in x.items():
                if _SURROGATE.search(k):
                    return k
                stack.append(v)
        elif isinstance(x, list):
            stack.extend(x)
        elif isinstance(x, str) and _SURROGATE.search(x):
            return x
    return None


def load(path: Path, data: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    """Decode the (first) JSON document inside a fio output; returns (document, meta about the wrapping)."""
    docs, wrap = load_all(path, data)
    return docs[0], wrap


def load_all(path: Path, data: bytes) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every fio JSON document in a fio output, in order (a script that appended one run after another), and
    meta about the wrapping: the text before the first (``preamble``, its byte offset ``json_offset``),
    the documents' byte offsets and lines, the text after the last.  A document that does not decode is an
    IngestError at its line: none is dropped."""
    m = _START.search(data)
    if m is None:
        raise IngestError(path, 'expected a fio JSON object starting with {"fio version" ...', line=1)
    start = m.start()
    bom = data.startswith(BOM_UTF8)  # Windows tools write one: not text before the JSON
    try:
        text = data[start:].decode("utf-8")
    except UnicodeDecodeError as e:
        raise IngestError(path, f"expected UTF-8 JSON text ({e.reason})",
                          line=line_of_offset(data, start + e.start)) from None
    dup = [0]
    decoder = json.JSONDecoder(object_pairs_hook=_pairs_hook(dup))
    docs: list[dict[str, Any]] = []
    seen: dict[str, int] = {}  # a document's text → its number
    where: list[dict[str, int]] = []
    pos, end = 0, 0
    while True:
        first_line = line_of_offset(data, start + len(text[:pos].encode("utf-8")))
        try:
            doc, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            what = "fio JSON" if not docs else f"fio JSON document {len(docs) + 1} of this file"
            raise IngestError(path, f"malformed or truncated {what}: {e.msg}",
                              line=line_of_offset(data, start) + e.lineno - 1) from None
        except RecursionError:
            raise IngestError(path, "fio JSON nested too deeply", line=first_line) from None
        except _TooLong as e:
            at = re.compile(rb'[^"]{%d}' % (FIELD_MAX_BYTES // 4)).search(data, start)  # where the long string is
            raise IngestError(path, f"a JSON string over {FIELD_MAX_BYTES >> 10} KiB (at key "
                                    f"{str(e.args[0])[:40]!r}): expected a fio job name or option value far "
                                    "shorter", line=line_of_offset(data, at.start()) if at else first_line) from None
        if not isinstance(doc, dict):
            raise IngestError(path, "expected a JSON object at top level", line=first_line)
        if _SURROGATE_ESCAPE.search(text, pos, end) and (bad := _lone_surrogate(doc)) is not None:
            raise IngestError(path, f"expected UTF-8 text: a \\u escape that is no character (a lone surrogate) "
                                    f"in {bad[:40].encode('utf-8', 'backslashreplace').decode()!r}", line=first_line)
        if text[pos:end] in seen:  # the same run twice is a file appended to itself, not a second run
            raise IngestError(path, f"fio JSON document {len(docs) + 1} of this file is the same as document "
                                    f"{seen[text[pos:end]]} (a file appended to itself?): expected one run's "
                                    "output, or different runs", line=first_line)
        seen[text[pos:end]] = len(docs) + 1
        docs.append(doc)
        where.append({"line": first_line, "offset": start + len(text[:pos].encode("utf-8"))})
        nxt = _START_TEXT.search(text, end)
        if nxt is None:
            break
        pos = nxt.start()
    preamble = data[len(BOM_UTF8) if bom else 0:start].decode("utf-8", "replace")
    wrap = {
        "preamble": preamble.strip()[:2000] or None,
        "preamble_lines": preamble.count("\n"),
        "json_offset": start,  # bytes before the JSON (fio's own messages, a stray character)
        "trailing_chars": len(text[end:].strip()),
        "duplicate_keys": dup[0],
        "documents": len(docs),
    }
    if bom:
        wrap["bom"] = "utf-8"
    if len(docs) > 1:
        wrap["document_at"] = where
    return docs, wrap


_num = json_number  # a JSON value as float, None when not a number (base.json_number)


def _pct_name(key: str) -> str | None:
    """fio percentile key ("99.500000") → metric suffix ("p99.5"); None for padding/garbage."""
    try:
        q = float(key)
    except ValueError:
        return None
    if not (0.0 < q <= 100.0):
        return None
    return "p" + format(q, "g")


def unique_names(names: list[str]) -> list[str]:
    """Repeated job names (``numjobs`` without ``group_reporting``) as ``name#0``, ``name#1`` …, in order; the
    others as they are (the JSON, text and job-file readers name jobs alike)."""
    counts: dict[str, int] = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    seen: dict[str, int] = {}
    out = []
    for n in names:
        if counts[n] > 1:
            out.append(f"{n}#{seen.get(n, 0)}")
            seen[n] = seen.get(n, 0) + 1
        else:
            out.append(n)
    return out


def _job_names(entries: list[dict[str, Any]], client: bool) -> list[str]:
    names = []
    for e in entries:
        n = str(e.get("jobname", ""))
        if client and e.get("hostname") and n != "All clients":
            n = f"{e['hostname']}/{n}"
        names.append(n)
    return unique_names(names)


def _bins_to_arrays(bins: dict[str, Any], scale_ns: float) -> tuple[np.ndarray, np.ndarray] | None:
    """json+ bins → (bin values in ns, counts) sorted by value; None if not understood."""
    if not isinstance(bins, dict) or not bins:
        return None
    if "FIO_IO_U_PLAT_NR" in bins:  # fio 2.x: index → count
        idx, cnt = [], []
        for k, v in bins.items():
            if k.startswith("FIO_"):
                continue
            if not k.isdigit() or _num(v) is None:
                return None
            idx.append(int(k))
            cnt.append(_num(v))
        if not idx:
            return None
        vals = plat_idx_to_val(np.asarray(idx, dtype=np.int64)).astype(np.float64) * scale_ns
        c = np.asarray(cnt, dtype=np.float64)
    else:  # fio 3.x: value → count
        try:
            vals = np.asarray([float(k) for k in bins.keys()], dtype=np.float64) * scale_ns
            c = np.asarray([float(v) for v in bins.values()], dtype=np.float64)
        except (TypeError, ValueError):
            return None
    order = np.argsort(vals, kind="stable")
    return vals[order], c[order]


#: fio prints a direction's ``iops`` as it computes it, ``total_ios`` × 1000 / ``runtime`` (ms): to 6 decimals
#: (fio 2.17 to 3.39 in the corpus and data/raw: at most 3e-7 off, relative), as an integer by old fio (2.1.4:
#: up to 1 IOPS off).  Beyond 2 % and that resolution the three numbers cannot all be fio's.
IDENTITY_TOLERANCE = 0.02


def _identity_within(c: dict[str, Any]) -> bool:
    """Whether one direction's ``iops`` is ``total_ios`` / ``runtime`` to :data:`IDENTITY_TOLERANCE` or to
    the resolution fio printed it at (1 IOPS for an integer, as fio 2.x truncated it)."""
    if "iops" not in c:
        return abs(c["ios_over_iops_x_runtime"] - 1.0) < IDENTITY_TOLERANCE
    implied = c["total_ios"] * 1000.0 / c["runtime_ms"]
    resolution = 1.0 if float(c["iops"]).is_integer() else 1e-6
    return abs(c["iops"] - implied) <= max(IDENTITY_TOLERANCE * implied, resolution)


def _identity_summary(checks: list[dict[str, Any]]) -> dict[str, Any]:
    """fio's own summary must satisfy total_ios ≈ iops × runtime; report the worst deviation, and the worst
    direction beyond the tolerance (``failed``: job, ddir, the numbers; the ingest fails the file on it)."""
    if not checks:
        return {"n": 0}
    dev = [abs(c["ios_over_iops_x_runtime"] - 1.0) for c in checks]
    worst = checks[int(np.argmax(dev))]
    bad = [(d, c) for d, c in zip(dev, checks) if not _identity_within(c)]
    out = {"n": len(checks), "max_abs_dev": float(max(dev)), "worst": worst, "ok": not bad}
    if bad:
        out["failed"] = max(bad, key=lambda b: b[0])[1]
    return out


_ENTRIES = {False: re.compile(r'"jobs"\s*:\s*\['), True: re.compile(r'"client_stats"\s*:\s*\[')}


def _iops_line(data: bytes, wrap: dict[str, Any], c: dict[str, Any], client: bool) -> int | None:
    """The line of the ``"iops"`` of check ``c``'s job (``entry``, in document ``document``) and direction in
    the file's bytes, else the job's first line; None when the job cannot be found."""
    k, i = c.get("document", 0), c.get("entry")
    start = wrap["document_at"][k]["offset"] if "document_at" in wrap else wrap["json_offset"]
    try:
        text = data[start:].decode("utf-8")
    except UnicodeDecodeError:
        return None
    m = _ENTRIES[client].search(text)
    if m is None or i is None:
        return None
    dec, pos, seen = json.JSONDecoder(), m.end(), -1
    try:
        while True:
            pos = len(text) - len(text[pos:].lstrip(" \t\r\n,"))
            obj, end = dec.raw_decode(text, pos)
            seen += isinstance(obj, dict)
            if seen == i:
                break
            pos = end
    except ValueError:
        return None
    line = line_of_offset(data, start) + text.count("\n", 0, pos)
    d = re.compile(r'"%s"\s*:\s*\{' % re.escape(c["ddir"])).search(text, pos, end)
    if d is None:
        return line
    ddir_end = dec.raw_decode(text, d.end() - 1)[1]
    v = re.compile(r'"iops"\s*:').search(text, d.end(), ddir_end)
    return line_of_offset(data, start) + text.count("\n", 0, v.start() if v else d.start())


def parse(path: Path, data: bytes, folder: Any = None) -> Parsed:
    """One fio JSON output (fio 2.x-3.x ``--output-format=json``/``json+``, or a client/server run's).
    ``folder``: the ingest's :class:`~analysis.ingest.runfolder.RunFolder` of its directory (not imported
    here: it imports this module), which parses it once for its own turn and for the logs beside it."""
    if folder is not None and folder.holds(path):
        return folder.fio_json(path, data)
    return decode(path, data)


@dataclass
class _Found:
    """What :func:`decode` gathers over the jobs: summary rows (job, ddir, metric, value, unit) and the
    facts its ``meta`` reports."""
    rows: list[tuple[str, str, str, float, str]] = field(default_factory=list)
    job_options: dict[str, Any] = field(default_factory=dict)
    groups: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    pct_checks: list[dict[str, Any]] = field(default_factory=list)
    identity: list[dict[str, Any]] = field(default_factory=list)
    units_seen: set[str] = field(default_factory=set)
    unmeasured: set[str] = field(default_factory=set)
    is_plus: bool = False


def decode(path: Path, data: bytes) -> Parsed:
    """``data``, the content of the fio JSON output ``path``, parsed (every call decodes it anew).  A file
    holding several fio JSON documents (runs appended one after another) gives each its own reporting
    groups (``fio_group`` ``<document>:<groupid>``) and its jobs named ``<job>@<document>``."""
    docs, wrap = load_all(path, data)
    source = str(path)
    doc = docs[0]
    found = _Found()
    names: list[str] = []
    client = False
    for k, d in enumerate(docs):
        where = wrap["document_at"][k]["line"] if len(docs) > 1 else wrap["preamble_lines"] + 1
        c = "client_stats" in d and not d.get("jobs")
        client = client or c
        entries = d.get("client_stats") if c else d.get("jobs")
        if not isinstance(entries, list):
            raise IngestError(path, 'expected a "jobs" (or "client_stats") array in fio JSON', line=where)
        entries = [e for e in entries if isinstance(e, dict)]
        doc_names = _job_names(entries, c)
        if len(docs) > 1:
            doc_names = [f"{n}@{k + 1}" for n in doc_names]
        names += doc_names
        n0 = len(found.identity)
        _jobs(found, doc_names, entries, f"{k + 1}:" if len(docs) > 1 else "")
        for c in found.identity[n0:]:
            c["document"] = k
    if len(docs) > 1:
        versions = sorted({str(d.get("fio version")) for d in docs})
        wrap["versions"] = versions
    meta = _meta(doc, wrap, found, names, client)
    bad = meta["identity_check"].get("failed")
    if bad is not None:  # where the ingest's message points: the job's "iops" line
        bad["line"] = _iops_line(data, wrap, bad, client)
    return Parsed(path=source, kind=KIND, meta=meta, summary=summary_frame(source, found.rows),
                  partial=meta["interrupted"] or bool(found.errors))


def _jobs(found: _Found, names: list[str], entries: list[dict[str, Any]], group_prefix: str) -> None:
    """One document's jobs into ``found``: options, reporting groups, errors, and each direction's rows."""
    for i, (name, e) in enumerate(zip(names, entries)):
        n0 = len(found.identity)
        if isinstance(e.get("job options"), dict):
            found.job_options[name] = e["job options"]
        gid = _num(e.get("groupid"))
        if gid is not None and not _ALL_CLIENTS.match(name):
            found.groups[name] = f"{group_prefix}{int(gid)}" if group_prefix else int(gid)
        err = _num(e.get("error"))
        if err:
            found.errors[name] = int(err)
        for ddir in _DDIRS:
            if isinstance(e.get(ddir), dict):
                _direction(found, name, ddir, e[ddir])
        for c in found.identity[n0:]:
            c["entry"] = i  # the job's place among the document's job objects (its line, when it fails)


def _direction(found: _Found, name: str, ddir: str, d: dict[str, Any]) -> None:
    """The rows of one job's direction (``read``/``write``/``trim``): IOPS (1/s), bandwidth (B/s), bytes,
    IOs, runtime (s) and each latency kind (ns); nothing for a direction the job did not use."""
    total_ios = _num(d.get("total_ios"))
    io_bytes = _num(d.get("io_bytes"))
    iops = _num(d.get("iops"))
    if not ((total_ios or 0) > 0 or (io_bytes or 0) > 0 or (iops or 0) > 0):
        return  # direction not used by this job
    rows = found.rows
    v3 = any(k in d for k in ("clat_ns", "lat_ns", "slat_ns", "bw_bytes", "io_kbytes"))
    if iops is not None:
        rows.append((name, ddir, "iops", iops, "1/s"))
    bw_bytes = _num(d.get("bw_bytes"))
    bw_kib = _num(d.get("bw"))
    if bw_bytes is not None:
        rows.append((name, ddir, "bw", bw_bytes, "B/s"))
    elif bw_kib is not None:
        rows.append((name, ddir, "bw", bw_kib * 1024.0, "B/s"))
    if "io_kbytes" in d or v3:
        if io_bytes is not None:
            rows.append((name, ddir, "io_bytes", io_bytes, "B"))
    elif io_bytes is not None:  # fio 2.x: io_bytes is KiB
        rows.append((name, ddir, "io_bytes", io_bytes * 1024.0, "B"))
    if total_ios is not None:
        rows.append((name, ddir, "total_ios", total_ios, "count"))
    rt = _num(d.get("runtime"))
    if rt is not None:
        rows.append((name, ddir, "runtime", rt / 1000.0, "s"))
    if rt and iops is not None and total_ios is not None and iops > 0:
        found.identity.append({"job": name, "ddir": ddir,
                               "ios_over_iops_x_runtime": total_ios / (iops * rt / 1000.0),
                               "total_ios": total_ios, "iops": iops, "runtime_ms": rt})
    for lk in _LAT_KINDS:
        if isinstance(d.get(lk + "_ns"), dict):
            found.units_seen.add("ns")
            _latency(found, name, ddir, lk, d[lk + "_ns"], 1.0)
        elif isinstance(d.get(lk), dict):
            found.units_seen.add("µs")
            _latency(found, name, ddir, lk, d[lk], 1000.0)  # fio 2.x: µs


def _latency(found: _Found, name: str, ddir: str, lk: str, st: dict[str, Any], scale: float) -> None:
    """One latency kind's rows (``lk``: slat/clat/lat; ``scale``: ns per unit fio printed): moments,
    samples and the printed percentiles, checked against the percentiles of its bins (json+)."""
    n_samples = _num(st.get("N"))
    if all(not _num(st.get(k)) for k in ("min", "max", "mean")) and not n_samples:
        found.unmeasured.add(lk)  # gtod_reduce / disable_*lat: fio prints zeros, not a latency
        return
    rows = found.rows
    for stat in ("mean", "stddev", "min", "max"):
        v = _num(st.get(stat))
        if v is not None:
            rows.append((name, ddir, f"{lk}_{stat}", v * scale, "ns"))
    if n_samples is not None:
        rows.append((name, ddir, f"{lk}_samples", n_samples, "count"))
    printed: dict[float, float] = {}
    pct = st.get("percentile")
    if isinstance(pct, dict):
        for k, v in pct.items():
            pn, fv = _pct_name(k), _num(v)
            if pn is None or fv is None:
                continue
            rows.append((name, ddir, f"{lk}_{pn}", fv * scale, "ns"))
            printed[float(k)] = fv * scale
    arrs = _bins_to_arrays(st.get("bins"), scale)
    if arrs is None:
        return
    found.is_plus = True
    vals, cnt = arrs
    if printed and cnt.sum() > 0:
        qs = np.asarray(sorted(printed))
        rec = percentiles_from_bins(vals, cnt, qs)
        pr = np.asarray([printed[q] for q in qs])
        rel = np.abs(rec - pr) / np.where(pr == 0, 1.0, np.abs(pr))
        found.pct_checks.append({
            "job": name, "ddir": ddir, "lat": lk, "n": int(cnt.sum()),
            "max_rel_diff": float(rel.max()),
            "worst_percentile": float(qs[int(rel.argmax())]),
        })


def _ran(found: _Found) -> dict[str, dict[str, Any]]:
    """Per job what it did, for :func:`~.fio_workload.time_based_from_io`: ``io_bytes`` (B, its directions
    summed), ``runtime_s`` (the longest direction's) and ``error`` (fio's error code)."""
    out: dict[str, dict[str, Any]] = {}
    for job, _ddir, metric, value, _unit in found.rows:
        if metric == "io_bytes":
            r = out.setdefault(job, {})
            r["io_bytes"] = r.get("io_bytes", 0.0) + value
        elif metric == "runtime":
            r = out.setdefault(job, {})
            r["runtime_s"] = max(r.get("runtime_s", 0.0), value)
    for job, err in found.errors.items():
        out.setdefault(job, {})["error"] = err
    return out


def _meta(doc: dict[str, Any], wrap: dict[str, Any], found: _Found, names: list[str], client: bool) -> dict[str, Any]:
    """The file's ``meta``: version, options, the workload's run keys, the checks and whether fio was
    interrupted (``terminating on signal`` in the text before the JSON)."""
    version = doc.get("fio version")
    gopts = doc.get("global options") if isinstance(doc.get("global options"), dict) else {}
    job_options = found.job_options
    first_opts = next(iter(job_options.values()), {}) if job_options else {}

    def opt(key: str) -> Any:
        return first_opts.get(key, gopts.get(key)) if isinstance(first_opts, dict) else gopts.get(key)

    meta: dict[str, Any] = {
        "tool": "fio",
        "tool_version": version,
        "format": "json+" if found.is_plus else "json",
        "timestamp": doc.get("timestamp"),
        "timestamp_ms": doc.get("timestamp_ms"),
        "time": doc.get("time"),
        "global_options": gopts,
        "job_options": job_options,
        "jobs": names,
        # each job's reporting group (fio's ``groupid``: a new one at every ``stonewall``/``new_group``); jobs
        # of one group ran together, jobs of different groups one after another
        "groups": found.groups,
        "client_server": client,
        "rw": opt("rw") or opt("readwrite"),
        "block_size": opt("bs") or opt("blocksize"),
        "iodepth": opt("iodepth"),
        "ioengine": opt("ioengine"),
        "numjobs": opt("numjobs"),
        "job_errors": found.errors,
        "latency_keys_unit": sorted(found.units_seen),
        "latency_not_measured": sorted(found.unmeasured),
        "identity_check": _identity_summary(found.identity),
        # the run keys of the workload fio recorded (fio_workload): the ingest adds them to the file's rows
        "workload": workload(gopts, job_options, names, version, groups=found.groups, ran=_ran(found)),
        **wrap,
    }
    if found.pct_checks:
        worst = max(found.pct_checks, key=lambda c: c["max_rel_diff"])
        meta["percentile_check"] = {"max_rel_diff": worst["max_rel_diff"], "checks": found.pct_checks}
    meta["interrupted"] = bool(wrap["preamble"] and "terminating on signal" in wrap["preamble"])
    return meta
