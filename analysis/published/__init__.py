"""Every number the studies in ``../shared/seeds`` print, as tidy tables with provenance
(``data/published/``): :mod:`.chapter` (the workload-characterization chapter's tables), :mod:`.qos` (the
two mClock-vs-WPQ studies), :mod:`.rgw` (the RGW getput diary); :mod:`.seeds` holds their shared paths
and the provenance check's row loop."""
