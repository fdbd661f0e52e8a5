"""CBT (the Ceph Benchmarking Tool, ../shared/tools/cbt) run for real against this project's cluster:
``python -m capture.cbt pilot|run`` (see :mod:`capture.cbt.__main__`)."""
