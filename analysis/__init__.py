"""cephqos-lab analysis package: ingest, metrics, statistics and figures for Ceph QoS studies."""

__version__ = "0.1.0"
