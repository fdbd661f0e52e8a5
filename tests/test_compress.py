"""analysis.ingest.compress: a corrupt or truncated stream is reported where it broke, not at byte 0."""

from __future__ import annotations

import bz2
import gzip
import lzma

import pytest

from analysis.ingest.base import IngestError
from analysis.ingest.compress import read_all, read_head

TEXT = b"".join(b"%d, %d, 0, 4096\n" % (i, i * 7 % 1000) for i in range(400_000))  # ~6.6 MB of a fio log


@pytest.mark.parametrize("comp, fn", [("gzip", gzip.compress), ("xz", lzma.compress), ("bzip2", bz2.compress)])
def test_truncated_stream_names_the_offset_and_what_came_out(tmp_path, comp, fn):
    packed = fn(TEXT)
    p = tmp_path / "log.gz"
    p.write_bytes(packed)
    assert read_all(p) == TEXT and read_head(p, 100) == (TEXT[:100], comp)
    cut = len(packed) * 2 // 3
    p.write_bytes(packed[:cut])
    with pytest.raises(IngestError) as e:
        read_all(p)
    assert 0 < e.value.offset <= cut
    assert f"corrupt or truncated {comp} stream after" in str(e.value)
    got = int(str(e.value).split(" stream after ")[1].split()[0])
    assert 0 < got < len(TEXT)  # the decompressed bytes before the break: most of the first two thirds
    assert read_head(p, 100) == (TEXT[:100], comp)  # the head alone is intact


@pytest.mark.parametrize("magic", [b"\xfd7zXZ\x00", b"\x1f\x8b", b"BZh"])
def test_a_stream_with_a_compression_magic_but_no_valid_stream_is_an_ingest_error(tmp_path, magic):
    """Found by the blktrace fuzz test: a flipped header made a trace start with xz's magic; the codec's own
    exception (LZMAError) escaped the streaming reader."""
    from analysis.ingest.compress import open_stream
    p = tmp_path / "trace.blktrace"
    p.write_bytes(magic + bytes(range(256)) * 8)
    with pytest.raises(IngestError) as ei:
        with open_stream(p) as f:
            while f.read(1 << 16):
                pass
    assert "corrupt or truncated" in ei.value.message and ei.value.offset is not None and ei.value.offset > 0
