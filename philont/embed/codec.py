"""How vectors are stored: unit-length float32 (little-endian) blobs, and sign-bit codes for the
coarse pass of the search; plus the arithmetic on them, with numpy when it is installed."""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["code", "code_bytes", "dot", "pack", "unpack"]

_np: Any
try:  # numpy comes with every model adapter; the pure-Python path keeps tests and tiny sets
    import numpy as _np
except ModuleNotFoundError:  # pragma: no cover - numpy is in the dev set-up
    _np = None

HAVE_NUMPY = _np is not None


def pack(vector: Sequence[float]) -> bytes:
    """A vector as float32 little-endian bytes (sqlite-vec's and pgvector-free storage form)."""
    values = array("f", vector)
    if sys.byteorder == "big":  # pragma: no cover - every platform we run on is little-endian
        values.byteswap()
    return values.tobytes()


def unpack(blob: bytes) -> array[float]:
    """The float32 values of a :func:`pack` blob."""
    values = array("f")
    values.frombytes(blob)
    if sys.byteorder == "big":  # pragma: no cover
        values.byteswap()
    return values


def code_bytes(dimension: int) -> int:
    """Bytes of a sign-bit code: one bit per dimension, rounded up to whole 64-bit words (so
    codes compare as integers, and sqlite-vec's bit vectors need multiples of 8 bits)."""
    return -(-dimension // 64) * 8


def code(vector: Sequence[float]) -> bytes:
    """The sign-bit code of a vector: bit ``i`` (least significant first) is set when
    component ``i`` is positive; zero-padded to :func:`code_bytes`. Hamming distance between
    codes approximates the angle between vectors (the coarse pass of the search)."""
    bits = 0
    for i, x in enumerate(vector):
        if x > 0:
            bits |= 1 << i
    return bits.to_bytes(code_bytes(len(vector)), "little")


def dot(query: Sequence[float], blobs: Iterable[bytes]) -> list[float]:
    """Cosine similarity of a unit query with each stored unit vector (their dot product)."""
    blobs = list(blobs)
    if not blobs:
        return []
    if _np is not None:
        matrix = _np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), -1)
        return [float(x) for x in matrix @ _np.asarray(query, dtype="<f4")]
    return [sum(a * b for a, b in zip(query, unpack(blob), strict=True)) for blob in blobs]


class Codes:
    """An append-only column of sign-bit codes with their keys, and Hamming distances to a
    query code: numpy words when available, Python integers otherwise."""

    def __init__(self, width: int) -> None:
        self.width = width  # bytes per code
        self.keys: list[Any] = []
        self._ints: list[int] = []
        self._chunks: list[bytes] = []
        self._columns: Any = None  # numpy: one row per 64-bit word of the codes (column-major)
        self._key_array: Any = None

    def __len__(self) -> int:
        return len(self.keys)

    def extend(self, rows: Iterable[tuple[Any, bytes]]) -> None:
        for key, blob in rows:
            if len(blob) != self.width:
                continue  # a code of another width cannot be compared (never stored by us)
            self.keys.append(key)
            if _np is None:
                self._ints.append(int.from_bytes(blob, "little"))
            else:
                self._chunks.append(blob)
        self._columns = None

    def _arrays(self) -> tuple[Any, Any]:
        """The codes word by word (a contiguous row per 64-bit word: XOR and popcount run down
        whole columns, about 5x faster than row by row) and the keys, built once per change."""
        if self._columns is None or self._columns.shape[1] != len(self.keys):
            data = b"".join(self._chunks)
            self._chunks = [data]
            rows = _np.frombuffer(data, dtype="<u8").reshape(len(self.keys), -1)
            self._columns = _np.ascontiguousarray(rows.T)
            self._key_array = _np.asarray(self.keys)
        return self._columns, self._key_array

    def distances(self, query_code: bytes) -> Sequence[int]:
        """The Hamming distance of every code to ``query_code``, in key order."""
        if _np is None:
            q = int.from_bytes(query_code, "little")
            return [(x ^ q).bit_count() for x in self._ints]
        columns, _ = self._arrays()
        words = _np.frombuffer(query_code, dtype="<u8")
        total = _np.bitwise_count(columns[0] ^ words[0]).astype(_np.uint16)
        for column, word in zip(columns[1:], words[1:], strict=True):
            total += _np.bitwise_count(column ^ word)
        return total  # type: ignore[no-any-return]

    def nearest(self, query_code: bytes, n: int) -> list[Any]:
        """The keys of the ``n`` codes nearest ``query_code``; among equal distances the larger
        (newer) key first, as sqlite-vec's pass orders them, so both keep the same pool."""
        if not self.keys or n <= 0:
            return []
        distances: Any = self.distances(query_code)
        if _np is not None:
            _, keys = self._arrays()
            inside = _np.arange(len(self.keys))
            if len(self.keys) > n:
                cut = int(_np.partition(distances, n - 1)[n - 1])
                inside = _np.nonzero(distances <= cut)[0]
            # by distance, then newer (larger) key first
            order = inside[_np.lexsort((-keys[inside], distances[inside]))]
            return [self.keys[i] for i in order[:n].tolist()]
        order = sorted(range(len(self.keys)), key=lambda i: (distances[i], -self.keys[i]))
        return [self.keys[i] for i in order[:n]]
