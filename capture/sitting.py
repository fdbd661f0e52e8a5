"""The attempt loop and the sitting record under their first name (tests and older notes import them from
here); they live in :mod:`capture.common.sitting`."""

from capture.common.sitting import ATTEMPTS, do_runs, time, write_record  # noqa: F401  (time: tests patch it)
