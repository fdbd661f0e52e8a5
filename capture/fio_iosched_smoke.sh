#!/usr/bin/env bash
# A small, real fio campaign on a loop device under each blk-mq IO scheduler (none, mq-deadline,
# bfq, kyber), so the repository ships genuine runs for `make report`.  Not the block campaign of
# issue 4 (that one has ≥ 6 repeats per cell and rados bench); this is 2 repeats × 4 schedulers ×
# 4 s of 4 KiB random reads at QD 8.  Needs root (losetup) and fio; takes ~50 s.
# Run it on a quiet machine (no tests, builds or helpers beside it): load is recorded per run.
# Usage: sudo bash capture/fio_iosched_smoke.sh [OUT]   (OUT default data/raw/fio-iosched-smoke)
set -euo pipefail
out=${1:-data/raw/fio-iosched-smoke}
[ "$(id -u)" = 0 ] || { echo "needs root (losetup, scheduler switch)"; exit 1; }
command -v fio >/dev/null || { echo "fio missing: apt-get install fio"; exit 1; }
[ -e "$out" ] && { echo "$out exists: raw data is immutable; choose another OUT"; exit 1; }
work=$(mktemp -d); loop=""
cleanup() { [ -n "$loop" ] && losetup -d "$loop" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
truncate -s 512M "$work/backing.img"
dd if=/dev/urandom of="$work/backing.img" bs=1M count=512 conv=notrunc status=none
loop=$(losetup -f --show --direct-io=on "$work/backing.img")
dev=$(basename "$loop")
orig=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/block/$dev/queue/scheduler)
tmp="$out.partial"; rm -rf "$tmp"; mkdir -p "$tmp"
for rep in 1 2; do
  for sched in $(printf '%s\n' none mq-deadline bfq kyber | shuf); do
    echo "$sched" > /sys/block/$dev/queue/scheduler
    d="$tmp/randread-4k-qd8/$sched/rep-0$rep"; mkdir -p "$d"
    load_before=$(cut -d' ' -f1-3 /proc/loadavg)
    (cd "$d" && fio --name=rr --filename="$loop" --rw=randread --bs=4k --iodepth=8 \
        --ioengine=libaio --direct=1 --time_based --runtime=4 --output-format=json+ \
        --log_avg_msec=250 --write_lat_log=rr --write_iops_log=rr --write_bw_log=rr \
        --write_hist_log=rr --log_hist_msec=1000 --output=fio.json >/dev/null)
    find "$d" -name "*.log" -empty -delete   # e.g. a slat log an engine leaves empty
    cat > "$d/run.json" <<JSON
{"campaign": "fio-iosched-smoke", "scenario": "randread-4k-qd8", "scheduler": "$sched",
 "profile": null, "repeat": $rep, "device": "loop (direct-io, 512 MiB file)",
 "kernel": "$(uname -r)", "fio": "$(fio --version)", "nproc": $(nproc),
 "loadavg_before": "$load_before", "loadavg_after": "$(cut -d' ' -f1-3 /proc/loadavg)",
 "captured": "$(date -Is)", "origin": "measured"}
JSON
  done
done
echo "$orig" > /sys/block/$dev/queue/scheduler
gzip -9 "$tmp"/*/*/*/*.log
mv "$tmp" "$out"
echo "wrote $out"
