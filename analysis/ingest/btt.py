"""btt's text report (kind ``btt``), blktrace 1.0–1.3 (``btt -i trace.bin``, default sections).

Sections are ``==================== <title> ====================`` lines.  Read here:

* ``All Devices`` (and any other section with the ``ALL MIN AVG MAX N`` table): rows such as ``Q2Q``,
  ``Q2G``, ``G2I``, ``Q2M``, ``I2D``, ``M2D``, ``D2C``, ``Q2C``, ``Q2Qdm``/``Q2Adm`` … in seconds →
  ``<name>_min``, ``<name>_mean``, ``<name>_max`` (ns; names lower-cased) and ``<name>_n`` (count);
  ``job`` = ``all`` for All Devices, else the device in the title.
* ``Device Overhead``: each column's percentage of Q2C → ``<col>_share`` (ratio) per device.
* ``Device Merge Information``: ``q_count``, ``d_count`` (count), ``merge_ratio`` (ratio),
  ``blk_min/blk_mean/blk_max`` (512 B sectors per D, count) and ``blk_total``.
* ``Device Q2Q Seek Information`` / ``Device D2D Seek Information``: ``q2q_nseeks``, ``q2q_seek_mean``,
  ``q2q_seek_median`` (sectors, count) and the same with ``d2d``.
* ``Plug Information``: ``plugs``, ``timer_unplugs`` (count), ``q_plugged_share`` (ratio).
* ``Active Requests At Q Information``: ``active_at_q_mean`` (count).
* ``I/O Active Period Information``: ``live_periods`` (count), ``active_mean``, ``inactive_mean`` (s).

Devices print as ``( 8,  0)`` → job ``"8,0"``; the ``Overall``/``Average``/``TOTAL`` rows are job
``all``.  ``ddir`` is always ``""`` (btt does not split directions).  Seconds become ns by × 10⁹,
rounded to the nearest ns (btt prints 9 decimals).  Sections not listed are kept as titles in
``meta["sections"]``.

Rules (issue 26): in a section read here every line under the column header is a device row, an
``Overall``/``Average``/``TOTAL`` row, a repeated header or a ``---`` rule, and its numbers parse — else
``IngestError`` with the line; a section title seen twice (two reports in one file) fails; a file with no
``All Devices`` table fails.  The file is ``partial`` (``meta["incomplete"]`` says why) when it ends
mid-line (the cut line is not read) or lacks one of :data:`SECTIONS`, which btt 1.0–1.3 always prints.
"""

from __future__ import annotations

import re
from pathlib import Path

from .base import IngestError, Parsed, check_line_lengths, summary_frame, text_lines

KIND = "btt"
_TITLE = re.compile(r"^=+ (?P<title>[^|=]+?) =+\s*$")
_SNIFF = re.compile(rb"\A\s*=+ All Devices =+\s*\n")
_NUM = r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
_ROW5 = re.compile(rf"^(?P<name>[A-Za-z0-9]+)\s+(?P<min>{_NUM})\s+(?P<avg>{_NUM})\s+(?P<max>{_NUM})\s+(?P<n>\d+)\s*$")
_DEV = re.compile(r"^\s*\(\s*(?P<maj>\d+),\s*(?P<min>\d+)\)\s*\|(?P<rest>.*)$")
_MORE_MODES = re.compile(r"^\s+\.\.\.\(\d+ more\)\s*$")  # seek sections: modes beyond the first, on their own line
_AGG = re.compile(r"^\s*(?P<label>Overall|Average|TOTAL|Total Sys)\s*\|(?P<rest>.*)$")


def sniff(head: bytes) -> bool:
    return _SNIFF.match(head) is not None


def _ns(x: str) -> float:
    """Seconds as btt prints them → ns (a value too large for a float raises ValueError: not btt's)."""
    f = float(x) * 1e9
    if not abs(f) < 1e300:
        raise ValueError(x)
    return float(round(f))


def _job(m: re.Match) -> str:
    return f"{m['maj']},{m['min']}" if "maj" in m.groupdict() else "all"


#: sections btt 1.0–1.3 always prints, in this order (``I/O Active Period`` and the histograms vary by version)
SECTIONS = ("All Devices", "Device Overhead", "Device Merge Information", "Device Q2Q Seek Information",
            "Device D2D Seek Information", "Plug Information", "Active Requests At Q Information")
#: sections whose device tables are read (:func:`_section_rows`)
_READ = frozenset(SECTIONS[1:]) | {"I/O Active Period Information"}


def _is_rule(ln: str) -> bool:
    """A ``-----`` / ``=====`` rule line, or one with ``|`` separators."""
    return bool(ln.strip()) and set(ln.strip()) <= set("-=| ")


def parse(path: str | Path, data: bytes) -> Parsed:
    path = Path(path)
    check_line_lengths(path, data, "btt output")
    lines, incomplete = text_lines(data)
    rows: list[tuple[str, str, str, float, str]] = []
    sections: list[str] = []
    title = None
    header: list[str] = []
    saw_all = False
    for no, ln in enumerate(lines, start=1):
        m = _TITLE.match(ln)
        if m:
            title = m["title"]
            if title in sections:
                raise IngestError(path, f"expected each btt section once, but '{title}' appears again (two btt "
                                        "reports in one file?)", line=no)
            sections.append(title)
            header = []
            continue
        if ln.startswith("#"):  # the activity data btt appends (``# Total System``…): not read
            title, header = None, []
            continue
        if title is None or not ln.strip():
            continue
        if ln.strip().startswith("ALL") and "MIN" in ln:
            header = ["ALL"]
            continue
        if header == ["ALL"]:
            r = _ROW5.match(ln.strip())
            try:
                ns = [_ns(r[k]) for k in ("min", "avg", "max")] if r else None
            except ValueError:
                r = None
            if r:
                job = "all" if title == "All Devices" else title.replace("Device", "").strip(" ():").replace(" ", "")
                name = r["name"].lower()
                rows += [(job, "", f"{name}_min", ns[0], "ns"), (job, "", f"{name}_mean", ns[1], "ns"),
                         (job, "", f"{name}_max", ns[2], "ns"), (job, "", f"{name}_n", float(r["n"]), "count")]
                saw_all = saw_all or title == "All Devices"
            elif not ln.startswith("---"):
                raise IngestError(path, "expected a btt row 'NAME MIN AVG MAX N' (seconds, seconds, seconds, "
                                        "count)", line=no)
            continue
        if "|" in ln and ("DEV" in ln.split("|")[0]):
            header = [c for c in re.split(r"\s{1,}", ln.split("|", 1)[1].replace("|", " ").strip()) if c]
            continue
        if title not in _READ or not header or _is_rule(ln) or _MORE_MODES.match(ln):
            continue
        dm = _DEV.match(ln) or _AGG.match(ln)
        vals = dm["rest"].replace("|", " ").split() if dm else []
        if dm and "maj" not in dm.groupdict() and not any(c.isdigit() for c in dm["rest"]):
            continue  # "Overall | NSEEKS MEAN ..." repeats the header above the aggregate row
        try:
            if not dm:
                raise ValueError
            _section_rows(rows, title, _job(dm), vals)
        except (ValueError, IndexError, OverflowError):
            raise IngestError(path, f"unexpected row in btt section '{title}': expected a device '(maj, min)' "
                                    f"or Overall/Average/TOTAL row with numbers under the header "
                                    f"{' '.join(header)!r}, got {ln.strip()!r:.120}", line=no) from None
    if not saw_all:
        raise IngestError(path, "expected btt's '==== All Devices ====' table (ALL MIN AVG MAX N)", line=1)
    missing = [t for t in SECTIONS if t not in sections]
    if missing:
        incomplete.append(f"sections btt always prints are missing: {', '.join(missing)} (output cut?)")
    meta = {"tool_version": "btt (blktrace 1.x)", "sections": sections}
    if incomplete:
        meta["incomplete"] = incomplete
    return Parsed(path=str(path), kind=KIND, meta=meta, summary=summary_frame(path.name, rows),
                  partial=bool(incomplete))


def _section_rows(rows: list, title: str, job: str, vals: list[str]) -> None:
    if title == "Device Overhead":
        if len(vals) < 5:
            raise IndexError(title)
        for col, v in zip(("q2g", "g2i", "q2m", "i2d", "d2c"), vals):
            rows.append((job, "", f"{col}_share", float(v.rstrip("%")) / 100.0, "ratio"))
    elif title == "Device Merge Information":
        q, d, ratio, bmin, bavg, bmax, tot = vals[:7]
        rows += [(job, "", "q_count", float(q), "count"), (job, "", "d_count", float(d), "count"),
                 (job, "", "merge_ratio", float(ratio), "ratio"), (job, "", "blk_min", float(bmin), "count"),
                 (job, "", "blk_mean", float(bavg), "count"), (job, "", "blk_max", float(bmax), "count"),
                 (job, "", "blk_total", float(tot), "count")]
    elif title in ("Device Q2Q Seek Information", "Device D2D Seek Information"):
        p = "q2q" if "Q2Q" in title else "d2d"
        rows += [(job, "", f"{p}_nseeks", float(vals[0]), "count"),
                 (job, "", f"{p}_seek_mean", float(vals[1]), "count"),
                 (job, "", f"{p}_seek_median", float(vals[2]), "count")]
    elif title == "Plug Information":
        if "%" in " ".join(vals):  # "1152( 137) | 0.107460846%"
            joined = " ".join(vals).replace("(", " ").replace(")", " ").split()
            rows += [(job, "", "plugs", float(joined[0]), "count"),
                     (job, "", "timer_unplugs", float(joined[1]), "count"),
                     (job, "", "q_plugged_share", float(joined[2].rstrip("%")) / 100.0, "ratio")]
        else:
            rows += [(job, "", "ios_per_unplug", float(vals[0]), "count"),
                     (job, "", "ios_per_timer_unplug", float(vals[1]), "count")]
    elif title == "Active Requests At Q Information":
        rows.append((job, "", "active_at_q_mean", float(vals[0]), "count"))
    elif title == "I/O Active Period Information":
        rows += [(job, "", "live_periods", float(vals[0]), "count"),
                 (job, "", "active_mean", float(vals[1]), "s"), (job, "", "inactive_mean", float(vals[2]), "s")]
