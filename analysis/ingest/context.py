"""Run context: the keys a directory's ``run.json`` (``capture/``) or CBT ``benchmark_config.yaml`` (and
the OSD's ``ceph_settings.out``) give every file below it, checked to be safe as folder names; below a CBT
YAML with a ``workloads:`` block, each test folder's keys (:class:`CbtWorkloads`) and each file's volume
(:meth:`Contexts.for_file`)."""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path
from typing import Any

from .base import IngestError
from .discovery import CBT_SETTINGS, COMPRESSED_SUFFIXES, NAME_MAX, shown, table_path
from .fio_workload import size_bytes
from ..schema import KEY_COLUMNS, key_problem, scheduler_keys

CBT_PARAMS = ("benchmark", "op_size", "iodepth", "mode", "readmode", "concurrent_ops",
              "concurrent_procs", "numjobs", "time", "pool_profile", "rbdname", "vol_size",
              "osd_ra", "iteration", "procs", "ctype")  # getput's process count and container type

def _text(path: Path) -> str:
    """A context file's text, decompressed when it is compressed (by content, as every reader here)."""
    from .compress import read_all
    return read_all(path).decode()


#: bounds on reading a CBT YAML: nesting depth, and nodes counted with every alias expanded (a CBT
#: benchmark_config.yaml has a few hundred; a 479-byte "billion laughs" file expands to 10^9)
YAML_MAX_DEPTH = 64
YAML_MAX_NODES = 100_000


def _yaml_children(node: Any) -> list[Any]:
    import yaml
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for kv in node.value for n in kv]
    return []


def _check_expansion(root: Any) -> None:
    """``yaml.MarkedYAMLError`` when the node graph below ``root``, aliases expanded, exceeds
    :data:`YAML_MAX_NODES` nodes or is recursive (an alias inside its own anchor): counted once per node
    (memoised), so a bomb is refused in time linear in the file."""
    import yaml
    size: dict[int, int] = {}
    on_path: set[int] = set()
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            size[key] = 1 + sum(size[id(c)] for c in _yaml_children(node))
            if size[key] > YAML_MAX_NODES:
                raise yaml.MarkedYAMLError(problem=f"more than {YAML_MAX_NODES} nodes with its aliases expanded "
                                                   "(an alias bomb?): not a CBT YAML", problem_mark=node.start_mark)
            continue
        if key in size:
            continue
        on_path.add(key)
        stack.append((node, True))
        for c in _yaml_children(node):
            if id(c) in on_path:
                raise yaml.MarkedYAMLError(problem="an alias inside its own anchor (a recursive document): "
                                                   "not a CBT YAML", problem_mark=c.start_mark)
            if id(c) not in size:
                stack.append((c, False))


@functools.lru_cache(maxsize=None)
def _bounded_loader() -> type:
    """PyYAML's SafeLoader, refusing nesting deeper than :data:`YAML_MAX_DEPTH` as it composes."""
    import yaml

    class BoundedLoader(yaml.SafeLoader):
        _depth = 0

        def compose_node(self, parent, index):
            self._depth += 1
            try:
                if self._depth > YAML_MAX_DEPTH:
                    raise yaml.MarkedYAMLError(problem=f"nested deeper than {YAML_MAX_DEPTH} levels: not a CBT YAML",
                                               problem_mark=self.peek_event().start_mark)
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1
    return BoundedLoader


def load_cbt_yaml(path: Path) -> tuple[Any, Any]:
    """(document, its root node) of a CBT YAML, safe-loaded within :data:`YAML_MAX_DEPTH` and
    :data:`YAML_MAX_NODES`; IngestError (file, line) for YAML that is malformed or beyond them."""
    import yaml
    try:
        loader = _bounded_loader()(_text(path))
        try:
            node = loader.get_single_node()
            if node is None:
                return None, None
            _check_expansion(node)
            return loader.construct_document(node), node
        finally:
            loader.dispose()
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError) as e:
        mark = getattr(e, "problem_mark", None)
        raise IngestError(path, f"expected CBT benchmark_config.yaml: {e}",
                          line=mark.line + 1 if mark else None) from None


def _node_line(node: Any, *keys: str) -> int | None:
    """1-based line of the deepest of ``keys`` (a path of mapping keys) found below ``node``."""
    import yaml
    line = None
    for k in keys:
        if not isinstance(node, yaml.MappingNode):
            break
        hit = next(((kn, vn) for kn, vn in node.value if isinstance(kn, yaml.ScalarNode) and kn.value == k), None)
        if hit is None:
            break
        line, node = hit[0].start_mark.line + 1, hit[1]
    return line


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
    return cbt_config(path, root)[0]


def cbt_config(path: Path, root: Path) -> tuple[dict[str, Any], "CbtWorkloads | None"]:
    """:func:`cbt_context`'s keys and the YAML's ``workloads:`` block (:class:`CbtWorkloads`), if any.  With
    one, the keys a test sets (``mode``, ``op_size``, ``iodepth``, ``numjobs``, ``total_iodepth``) are None at
    the id folder: each test folder below sets its own (:meth:`CbtWorkloads.keys`); a file right in the id
    folder is CBT 9d6480f's copy of its last test only (``LibrbdFio.run_workloads`` reassigns ``run_dir``
    per test, ``run()`` then syncs ``{run_dir}/*``), which test cannot be known from names: fio's own
    options give its workload."""
    doc, node = load_cbt_yaml(path)
    if not isinstance(doc, dict):
        raise IngestError(path, "expected a YAML mapping (CBT benchmark_config.yaml)", line=1)
    bench: dict[str, Any] = {}
    top = None
    for k in ("cluster", "benchmark"):  # CBT ≥ 2017 nests under 'cluster'; older under 'benchmark'
        if isinstance(doc.get(k), dict):
            bench.update(doc[k])
            top = k
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
    spec = CbtWorkloads.of(path, bench, node, top)
    if spec is not None:
        ctx.update(dict.fromkeys(TEST_KEYS))
    return check_keys(ctx, path), spec


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


#: what one test of a ``workloads:`` block sets (the id folder leaves them to its tests)
TEST_KEYS = ("workload", "client_host", "mode", "op_size", "numjobs", "total_iodepth", "iodepth")
#: librbdfio's defaults where neither the workload nor the benchmark sets a value (ceph/cbt, the workloads
#: module after 9d6480f: command/fio_command.py ``options.get("mode", "write")``, ``options.get("numjobs",
#: "1")``, ``options.get("op_size", "4194304")``; workloads/workload.py ``unique_options.get(iodepth_key, 16)``,
#: ``volumes_per_client`` 1)
WORKLOAD_DEFAULTS = {"mode": "write", "numjobs": 1, "op_size": 4194304, "iodepth": 16, "volumes_per_client": 1}
#: the folders ceph/cbt's workloads module writes per test below the workload's run folder (copied into the
#: archive by rpdcp as ``<workload>.<host>``): command/fio_command.py ``_generate_output_directory_path``:
#: ``numjobs-%03d/[total_iodepth-N/]iodepth-%06d`` (``%03d`` in its first version; 2026 versions put the
#: benchmark type, ``rbdfio``, before ``numjobs-``)
_WL_NUMJOBS, _WL_TOTAL, _WL_IODEPTH = (re.compile(r"numjobs-(\d+)"), re.compile(r"total_iodepth-(\d+)"),
                                       re.compile(r"iodepth-(\d+)"))
_WL_BENCHMARK_DIRS = ("rbdfio",)
#: a volume's files in a test folder: fio's output ``output.<volume>`` (command/fio_command.py
#: ``output.{target_number}``), CBT's extract ``json_output.<volume>`` and fio's logs
#: ``output.<volume>_<kind>.<job>.log``, as written or compressed by name
_WL_VOLUME_FILE = re.compile(r"(?:json_)?output\.(\d+)(?:_(?:clat_hist|lat_hist|slat|clat|lat|bw|iops)\.\d+\.log)?"
                             r"(?:\.gz|\.xz|\.bz2)?")


def cbt_volume_split(total: int, volumes: int) -> list[int]:
    """Per-volume iodepth of a test with ``total_iodepth`` ``total`` over ``volumes`` volumes, as CBT splits it
    (workloads/workload.py ``_calculate_iodepth_per_target_from_total_iodepth``; librbdfio.py 9d6480f
    ``_calculate_iodepth_per_volume_from_total_iodepth``): fewer volumes when ``total`` < ``volumes``, the
    quotient each, the remainder one each to the first volumes."""
    n = min(volumes, total)
    q, r = divmod(total, n)
    return [q + (1 if i < r else 0) for i in range(n)]


def _ints(v: Any) -> list[int] | None:
    """A YAML option's values as integers (a scalar or a list of them), None if any is not one."""
    vals = v if isinstance(v, list) else [v]
    try:
        out = [int(x) for x in vals]
    except (TypeError, ValueError):
        return None
    return out if all(str(x).strip().lstrip("-").isdigit() for x in vals) else None


class CbtWorkloads:
    """The ``workloads:`` block of one CBT ``benchmark_config.yaml`` (librbdfio, ceph/cbt after 9d6480f, e.g.
    the archives of 2025-10: ``results/<iteration>/id-<hash>/<workload>.<host>/numjobs-NNN/
    total_iodepth-N/iodepth-NNNNNN/output.<volume>``).  A test is (workload, numjobs, total_iodepth) — or
    (workload, numjobs, iodepth) without ``total_iodepth`` — and its volumes ran at once: the test folder
    (``total_iodepth-N``, else ``iodepth-N``) is one run.  Each workload's options are its own over the
    benchmark's (workloads/workloads.py ``add_global_options``), CBT's defaults (:data:`WORKLOAD_DEFAULTS`)
    under both."""

    def __init__(self, path: Path, options: dict[str, dict[str, Any]], node: Any, top: str | None) -> None:
        self.path, self.options, self.node = path, options, node
        self.prefix = (top,) if top else ()

    @classmethod
    def of(cls, path: Path, bench: dict[str, Any], node: Any, top: str | None) -> "CbtWorkloads | None":
        wls = bench.get("workloads")
        if not isinstance(wls, dict) or not wls:
            return None
        glob = {k: v for k, v in bench.items() if k not in ("workloads", "prefill")}
        opts = {str(n): {**WORKLOAD_DEFAULTS, **glob, **(w if isinstance(w, dict) else {})} for n, w in wls.items()}
        return cls(path, opts, node, top)

    def line(self, *keys: str) -> int | None:
        """The YAML line of ``workloads.<keys…>`` (the deepest key found)."""
        return _node_line(self.node, *self.prefix, "workloads", *keys)

    def _error(self, where: str, what: str, *keys: str) -> IngestError:
        return IngestError(self.path, f"{where}: {what}", line=self.line(*keys))

    def workload_of(self, folder: str) -> tuple[str, str] | None:
        """(workload, host) of a ``<workload>.<host>`` folder (rpdcp appends the host), the longest workload
        name that fits; None for another folder (``idle_monitoring.<host>``, …)."""
        hits = [n for n in self.options if folder.startswith(n + ".") and len(folder) > len(n) + 1]
        if not hits:
            return None
        name = max(hits, key=len)
        return name, folder[len(name) + 1:]

    def keys(self, parts: tuple[str, ...], where: str, id_run: str) -> "tuple[dict[str, Any], list[int] | None]":
        """Run keys of the folder ``parts`` below the id folder (``where``: its path, for errors; ``id_run``:
        the id folder's ``run``), and for a test's ``iodepth-N`` folder the iodepth of each volume by index
        (else None); ``({}, None)`` outside a workload.  ``run`` is the test folder with the client host
        dropped from ``<workload>.<host>`` (one test's clients ran at once: one run; ``client_host`` keeps the
        host).  Each folder is checked against the YAML: IngestError (the YAML, its line) when its workload,
        numjobs, total_iodepth or iodepth is not one the YAML asked for."""
        wl = self.workload_of(parts[0]) if parts else None
        if wl is None:
            rest = [d for d in parts[1:3] if d not in _WL_BENCHMARK_DIRS]
            if rest and _WL_NUMJOBS.fullmatch(rest[0]):
                raise self._error(where, f"a test folder of a workload the YAML does not have "
                                         f"(it has {', '.join(self.options)})")
            return {}, None
        name, host = wl
        o = self.options[name]
        ctx: dict[str, Any] = {k: o[k] for k in CBT_PARAMS if k in o and not isinstance(o[k], (dict, list))
                               and k != "iteration"}
        ctx.update(workload=name, client_host=host, numjobs=None, total_iodepth=None, iodepth=None,
                   mode=o["mode"] if isinstance(o["mode"], str) else None,  # a list: which one cannot be known
                   op_size=None if isinstance(o["op_size"], list) else size_bytes(o["op_size"]))
        rest = list(parts[1:])
        test = [name]
        if rest and rest[0] in _WL_BENCHMARK_DIRS:
            test.append(rest.pop(0))
        total = "total_iodepth" in o
        levels = ("numjobs", "total_iodepth", "iodepth") if total else ("numjobs", "iodepth")
        split = None
        for level, d in zip(levels, rest):
            if level == "numjobs":
                m = _WL_NUMJOBS.fullmatch(d)
                if not m:
                    return ctx, None  # another folder below the workload's: its keys, no test
                ctx["numjobs"] = self._pick(int(m.group(1)), o, name, "numjobs", where)
            elif level == "total_iodepth":
                m = _WL_TOTAL.fullmatch(d)
                if not m:
                    raise self._error(where, f"expected a total_iodepth-N folder (workload {name} sets "
                                             f"total_iodepth), got {d!r}", name, "total_iodepth")
                ctx["total_iodepth"] = self._pick(int(m.group(1)), o, name, "total_iodepth", where)
            else:
                if _WL_TOTAL.fullmatch(d):
                    raise self._error(where, f"a total_iodepth folder, but workload {name} sets no total_iodepth",
                                      name)
                m = _WL_IODEPTH.fullmatch(d)
                if not m:
                    raise self._error(where, f"expected an iodepth-N folder, got {d!r}", name)
                split = self._split(int(m.group(1)), ctx["total_iodepth"], o, name, where)
                ctx["iodepth"] = int(m.group(1))
            if level != "iodepth" or not total:
                test.append(d)
        if len(rest) >= len(levels) - (1 if total else 0):
            ctx["run"] = "/".join([id_run] * (id_run != ".") + test)
        return ctx, split if len(rest) == len(levels) else None

    def _pick(self, value: int, o: dict[str, Any], name: str, key: str, where: str) -> int:
        """``value`` (a folder's) when it is one of the workload's ``key`` values, else IngestError."""
        want = _ints(o[key])
        if want is None or value not in want:
            raise self._error(where, f"{key} {value}: workload {name} asks for {key} {o[key]}", name, key)
        return value

    def _split(self, depth: int, total: int | None, o: dict[str, Any], name: str, where: str) -> list[int]:
        """The iodepth of each volume of a test whose folder says ``iodepth-<depth>``, checked."""
        vols = _ints(o["volumes_per_client"])
        if vols is None or len(vols) != 1 or vols[0] < 1:
            raise self._error(where, f"volumes_per_client {o['volumes_per_client']!r}: expected one integer ≥ 1",
                              name, "volumes_per_client")
        if total is None:
            self._pick(depth, o, name, "iodepth", where)
            return [depth] * vols[0]
        split = cbt_volume_split(total, vols[0])
        if depth not in split:
            raise self._error(where, f"iodepth {depth}: total_iodepth {total} over {vols[0]} volumes gives "
                                     f"iodepths {sorted(set(split))}", name, "total_iodepth")
        return split

    def volume(self, p: Path, depth: int, split: list[int], where: str) -> int | None:
        """The volume index of a test's file ``p`` from its name (``output.<volume>``, ``json_output.<volume>``,
        ``output.<volume>_<log>.<job>.log``), None for another file; IngestError when CBT gave that volume
        another iodepth than its folder's (``split``: each volume's)."""
        m = _WL_VOLUME_FILE.fullmatch(p.name)
        if not m:
            return None
        v = int(m.group(1))
        if v >= len(split) or split[v] != depth:
            got = f"iodepth {split[v]}" if v < len(split) else f"only volumes 0–{len(split) - 1}"
            raise IngestError(self.path, f"{where}: volume {v} in an iodepth-{depth} folder, but the YAML gives it "
                                         f"{got}", line=self.line())
        return v


#: run keys taken from ``run.json``'s ``osd_config.effective`` (what ``ceph config show osd.0`` said
#: the OSD ran), so notebooks select tuned arms by value, never by directory name (issue 10).
#: Units as Ceph prints them: ``scrub_cost`` in bytes, priorities and counts unitless.
TUNED_KEYS = {"osd_max_scrubs": "max_scrubs", "osd_scrub_cost": "scrub_cost",
              "osd_requested_scrub_priority": "requested_scrub_priority",
              # the settings the seeds state, read back from the OSD (reports/validity.csv, stats.validity)
              "osd_max_backfills": "max_backfills", "osd_recovery_max_active": "recovery_max_active",
              "osd_recovery_max_active_hdd": "recovery_max_active_hdd",
              "osd_recovery_max_active_ssd": "recovery_max_active_ssd",
              "bluestore_throttle_bytes": "bluestore_throttle_bytes",
              "bluestore_throttle_deferred_bytes": "bluestore_throttle_deferred_bytes",
              "osd_mclock_max_capacity_iops_hdd": "mclock_capacity_iops_hdd",
              "osd_mclock_max_capacity_iops_ssd": "mclock_capacity_iops_ssd",
              "osd_mclock_skip_benchmark": "mclock_skip_benchmark",
              "bluestore_debug_enforce_settings": "bluestore_enforce_settings"}
#: run keys from run.json's ``throttle`` (``capture/ceph/throttle.py``: the per-OSD block IO limits, IO/s
#: per direction, and the cgroup version that enforced them)
THROTTLE_KEYS = {"read_iops": "throttle_read_iops", "write_iops": "throttle_write_iops",
                 "cgroup_version": "throttle_cgroup"}


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


#: keys with a meaning of their own in every table (:data:`~.keys.KEY_COLUMNS`, and run.json's
#: ``scheduler``, which becomes ``op_queue`` or ``io_scheduler``): a string or a number, never a list
NAMED_KEYS = frozenset(KEY_COLUMNS) | frozenset(PATH_KEYS) | {"scheduler"}
#: the longest name of a run key (a column of every table): the shipped run.json keys are at most 30
KEY_NAME_MAX = 256


def check_keys(ctx: dict[str, Any], path: Path, line_of=None) -> dict[str, Any]:
    """``ctx`` unchanged when each value is one a table can hold (:func:`~.keys.key_problem`: a finite number
    for the numeric keys, a string or number for the named ones, text at most 64 KiB) and every key of
    :data:`PATH_KEYS` it has is safe as one folder name (no ``/``, ``\\``, NUL, not ``.`` or ``..``, and
    ``<key>=<value>`` at most 255 bytes: ``ingest --dask`` names a folder so); else IngestError naming the file,
    the key and its value (a ``campaign`` of ``../../..`` must not write outside ``--out``); ``line_of(key)``:
    the line of a key in the file, if known."""
    def where(k: str) -> int | None:
        return line_of(k) if line_of is not None else None
    for k, v in ctx.items():
        if len(str(k)) > KEY_NAME_MAX:
            raise IngestError(path, f"a key name of {len(str(k))} characters: expected at most {KEY_NAME_MAX} "
                                    f"(it names a column), got {shown(repr(str(k)[:40]))}...", line=where(k))
        if v is None or k == "context_source":
            continue
        why = key_problem(k, v, named=k in NAMED_KEYS)
        if why:
            raise IngestError(path, f"{shown(str(k))}: {shown(why)}", line=where(k))
    for k in (*PATH_KEYS, "scheduler"):
        if k not in ctx or ctx[k] is None:
            continue
        v = str(ctx[k])
        if v in (".", "..") or any(c in v for c in "/\\\0"):
            raise IngestError(path, f"{k}: expected a name usable as one folder name (no '/', '\\', NUL, "
                                    f"not '.' or '..'), got {shown(repr(v))}", line=where(k))
        folder = len(f"{'io_scheduler' if k == 'scheduler' else k}={v}".encode("utf-8", "surrogatepass"))
        if folder > NAME_MAX:
            raise IngestError(path, f"{k}: expected at most {NAME_MAX} bytes as the folder name "
                                    f"'{k}=<value>' (ingest --dask's tables), got {folder} bytes", line=where(k))
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
    (``TUNED_KEYS``), the block IO throttle (``THROTTLE_KEYS``), ``background_unfinished`` (comma-joined; empty when every background
    operation ended), ``redone`` (attempts thrown away as disturbed or failed before this one) and
    ``fio_t0_after_spawn_s`` (s from the timeline's t=0, fio's spawn, to fio's log t=0)."""
    from .compress import read_all
    try:
        text = read_all(path).decode("utf-8-sig")  # a byte-order mark is not part of the text
        doc = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise IngestError(path, f"expected a JSON object (run.json): {e}",
                          line=getattr(e, "lineno", None)) from None
    except RecursionError:
        raise IngestError(path, "expected a JSON object (run.json): nested too deeply to read", line=1) from None
    except OSError as e:
        raise IngestError(path, f"cannot read: {e.strerror}") from None
    if not isinstance(doc, dict):
        raise IngestError(path, "expected a JSON object (run.json)", line=1)
    # lists and objects are metadata, not keys, except where a key that names a column is one (refused)
    ctx = {k: v for k, v in doc.items() if (k in NAMED_KEYS or not isinstance(v, (dict, list))) and v is not None}
    for k, v in ctx.items():
        if any(isinstance(t, str) and _SURROGATE.search(t) for t in (k, v)):
            raise IngestError(path, f"{shown(k)}: expected UTF-8 text, got a \\u escape that is no character "
                                    f"(a lone surrogate) in {shown(repr(v))[:80]}", line=_top_level_line(text, k))
    eff = (doc.get("osd_config") or {}).get("effective") if isinstance(doc.get("osd_config"), dict) else None
    if isinstance(eff, dict):
        for opt, key in TUNED_KEYS.items():
            if eff.get(opt) is not None:
                ctx[key] = _config_value(eff[opt])
    th = doc.get("throttle")
    if isinstance(th, dict):
        for opt, key in THROTTLE_KEYS.items():
            if isinstance(th.get(opt), (str, int, float)) and not isinstance(th.get(opt), bool):
                ctx[key] = th[opt]
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
    ctx.setdefault("run", table_path(path.parent.relative_to(root).as_posix()) if path.parent != root else ".")
    ctx["context_source"] = "run.json"
    return scheduler_keys(check_keys(ctx, path, line_of=lambda k: _top_level_line(text, k)))


def _top_level_line(text: str, key: str) -> int | None:
    """The 1-based line of the top-level ``key`` of the JSON object ``text`` (which decodes; its last, as
    ``json.loads`` keeps the last of a key given twice), or None."""
    found = None
    dec = json.JSONDecoder()
    ws = re.compile(r"\s*")
    pos = ws.match(text, 1 + ws.match(text).end()).end()  # past the opening brace
    while pos < len(text) and text[pos] == '"':
        at = pos
        k, pos = dec.raw_decode(text, pos)
        pos = ws.match(text, pos).end() + 1  # the colon
        _, pos = dec.raw_decode(text, ws.match(text, pos).end())
        if k == key:
            found = text.count("\n", 0, at) + 1
        pos = ws.match(text, pos).end()
        pos = ws.match(text, pos + 1).end() if text[pos:pos + 1] == "," else pos
    return found


_SURROGATE = re.compile("[\ud800-\udfff]")



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
    """Per-directory run context, inherited by sub-directories (nearest file wins per key); per file, the
    keys its name gives (:meth:`for_file`: a CBT test's ``volume``)."""

    def __init__(self, root: Path):
        self.root = root
        self.cache: dict[Path, dict[str, Any]] = {}
        self.errors: list[tuple[Path, IngestError]] = []
        self.workloads: dict[Path, CbtWorkloads] = {}  # id folder → its YAML's workloads: block
        self.tests: dict[Path, tuple[CbtWorkloads, int, list[int]]] = {}  # a test's iodepth-N folder
        self.bad: set[Path] = set()  # folders that disagree with their YAML's workloads

    def get(self, d: Path) -> dict[str, Any]:
        if d in self.cache:
            return self.cache[d]
        parent = {} if d == self.root or self.root not in d.parents else self.get(d.parent)
        ctx = dict(parent)
        found = False
        for name, fn in (("benchmark_config.yaml", cbt_config), ("run.json", run_json_context)):
            p = next((q for q in [d / name] + [d / (name + suf) for suf in COMPRESSED_SUFFIXES
                                                if name != "run.json"] if q.is_file()), None)
            if p is not None:
                found = True
                try:
                    got = fn(p, self.root)
                    if isinstance(got, tuple):
                        got, spec = got
                        if spec is not None:
                            self.workloads[d] = spec
                    ctx.update(got)
                except IngestError as e:
                    self.errors.append((p, e))
        test = None if found else self._workload_keys(d, ctx)
        if test is not None:
            ctx.update(test)
        elif not found:  # a CBT archive without benchmark_config.yaml (getput's): keys from its folder names;
            try:         # what a config file above gave wins
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

    def _workload_keys(self, d: Path, ctx: dict[str, Any]) -> dict[str, Any] | None:
        """The keys of ``d`` below a CBT id folder whose YAML has a ``workloads:`` block
        (:meth:`CbtWorkloads.keys`), None when ``d`` is not below one or not in a workload's folder.  A
        folder that disagrees with the YAML is an error, and its files a run of their own (the folder)."""
        top = next((a for a in d.parents if a in self.workloads), None) if self.workloads else None
        if top is None or self.root not in d.parents or any(a in self.bad for a in d.parents):
            return None  # below a folder that disagreed with the YAML: that folder's keys
        parts = d.relative_to(top).parts
        where = d.relative_to(self.root).as_posix()
        try:
            keys, split = self.workloads[top].keys(parts, where, _cbt_place(top, self.root)["run"])
        except IngestError as e:
            self.errors.append((d, e))
            self.bad.add(d)
            return {**dict.fromkeys(TEST_KEYS), "run": where}
        if split is not None:
            self.tests[d] = (self.workloads[top], keys["iodepth"], split)
        return keys or None

    def for_file(self, p: Path) -> dict[str, Any]:
        """The run keys of file ``p``: its folder's (:meth:`get`), plus ``volume`` for a volume's file in a
        CBT test folder (:meth:`CbtWorkloads.volume`); a name that disagrees with the YAML is an error of
        that file (its keys then lack ``volume``)."""
        ctx = self.get(p.parent)
        test = self.tests.get(p.parent)
        if test is None:
            return ctx
        spec, depth, split = test
        try:
            v = spec.volume(p, depth, split, p.relative_to(self.root).as_posix())
        except IngestError as e:
            self.errors.append((p, e))
            return ctx
        return ctx if v is None else {**ctx, "volume": v}


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
