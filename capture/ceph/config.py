"""ceph.conf and per-arm OSD settings for Ceph 16.2 (Pacific), as pure functions.

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

#: Seed (mclock-vs-wpq-scrub-part2, "Experimenting with the mClock Custom Profile"): reservation /
#: weight / limit per class; percentages are of the OSD's capacity, ``MAX`` is no limit.
SEED_CUSTOM = {
    "client": {"res": 1, "wgt": 1, "lim": "80%"},
    "background_recovery": {"res": "5%", "wgt": 1, "lim": "100%"},
    "background_best_effort": {"res": "90%", "wgt": 2, "lim": "MAX"},
}


def render_ceph_conf(fsid: str, cluster_dir: str, osd_size_bytes: int,
                     osd_memory_target: int) -> str:
    """The bootstrap ceph.conf: addresses, paths, auth off.  No scheduler setting belongs here."""
    d = cluster_dir
    lines = [
        "[global]",
        f"fsid = {fsid}",
        "mon_host = [v2:127.0.0.1:3300,v1:127.0.0.1:6789]",
        "public_network = 127.0.0.0/8",
        "ms_bind_ipv6 = false",
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


def custom_allocations(alloc: dict[str, dict[str, Any]], capacity_iops: float,
                       shards: int) -> dict[str, int]:
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


def arm_settings(arm: dict[str, Any], capacity_iops: float, shards: int) -> dict[str, Any]:
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
            out.update(custom_allocations(arm.get("allocations") or SEED_CUSTOM, capacity_iops, shards))
    elif arm.get("osd_mclock_profile"):
        raise ValueError("osd_mclock_profile is only meaningful with osd_op_queue=mclock_scheduler")
    out.update(arm.get("extra") or {})
    return out


def base_settings(capacity_iops: float, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Settings common to every arm: ssd pinning, fixed mClock capacity, no scheduled scrubs."""
    out = dict(SSD_PINNED)
    out.update({
        "osd_mclock_skip_benchmark": "true",
        "osd_mclock_max_capacity_iops_hdd": capacity_iops,
        "osd_mclock_max_capacity_iops_ssd": capacity_iops,
        # scrubs only when the harness asks: scheduled ones would land in random arms
        "osd_scrub_min_interval": 1e8, "osd_scrub_max_interval": 1e9, "osd_deep_scrub_interval": 1e9,
    })
    out.update(extra or {})
    return out


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
