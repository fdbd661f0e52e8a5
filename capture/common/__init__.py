"""What the capture harnesses (:mod:`capture.block`, :mod:`capture.ceph`, :mod:`capture.rgw`,
:mod:`capture.cbt`) share:

* :mod:`.campaign` — the campaign schema: a campaign file read and checked (``CampaignError`` naming the
  file and key), the planned :class:`~.campaign.Run`, resume state (``done`` markers, the ``_inprogress``
  staging area) and the campaign file frozen beside the data;
* :mod:`.sitting` — one sitting: the attempt loop over the planned runs (:func:`~.sitting.do_runs`), the
  interrupt / teardown / record frame around it (:func:`~.sitting.guarded`) and the sitting record;
* :mod:`.cli` — the ``plan`` command and the command-line error convention.

Pure Python: nothing here touches the machine until a harness's runner does.
"""
