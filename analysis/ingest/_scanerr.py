"""The integer-table scanners' error codes and the one error message both paths raise: the C scanner
(``_cscan.c``, through :mod:`._scan`) and the plain path (:mod:`._plain`) import it from here, so neither
imports the other."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .base import IngestError, line_of_offset

ERR_CHAR, ERR_COLS, ERR_LONG, ERR_ROWS, ERR_DDIR = 1, 2, 3, 4, 5  # as in _cscan.c


def scan_error(path: Path, buf: np.ndarray, ncol: int, err: int, code: int) -> IngestError:
    """The error for bad input at byte ``err`` of ``buf`` (``code``: ``ERR_*`` as in ``_cscan.c``), with its
    1-based line and the text before it; the C scanner and the plain path (:mod:`._plain`) say the same."""
    size = len(buf)
    line = line_of_offset(bytes(buf[:err]), err)
    text = bytes(buf[max(0, err - 40):err]).split(b"\n")[-1]
    if err < size and buf[err] not in (10, 13):
        text += bytes(buf[err:err + 1])
    what = {ERR_COLS: f"expected {ncol} comma-separated integers per line",
            ERR_LONG: "integer longer than 18 digits (not a count fio could have written)",
            ERR_ROWS: "more rows than the line-length bound allows (internal error)",
            ERR_DDIR: "data direction must be 0-3 (read/write/trim/sync)",
            ERR_CHAR: "expected an integer, ',' or end of line"}[code]
    return IngestError(path, f"{what} (near {text[-30:]!r})", line=line)
