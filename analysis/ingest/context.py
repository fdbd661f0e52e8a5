"""Run context: the keys a directory's ``run.json`` (``capture/``) or CBT ``benchmark_config.yaml`` (and
the OSD's ``ceph_settings.out``) give every file below it, checked to be safe as folder names."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from .base import IngestError
from .discovery import CBT_SETTINGS, COMPRESSED_SUFFIXES
from .keys import scheduler_keys

CBT_PARAMS = ("benchmark", "op_size", "iodepth", "mode", "readmode", "concurrent_ops",
              "concurrent_procs", "numjobs", "time", "pool_profile", "rbdname", "vol_size",
              "osd_ra", "iteration", "procs", "ctype")  # getput's process count and container type

def _text(path: Path) -> str:
    """A context file's text, decompressed when it is compressed (by content, as every reader here)."""
    from .compress import read_all
    return read_all(path).decode()


def _find_key(obj: Any, key: str) -> Any:
    if isinstance(obj, dict):
        if key in obj and not isinstance(obj[key], (dict, list)):
            return obj[key]
        for v in obj.values():
            r = _find_key(v, key)
            if r is not None:
                return r
    elif isinstance(obj, list):
        for v in obj:
            r = _find_key(v, key)
            if r is not None:
                return r
    return None


def cbt_context(path: Path, root: Path) -> dict[str, Any]:
    """Run keys from a CBT ``benchmark_config.yaml`` (CBT dumps ``{cluster: <benchmark config>}``)."""
    import yaml
    try:
        doc = yaml.safe_load(_text(path))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        mark = getattr(e, "problem_mark", None)
        raise IngestError(path, f"expected CBT benchmark_config.yaml: {e}",
                          line=mark.line + 1 if mark else None) from None
    if not isinstance(doc, dict):
        raise IngestError(path, "expected a YAML mapping (CBT benchmark_config.yaml)", line=1)
    bench: dict[str, Any] = {}
    for k in ("cluster", "benchmark"):  # CBT ≥ 2017 nests under 'cluster'; older under 'benchmark'
        if isinstance(doc.get(k), dict):
            bench.update(doc[k])
    if not bench:
        bench = doc
    ctx: dict[str, Any] = {k: bench[k] for k in CBT_PARAMS if k in bench and
                           not isinstance(bench[k], (dict, list))}
    if "iteration" in ctx:
        ctx["repeat"] = ctx.pop("iteration")
    q = _find_key(doc, "osd_op_queue")
    if q is not None:
        ctx["op_queue"] = q
    prof = _find_key(doc, "osd_mclock_profile")
    if prof is not None:
        ctx["profile"] = prof
    ctx.update(_cbt_place(path.parent, root))
    ctx["context_source"] = "cbt"
    return check_keys(ctx, path)


def _cbt_place(d: Path, root: Path) -> dict[str, str]:
    """``run`` (the folder below the root) and ``archive`` of a CBT id folder ``d``.  id-<hash> hashes the
    benchmark config: the same in every archive of one YAML, so the archive's own folder (the one holding
    results/, as a path below the ingested folder: two campaigns' `wpq/` archives ingested together stay
    apart) tells archives apart."""
    rel = d.relative_to(root)
    parts = rel.parts
    return {"run": str(rel) if d != root else ".",
            "archive": "/".join(parts[:parts.index("results")]) if "results" in parts[1:] else
            (root.name if not parts or parts[0] == "results" else parts[0])}


_ITERATION, _CBT_ID = re.compile(r"\d{8}"), re.compile(r"id-[0-9a-f]+")
#: getput's folders below CBT's id folder (cbt/benchmark/getput.py: ``osd_ra-%08d/op_size-%08d/procs-%08d/
#: <test>/<ctype>``)
_GETPUT_DIRS = (re.compile(r"osd_ra-(\d+)"), re.compile(r"op_size-(\d+)"), re.compile(r"procs-(\d+)"))


def cbt_layout_context(d: Path, root: Path) -> dict[str, Any]:
    """Run keys from a CBT archive's folder names, for a benchmark whose archive has no
    ``benchmark_config.yaml``: CBT 9d6480f's ``Getput.run`` never calls ``Benchmark.run``, the only code that
    writes it.  At ``results/<iteration>/id-<hash>``: ``repeat`` (the iteration), ``run`` and ``archive`` as
    :func:`cbt_context` gives them; at getput's folder ``osd_ra-N/op_size-N/procs-N/<test>/<ctype>`` right
    below an id folder: ``benchmark`` getput, ``osd_ra``, ``op_size``, ``procs`` and ``ctype`` (getput's
    ``test`` stays in the reader's meta, as with a benchmark_config.yaml).  ``{}`` for any other folder."""
    parts = d.relative_to(root).parts if d != root else ()
    if len(parts) >= 3 and parts[-3] == "results" and _ITERATION.fullmatch(parts[-2]) and \
            _CBT_ID.fullmatch(parts[-1]):
        return check_keys({"repeat": int(parts[-2]), **_cbt_place(d, root), "context_source": "cbt"}, d)
    if len(parts) >= 6 and _CBT_ID.fullmatch(parts[-6]):
        ms = [rx.fullmatch(x) for rx, x in zip(_GETPUT_DIRS, parts[-5:-2])]
        if all(ms):
            return {"benchmark": "getput", "osd_ra": int(ms[0].group(1)), "op_size": int(ms[1].group(1)),
                    "procs": int(ms[2].group(1)), "ctype": parts[-1]}
    return {}


#: run keys taken from ``run.json``'s ``osd_config.effective`` (what ``ceph config show osd.0`` said
#: the OSD ran), so notebooks select tuned arms by value, never by directory name (issue 10).
#: Units as Ceph prints them: ``scrub_cost`` in bytes, priorities and counts unitless.
TUNED_KEYS = {"osd_max_scrubs": "max_scrubs", "osd_scrub_cost": "scrub_cost",
              "osd_requested_scrub_priority": "requested_scrub_priority"}


def _config_value(v: Any) -> str | None:
    """Ceph prints ``5`` or ``5.000000`` for the same value: integral numbers become ``'5'``."""
    if v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    return str(int(f)) if f.is_integer() else repr(f)


#: run keys that name folders of the partitioned tables (``scale``: ``campaign=<c>/kind=<k>/``)
PATH_KEYS = ("campaign", "scenario", "arm", "op_queue", "io_scheduler", "profile", "repeat")


def check_keys(ctx: dict[str, Any], path: Path) -> dict[str, Any]:
    """``ctx`` unchanged when every key of :data:`PATH_KEYS` it has is safe as one folder name (no ``/``,
    ``\\``, NUL, not ``.`` or ``..``); else IngestError naming the file, the key and its value (a
    ``campaign`` of ``../../..`` must not write outside ``--out``)."""
    for k in PATH_KEYS:
        if k not in ctx or ctx[k] is None:
            continue
        v = str(ctx[k])
        if v in (".", "..") or any(c in v for c in "/\\\0"):
            raise IngestError(path, f"{k}: expected a name usable as one folder name (no '/', '\\', NUL, "
                                    f"not '.' or '..'), got {v!r}")
    return ctx


_CEPH_VERSION = re.compile(r"ceph version (\d+\.\d+\.\d+)\S*\s+\([0-9a-f]+\)\s+(\w+)")


def ceph_release_of(doc: dict[str, Any]) -> tuple[str, str] | None:
    """(release, version), e.g. ``("reef", "18.2.7")``, of a capture run.json: from the versions every
    daemon reported at bring-up (``cluster.versions.overall``; runs before issue 24 have only that), else
    its ``ceph_release`` key.  None when neither is there or the daemons ran more than one version."""
    vers = ((doc.get("cluster") or {}).get("versions") or {}).get("overall") \
        if isinstance(doc.get("cluster"), dict) else None
    if isinstance(vers, dict) and len(vers) == 1:
        m = _CEPH_VERSION.search(next(iter(vers)))
        if m:
            return m.group(2), m.group(1)
    if isinstance(doc.get("ceph_release"), str):
        return doc["ceph_release"], str((doc.get("cluster") or {}).get("ceph_version") or "")
    return None


def run_json_context(path: Path, root: Path) -> dict[str, Any]:
    """Run keys from a ``capture/`` run.json: its top-level scalars, the tuned OSD options
    (``TUNED_KEYS``), ``background_unfinished`` (comma-joined; empty when every background
    operation ended), ``redone`` (attempts thrown away as disturbed or failed before this one) and
    ``fio_t0_after_spawn_s`` (s from the timeline's t=0, fio's spawn, to fio's log t=0)."""
    try:
        doc = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise IngestError(path, f"expected a JSON object (run.json): {e}",
                          line=getattr(e, "lineno", None)) from None
    if not isinstance(doc, dict):
        raise IngestError(path, "expected a JSON object (run.json)", line=1)
    ctx = {k: v for k, v in doc.items() if not isinstance(v, (dict, list)) and v is not None}
    eff = (doc.get("osd_config") or {}).get("effective") if isinstance(doc.get("osd_config"), dict) else None
    if isinstance(eff, dict):
        for opt, key in TUNED_KEYS.items():
            if eff.get(opt) is not None:
                ctx[key] = _config_value(eff[opt])
    rel = ceph_release_of(doc)
    if rel is not None:
        ctx["ceph_release"], ctx["ceph_version"] = rel
    if isinstance(doc.get("background_unfinished"), list):
        ctx["background_unfinished"] = ",".join(map(str, doc["background_unfinished"]))
    if isinstance(doc.get("earlier_attempts"), list):
        ctx["redone"] = len(doc["earlier_attempts"])
    anc = doc.get("anchors")
    if isinstance(anc, dict) and all(isinstance(anc.get(k), (int, float))
                                     for k in ("fio_t0_unix", "fio_spawn_unix")):
        # the timeline's t=0 is fio's spawn; fio's own log t=0 is its job start, this much later
        ctx["fio_t0_after_spawn_s"] = round(anc["fio_t0_unix"] - anc["fio_spawn_unix"], 3)
    ctx.setdefault("run", str(path.parent.relative_to(root)) if path.parent != root else ".")
    ctx["context_source"] = "run.json"
    return check_keys(scheduler_keys(ctx), path)



def cbt_settings_context(path: Path) -> dict[str, Any]:
    """``op_queue`` (``osd_op_queue``) and ``profile`` (``osd_mclock_profile`` under mClock, else None) from CBT's
    ``ceph_settings.out[.<host>]``: the JSON of ``ceph daemon osd.0 config show`` (cbt/cluster/ceph.py), what
    the OSD ran, so it overrides what ``benchmark_config.yaml`` asked for."""
    try:
        doc = json.loads(_text(path))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise IngestError(path, f"expected the JSON of `ceph daemon osd.N config show` (CBT ceph_settings.out): "
                                f"{e}", line=getattr(e, "lineno", None)) from None
    if not isinstance(doc, dict):
        raise IngestError(path, "expected a JSON object of OSD options (CBT ceph_settings.out)", line=1)
    ctx: dict[str, Any] = {}
    if isinstance(doc.get("osd_op_queue"), str):
        ctx["op_queue"] = doc["osd_op_queue"]
        # a profile means nothing under another queue (Pacific lists osd_mclock_profile under wpq too)
        ctx["profile"] = doc.get("osd_mclock_profile") if doc["osd_op_queue"] == "mclock_scheduler" and \
            isinstance(doc.get("osd_mclock_profile"), str) else None
    return ctx


class Contexts:
    """Per-directory run context, inherited by sub-directories (nearest file wins per key)."""

    def __init__(self, root: Path):
        self.root = root
        self.cache: dict[Path, dict[str, Any]] = {}
        self.errors: list[tuple[Path, IngestError]] = []

    def get(self, d: Path) -> dict[str, Any]:
        if d in self.cache:
            return self.cache[d]
        parent = {} if d == self.root or self.root not in d.parents else self.get(d.parent)
        ctx = dict(parent)
        found = False
        for name, fn in (("benchmark_config.yaml", cbt_context), ("run.json", run_json_context)):
            p = next((q for q in [d / name] + [d / (name + suf) for suf in COMPRESSED_SUFFIXES
                                                if name != "run.json"] if q.is_file()), None)
            if p is not None:
                found = True
                try:
                    ctx.update(fn(p, self.root))
                except IngestError as e:
                    self.errors.append((p, e))
        if not found:  # a CBT archive without benchmark_config.yaml (getput's): keys from its folder names;
            try:       # what a config file above gave wins
                layout = cbt_layout_context(d, self.root) or bench_fio_context(d, self.root)
                ctx.update(layout if "repeat" in layout else {k: v for k, v in layout.items() if k not in ctx})
            except IngestError as e:
                self.errors.append((d, e))
        if "cbt" == ctx.get("context_source"):  # the OSD's own settings, beside CBT's config or below it
            for p in sorted(d.glob(CBT_SETTINGS + "*")):
                try:
                    ctx.update(check_keys(cbt_settings_context(p), p))
                except IngestError as e:
                    self.errors.append((p, e))
                break  # one OSD's view: every OSD runs the same op queue in a CBT cluster
        self.cache[d] = ctx
        return ctx


#: the run keys a fio JSON's workload (``fio_workload``) is checked against when run.json or CBT also gives
#: them: (the context's key, the workload's key).  ``target`` is not checked: our run.json names it (``xfs``),
#: fio records a path.
CHECKED_WORKLOAD = (("rw", "rw"), ("bs_B", "bs_B"), ("iodepth", "iodepth"), ("numjobs", "numjobs"),
                    ("ioengine", "ioengine"), ("direct", "direct"), ("rwmixread", "rwmixread"),
                    ("mode", "rw"), ("op_size", "bs_B"))


def _same(a: Any, b: Any) -> bool:
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a).strip().lower() == str(b).strip().lower()


def workload_context(ctx: dict[str, Any], keys: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The workload keys a file recorded (``keys``) that its run context (``ctx``: run.json, CBT) does not
    already give — the context stays authoritative — and where the two disagree, one line each
    (``iodepth: run.json 16, fio 32``)."""
    add = {k: v for k, v in keys.items() if ctx.get(k) is None}
    src = ctx.get("context_source") or "run context"
    bad = [f"{c}: {src} {ctx[c]}, fio {keys[w]}" for c, w in CHECKED_WORKLOAD
           if ctx.get(c) is not None and keys.get(w) is not None and not _same(ctx[c], keys[w])]
    return add, bad


#: fio-plot's bench_fio (bench_fio/benchlib/supporting.py ``generate_output_directory``, runfio.py ``run_fio``):
#: ``<output>/<basename(target)>/[<mode><rwmixread>/]<block_size>[/run-<N>]/<mode>-<iodepth>-<numjobs>.json``
_BF_RUN = re.compile(r"run-(\d+)")
_BF_BS = re.compile(r"\d+[kmgtKMGT]?")
_BF_MIXED = re.compile(r"(?:rw|readwrite|randrw|trimwrite|randtrimwrite)\d+")
_BF_FILE = re.compile(r"(?:read|write|randread|randwrite|rw|readwrite|randrw|trim|randtrim|trimwrite|"
                      r"randtrimwrite)(?:\d+)?-\d+-\d+\.json(?:\.gz|\.xz|\.bz2|\.zst)?")


def bench_fio_context(d: Path, root: Path) -> dict[str, Any]:
    """Run keys of a folder laid out by fio-plot's ``bench_fio``: ``target`` (the folder bench_fio named
    after the target) and ``repeat`` (``run-N``), when ``d`` holds ``<mode>-<iodepth>-<numjobs>.json``
    files and sits at ``<target>/[<mode><mix>/]<bs>[/run-N]`` at or below ``root``; else ``{}``.  The
    workload itself (mode, block size, depth, jobs) comes from each JSON's own options, never from names."""
    if not any(_BF_FILE.fullmatch(n) for n in _listing(d)):
        return {}
    m = _BF_RUN.fullmatch(d.name)
    bs_dir = d.parent if m else d
    if not _BF_BS.fullmatch(bs_dir.name):
        return {}
    tgt = bs_dir.parent.parent if _BF_MIXED.fullmatch(bs_dir.parent.name) else bs_dir.parent
    if tgt != root and root not in tgt.parents:
        return {}
    ctx: dict[str, Any] = {"target": tgt.name, "context_source": "bench_fio"}
    if m:
        ctx["repeat"] = int(m.group(1))
    return ctx


def _listing(d: Path) -> list[str]:
    try:
        return os.listdir(d)
    except OSError:
        return []
