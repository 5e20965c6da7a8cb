"""Compressed datasets: gzip, bz2, xz and zstd, told by their first bytes, read as a stream.

Why by content and not by name: files are renamed, pipes have no name (`<(zcat ...)` is
`/dev/fd/63`), and a `.gz` that is plain text is still plain text. The name only helps to say
what is inside (`data.csv.gz` holds CSV). Decompression streams, so memory stays at a buffer
whatever the file size; a file cut short or corrupt is one DatasetError line, never a silently
shorter dataset.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from nexagauge_local.readers.base import DatasetError, one_line, require

_BZ2_BLOCKS = (b"\x31\x41\x59\x26\x53\x59", b"\x17\x72\x45\x38\x50\x90")  # a block or the end


def _is_bz2(head: bytes) -> bool:
    # "BZh" alone could begin a text file; the level digit and the block magic cannot.
    return head[:3] == b"BZh" and head[3:4] in b"123456789" and head[4:10] in _BZ2_BLOCKS


_MAGIC: tuple[tuple[str, Callable[[bytes], bool]], ...] = (
    ("gzip", lambda h: h.startswith(b"\x1f\x8b")),
    ("bz2", _is_bz2),
    ("xz", lambda h: h.startswith(b"\xfd7zXZ\x00")),
    ("zstd", lambda h: h.startswith(b"\x28\xb5\x2f\xfd")),
)
SUFFIXES = {".gz": "gzip", ".gzip": "gzip", ".bz2": "bz2", ".xz": "xz", ".zst": "zstd",
            ".zstd": "zstd"}
_HEAD = 16


def compression_of(path: Path) -> str | None:
    """The codec `path` is compressed with (gzip, bz2, xz, zstd), or None for plain bytes."""
    with path.open("rb") as fh:
        head = fh.read(_HEAD)
    return next((name for name, test in _MAGIC if test(head)), None)


def inner_suffix(path: Path) -> str:
    """The suffix that says what a file holds: `.csv` for data.csv.gz, `.jsonl` for data.jsonl."""
    suffixes = [s.lower() for s in path.suffixes]
    while suffixes and suffixes[-1] in SUFFIXES:
        suffixes.pop()
    return suffixes[-1] if suffixes else ""


# Every codec's way of saying "corrupt or cut short"; zstd's own is ZstdError.
_CODEC_ERRORS: tuple[type[BaseException], ...] = (EOFError, zlib.error, lzma.LZMAError, OSError)


@contextmanager
def open_bytes(path: Path, name: str) -> Iterator[IO[bytes]]:
    """`path`'s bytes, decompressed when its first bytes name a codec.

    A codec failure anywhere in the read (the caller's loop included: this wraps the yield)
    becomes DatasetError `NAME: the gzip data is corrupt or cut short (...)`.
    """
    codec = compression_of(path)
    if codec is None:
        with path.open("rb") as fh:
            yield fh
        return
    zstd_error: tuple[type[BaseException], ...] = ()
    if codec == "zstd":
        zstd_error = (require("zstandard", name, "zstd-compressed data").ZstdError,)
    try:
        with _open(codec, path, name) as fh:
            yield fh
    except (*_CODEC_ERRORS, *zstd_error) as exc:
        if isinstance(exc, OSError) and not _codec_oserror(exc):
            raise
        raise DatasetError(name, f"the {codec} data is corrupt or cut short ({one_line(exc)})") from None


def _codec_oserror(exc: OSError) -> bool:
    """bz2 and gzip report bad data as a bare OSError (gzip.BadGzipFile); a failing disk has
    an errno and stays an OSError."""
    return exc.errno is None


def _open(codec: str, path: Path, name: str) -> Any:
    if codec == "gzip":
        return gzip.open(path, "rb")
    if codec == "bz2":
        return bz2.open(path, "rb")
    if codec == "xz":
        return lzma.open(path, "rb")
    zstandard = require("zstandard", name, "zstd-compressed data")
    return io.BufferedReader(_ZstdReader(path.open("rb"), zstandard.ZstdDecompressor()),
                             buffer_size=1 << 16)


class _ZstdReader(io.RawIOBase):
    """zstd frames one after another, decompressed as read, with the end of the data checked.

    Why not zstandard.open: its reader ends quietly at a frame cut short, so a truncated file
    would read as a shorter dataset with no error. gzip, bz2 and lzma raise EOFError there;
    this does the same.
    """

    _CHUNK = 1 << 20

    def __init__(self, raw: IO[bytes], dctx: Any) -> None:
        super().__init__()
        self._raw, self._dctx = raw, dctx
        self._obj = dctx.decompressobj()
        self._pending, self._at = b"", 0  # decompressed bytes not yet read, and where
        self._in_frame = False  # bytes of an unfinished frame have been fed

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        while self._at >= len(self._pending):
            if not self._fill():
                return 0
        n = min(len(view), len(self._pending) - self._at)
        view[:n] = self._pending[self._at:self._at + n]
        self._at += n
        return n

    def _fill(self) -> bool:
        """Decompress the next chunk into _pending; False at a clean end of the data."""
        chunk = self._raw.read(self._CHUNK)
        if not chunk:
            if self._in_frame:
                raise EOFError("Compressed file ended before the end-of-stream marker was reached")
            return False
        out = []
        while chunk:
            self._in_frame = True
            out.append(self._obj.decompress(chunk))
            if not self._obj.eof:
                break
            chunk, self._in_frame = self._obj.unused_data, False
            self._obj = self._dctx.decompressobj()
        self._pending, self._at = b"".join(out), 0
        return True

    def close(self) -> None:
        self._raw.close()
        super().close()
