"""Capture harness for WPQ-vs-mClock campaigns on a single-node Ceph 16.2 (Pacific) cluster.

Pure parts (no Ceph needed, unit-tested in CI): :mod:`.config` (ceph.conf and per-arm settings),
:mod:`.campaign` (YAML campaign → ordered run plan, resume state).  Parts that drive a real cluster:
:mod:`.cluster`, :mod:`.runner`, :mod:`.monitor`; helpers run under Debian's ``/usr/bin/python3``
(the only interpreter whose ``rados`` bindings import): ``pgpoll.py``, ``objfill.py``.
"""
