"""ceph.conf and per-arm OSD settings for Ceph 16.2 (Pacific) and 18.2 (Reef), as pure functions.

Facts this encodes (../shared/notes/ceph-single-node.md): queue settings live in the mon config
database (``ceph config set``), never in ceph.conf (the file wins over the database); the mClock
start-up benchmark can hang an OSD in 16.2.15, so it is skipped and the capacity is fixed; files
report as rotational, so every hdd/ssd pair is pinned to the **ssd** value for both queues (the
seeds ran NVMe OSDs).
"""

from __future__ import annotations

import math
from typing import Any

#: Pacific's "no limit" for mClock limits (the shipped default of the ``*_lim`` options).
MCLOCK_LIM_MAX = 999999

#: hdd/ssd variants pinned to the ssd defaults of 16.2.15, so file-backed (rotational) OSDs behave
#: like the seeds' NVMe OSDs under both queues; the plain option is also set where 0 means "use the
#: variant" (``osd_snap_trim_sleep``, ``osd_recovery_sleep``, ``osd_op_num_shards`` …).
SSD_PINNED: dict[str, Any] = {
    "bluestore_debug_enforce_settings": "ssd",
    "osd_op_num_shards": 8, "osd_op_num_shards_hdd": 8,
    "osd_op_num_threads_per_shard": 2, "osd_op_num_threads_per_shard_hdd": 2,
    "osd_snap_trim_sleep_hdd": 0, "osd_recovery_sleep_hdd": 0, "osd_delete_sleep_hdd": 1,
    "osd_recovery_max_active_hdd": 10,
    "osd_mclock_cost_per_io_usec_hdd": 50, "osd_mclock_cost_per_byte_usec_hdd": 0.011,
}

#: op shards per OSD with the pinning above; Pacific's mClock divides the OSD capacity by this.
OSD_SHARDS = SSD_PINNED["osd_op_num_shards"]

RELEASES = ("pacific", "reef")
#: options 18.2.7's ceph-osd does not know (``--show-config-value``: "option not found"); the mon
#: refuses to ``config set`` them.  Reef's mClock costs an IO from the device's sequential bandwidth and
#: IOPS capacity instead of per-IO/per-byte microseconds.
PACIFIC_ONLY = frozenset({"osd_mclock_cost_per_io_usec", "osd_mclock_cost_per_io_usec_hdd",
                          "osd_mclock_cost_per_io_usec_ssd", "osd_mclock_cost_per_byte_usec",
                          "osd_mclock_cost_per_byte_usec_hdd", "osd_mclock_cost_per_byte_usec_ssd"})
#: options 16.2.15 does not know
REEF_ONLY = frozenset({"osd_mclock_max_sequential_bandwidth_hdd", "osd_mclock_max_sequential_bandwidth_ssd",
                       "osd_mclock_override_recovery_settings", "osd_mclock_iops_capacity_threshold_hdd",
                       "osd_mclock_iops_capacity_threshold_ssd", "osd_mclock_force_run_benchmark_on_init"})
#: Reef's hdd variants pinned to its ssd defaults, as :data:`SSD_PINNED` does for Pacific: the sequential
#: bandwidth (ssd default 1200 MiB/s; hdd 150 MiB/s) sets mClock's cost per IO (bandwidth / IOPS capacity)
REEF_PINNED: dict[str, Any] = {"osd_mclock_max_sequential_bandwidth_hdd": 1258291200,
                               "osd_mclock_max_sequential_bandwidth_ssd": 1258291200}


def check_release(release: str) -> str:
    if release not in RELEASES:
        raise ValueError(f"ceph release {release!r}: expected one of {', '.join(RELEASES)}")
    return release


def for_release(settings: dict[str, Any], release: str) -> dict[str, Any]:
    """``settings`` without the options ``release`` does not have (see :data:`PACIFIC_ONLY`)."""
    drop = PACIFIC_ONLY if check_release(release) == "reef" else REEF_ONLY
    return {k: v for k, v in settings.items() if k not in drop}

#: Seed (mclock-vs-wpq-scrub-part2, "Experimenting with the mClock Custom Profile"): reservation /
#: weight / limit per class; percentages are of the OSD's capacity, ``MAX`` is no limit.
SEED_CUSTOM = {
    "client": {"res": 1, "wgt": 1, "lim": "80%"},
    "background_recovery": {"res": "5%", "wgt": 1, "lim": "100%"},
    "background_best_effort": {"res": "90%", "wgt": 2, "lim": "MAX"},
}


def render_ceph_conf(fsid: str, cluster_dir: str, osd_size_bytes: int,
                     osd_memory_target: int, ip: str = "127.0.0.1",
                     ports: tuple[int, int] | None = None) -> str:
    """The bootstrap ceph.conf: addresses, paths, auth off.  No scheduler setting belongs here.
    ``ip``: the loopback address every daemon binds (the mon on 3300/6789 there); ``ports``: the range
    the OSDs and mgr bind (default Ceph's 6800-7300) — a second cluster beside a host one takes its own."""
    d = cluster_dir
    lines = [
        "[global]",
        f"fsid = {fsid}",
        f"mon_host = [v2:{ip}:3300,v1:{ip}:6789]",
        "public_network = 127.0.0.0/8",
        f"public_addr = {ip}", f"cluster_addr = {ip}",
        "ms_bind_ipv6 = false",
        *([f"ms_bind_port_min = {ports[0]}", f"ms_bind_port_max = {ports[1]}"] if ports else []),
        "auth_cluster_required = none", "auth_service_required = none", "auth_client_required = none",
        f"run_dir = {d}/run", f"admin_socket = {d}/run/$name.asok",
        f"log_file = {d}/log/$name.log", f"mon_cluster_log_file = {d}/log/cluster.log",
        f"pid_file = {d}/run/$name.pid", f"crash_dir = {d}/crash",
        "osd_pool_default_pg_autoscale_mode = off",
        "osd_crush_chooseleaf_type = 0",
        "mon_allow_pool_delete = true",
        "mon_max_pg_per_osd = 1000",
        "mon_data_avail_warn = 5",
        "mon_warn_on_insecure_global_id_reclaim_allowed = false",
        "mon_warn_on_pool_no_redundancy = false",
        "",
        "[mon]",
        f"mon_data = {d}/mon/$name",
        "",
        "[mgr]",
        f"mgr_data = {d}/mgr/$name",
        "",
        "[client]",
        f"admin_socket = {d}/run/$name.$pid.asok",
        f"log_file = {d}/log/$name.$pid.log",
        "",
        "[osd]",
        f"osd_data = {d}/osd/$id",
        "osd_objectstore = bluestore",
        "bluestore_block_create = true",
        f"bluestore_block_size = {osd_size_bytes}",
        "bluestore_block_db_create = false", "bluestore_block_wal_create = false",
        "bluestore_fsck_on_mkfs = false", "bluestore_fsck_on_mount = false",
        f"osd_memory_target = {osd_memory_target}",
        "",
    ]
    return "\n".join(lines)


def _pct(v: Any, per_shard_capacity: float) -> int:
    """A seed allocation in Pacific's units: IOPS per op shard (``"NN%"`` of the capacity, MAX).

    Rounded half away from zero, as Pacific's own profiles do (``std::round``); a plain integer is
    taken as IOPS per shard.  Fractions such as ``0.5`` are the Quincy 17.2.6+/Reef unit and are
    refused: Pacific's options are unsigned integers and would read them as 0.
    """
    if isinstance(v, str):
        s = v.strip()
        if s.upper() == "MAX":
            return MCLOCK_LIM_MAX
        if s.endswith("%"):
            return max(1, math.floor(float(s[:-1]) / 100.0 * per_shard_capacity + 0.5))
        raise ValueError(f"allocation {v!r}: expected a number, 'NN%' or 'MAX'")
    if isinstance(v, bool) or not float(v).is_integer() or v < 0:
        raise ValueError(f"allocation {v!r}: Pacific's res/lim are whole IOPS per shard; "
                         "write a share as 'NN%'")
    return int(v)


def _share(v: Any, capacity_iops: float, shards: int) -> float:
    """A seed allocation in Reef's unit: a fraction of the OSD's IOPS capacity (0 = lowest reservation
    or no limit).  ``"NN%"`` → NN/100; ``MAX`` and shares above 100 % → 0, Reef's "no limit" (its
    options stop at 1.0, and a limit above the capacity limits nothing); a plain integer is Pacific's
    unit, IOPS per shard, converted through the capacity (the seed's client reservation 1 is 1 IOPS)."""
    if isinstance(v, str):
        s = v.strip()
        if s.upper() == "MAX":
            return 0.0
        if s.endswith("%"):
            f = float(s[:-1]) / 100.0
            return 0.0 if f > 1.0 else round(f, 6)
        raise ValueError(f"allocation {v!r}: expected a number, 'NN%' or 'MAX'")
    if isinstance(v, bool) or v < 0:
        raise ValueError(f"allocation {v!r}: expected a number ≥ 0, 'NN%' or 'MAX'")
    if not float(v).is_integer():
        raise ValueError(f"allocation {v!r}: write a share as 'NN%' (a plain number is IOPS per shard)")
    return round(float(v) * shards / capacity_iops, 6)


def custom_allocations(alloc: dict[str, dict[str, Any]], capacity_iops: float,
                       shards: int, release: str = "pacific") -> dict[str, Any]:
    """Seed-style custom mClock allocations → Pacific 16.2 option values.

    Pacific's ``osd_mclock_scheduler_*_{res,lim}`` are IOPS **per op shard** (the built-in profiles
    compute them as a percentage of ``osd_mclock_max_capacity_iops_* / shards``, unsigned integers,
    ``*_lim`` default 999999); weights are plain.  The switch to fractions of the OSD capacity
    (ceph/ceph PR 49975, "mClock recovery/backfill cost fixes") was backported to Quincy (PR 49973)
    and Reef (PR 51263), not to Pacific.  The seed's client reservation ``1`` is Pacific's default
    minimum, 1 IOPS per shard.
    """
    if capacity_iops <= 0 or shards < 1:
        raise ValueError(f"capacity {capacity_iops} IOPS over {shards} shards: both must be positive")
    if check_release(release) == "reef":
        # 18.2: res and lim are fractions of the OSD's capacity (Reef divides by the shards itself)
        out_r: dict[str, Any] = {}
        for cls in ("client", "background_recovery", "background_best_effort"):
            a = alloc[cls]
            out_r[f"osd_mclock_scheduler_{cls}_res"] = _share(a["res"], capacity_iops, shards)
            out_r[f"osd_mclock_scheduler_{cls}_wgt"] = int(a["wgt"])
            out_r[f"osd_mclock_scheduler_{cls}_lim"] = _share(a["lim"], capacity_iops, shards)
        tot = sum(v for k, v in out_r.items() if k.endswith("_res"))
        if tot > 1.0 + 1e-9:
            raise ValueError(f"reservations add up to {tot:.0%} of the capacity, more than all of it")
        return out_r
    per_shard = capacity_iops / shards
    out: dict[str, int] = {}
    for cls, opt in (("client", "client"), ("background_recovery", "background_recovery"),
                     ("background_best_effort", "background_best_effort")):
        a = alloc[cls]
        out[f"osd_mclock_scheduler_{opt}_res"] = _pct(a["res"], per_shard)
        out[f"osd_mclock_scheduler_{opt}_wgt"] = int(a["wgt"])
        out[f"osd_mclock_scheduler_{opt}_lim"] = _pct(a["lim"], per_shard)
    res = sum(v for k, v in out.items() if k.endswith("_res"))
    if res > per_shard:
        raise ValueError(f"reservations add up to {res} IOPS per shard, more than the "
                         f"{per_shard:g} a shard has ({capacity_iops:g} IOPS / {shards} shards)")
    return out


def arm_settings(arm: dict[str, Any], capacity_iops: float, shards: int,
                 release: str = "pacific") -> dict[str, Any]:
    """``ceph config set osd`` key → value for one arm (queue, profile, custom allocations, extras)."""
    queue = arm["osd_op_queue"]
    if queue not in ("wpq", "mclock_scheduler"):
        raise ValueError(f"osd_op_queue {queue!r}: expected wpq or mclock_scheduler")
    out: dict[str, Any] = {"osd_op_queue": queue}
    if queue == "mclock_scheduler":
        prof = arm.get("osd_mclock_profile")
        if prof not in ("high_client_ops", "balanced", "high_recovery_ops", "custom"):
            raise ValueError(f"osd_mclock_profile {prof!r}: expected high_client_ops, balanced, "
                             "high_recovery_ops or custom")
        out["osd_mclock_profile"] = prof
        if prof == "custom":
            out.update(custom_allocations(arm.get("allocations") or SEED_CUSTOM, capacity_iops, shards,
                                          release))
    elif arm.get("osd_mclock_profile"):
        raise ValueError("osd_mclock_profile is only meaningful with osd_op_queue=mclock_scheduler")
    out.update(arm.get("extra") or {})
    return for_release(out, release) if release != "pacific" else out


def base_settings(capacity_iops: float, extra: dict[str, Any] | None = None,
                  release: str = "pacific") -> dict[str, Any]:
    """Settings common to every arm: ssd pinning, fixed mClock capacity, no scheduled scrubs; only the
    options ``release`` has.  Reef would otherwise measure its capacity at start-up and, on these
    rotational-looking files, keep 315 IOPS with a warning (the chroot note): it is fixed here too."""
    out = dict(SSD_PINNED)
    if check_release(release) == "reef":
        out.update(REEF_PINNED)
    out.update({
        "osd_mclock_skip_benchmark": "true",
        "osd_mclock_max_capacity_iops_hdd": capacity_iops,
        "osd_mclock_max_capacity_iops_ssd": capacity_iops,
        # scrubs only when the harness asks: scheduled ones would land in random arms
        "osd_scrub_min_interval": 1e8, "osd_scrub_max_interval": 1e9, "osd_deep_scrub_interval": 1e9,
    })
    out.update(extra or {})
    return for_release(out, release)


#: Keys recorded from ``ceph config show osd.N`` into run.json (the full dump is kept beside it).
RECORDED_KEYS = (
    "osd_op_queue", "osd_op_queue_cut_off", "osd_mclock_profile", "osd_mclock_skip_benchmark",
    "osd_mclock_max_capacity_iops_hdd", "osd_mclock_max_capacity_iops_ssd",
    "osd_mclock_scheduler_client_res", "osd_mclock_scheduler_client_wgt",
    "osd_mclock_scheduler_client_lim", "osd_mclock_scheduler_background_recovery_res",
    "osd_mclock_scheduler_background_recovery_wgt", "osd_mclock_scheduler_background_recovery_lim",
    "osd_mclock_scheduler_background_best_effort_res",
    "osd_mclock_scheduler_background_best_effort_wgt",
    "osd_mclock_scheduler_background_best_effort_lim",
    "osd_op_num_shards", "osd_op_num_threads_per_shard", "osd_op_num_shards_hdd",
    "osd_max_backfills", "osd_recovery_max_active", "osd_recovery_max_active_hdd",
    "osd_recovery_sleep", "osd_recovery_sleep_hdd", "osd_snap_trim_sleep", "osd_snap_trim_sleep_hdd",
    "osd_scrub_sleep", "osd_scrub_cost", "osd_max_scrubs", "osd_requested_scrub_priority", "osd_scrub_priority",
    "osd_scrub_during_recovery", "osd_snap_trim_priority", "osd_recovery_priority",
    "osd_pg_max_concurrent_snap_trims", "osd_memory_target", "bluestore_debug_enforce_settings",
    # the hdd/ssd variants both queues pick from (files report rotational), so a run shows which applied
    "osd_op_num_threads_per_shard_hdd", "osd_op_num_shards_ssd", "osd_op_num_threads_per_shard_ssd",
    "osd_recovery_max_active_ssd", "osd_recovery_sleep_ssd", "osd_snap_trim_sleep_ssd",
    "osd_delete_sleep", "osd_delete_sleep_hdd", "osd_delete_sleep_ssd",
    "osd_mclock_cost_per_io_usec", "osd_mclock_cost_per_io_usec_hdd",
    "osd_mclock_cost_per_byte_usec", "osd_mclock_cost_per_byte_usec_hdd",
    "osd_scrub_min_interval", "osd_scrub_max_interval", "osd_deep_scrub_interval",
    # the throttled-device regime (issue 23): BlueStore throttles, buffered reads, scrub start pacing
    "bluestore_throttle_bytes", "bluestore_throttle_deferred_bytes", "bluestore_default_buffered_read",
    "osd_scrub_backoff_ratio", "osd_max_trimming_pgs",
    # Reef's mClock inputs (absent from a Pacific OSD's dump: recorded as missing there)
    "osd_mclock_max_sequential_bandwidth_hdd", "osd_mclock_max_sequential_bandwidth_ssd",
    "osd_mclock_override_recovery_settings", "osd_mclock_iops_capacity_threshold_hdd",
)


def check_applied(wanted: dict[str, Any], shown: dict[str, str]) -> list[str]:
    """Mismatches between what an arm asked for and what ``ceph config show`` says an OSD runs.

    Numbers compare numerically (``ceph`` prints ``5.000000`` for 5); only the arm's own keys are
    checked — built-in profiles legitimately rewrite res/wgt/lim and recovery limits.
    """
    bad = []
    for k, v in wanted.items():
        got = shown.get(k)
        if got is None:
            bad.append(f"{k}: not shown")
            continue
        try:
            same = float(got) == float(v)
        except (TypeError, ValueError):
            same = str(got).strip().lower() == str(v).strip().lower()
        if not same:
            bad.append(f"{k}: wanted {v!r}, OSD runs {got!r}")
    return bad
