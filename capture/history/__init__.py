"""Benchmark histories with known changes: the same fio job run point after point on a loop device whose
read IOPS a cgroup v1 blkio throttle caps; the cap is changed at planned points (issue 52)."""
