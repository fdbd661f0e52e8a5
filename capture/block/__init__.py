"""Capture harness for block-layer IO-scheduler campaigns (issue 4): fio on loop devices (direct IO)
and on files in xfs/ext4/btrfs made on them, under none/mq-deadline/kyber/bfq, with 1 Hz /proc
utilisation per run and kernel block traces (binary ``blk_io_trace`` records from the ``blk`` ftrace
tracer) of selected runs.

Pure parts (unit-tested in CI): :mod:`.campaign`.  Parts that touch the machine (root): :mod:`.system`
(loop devices, schedulers, file systems, tracer), :mod:`.cpu` (CPU outside the benchmark).
"""
