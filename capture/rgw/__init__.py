"""RGW capture: a local radosgw (Ceph 16.2, beast on 127.0.0.1) on the throwaway cluster of
:mod:`capture.ceph.cluster`, an S3 load generator that prints getput's result lines, and a campaign on
bucket-index sharding (issue 28; the seed ``../shared/seeds/cbt-rgw-getput-diary.txt``)."""
