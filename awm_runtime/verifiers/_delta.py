"""A DB's bytes as the pages where they differ from a template's: what a kept verifier worker is sent per job.

An episode's final DB is its scenario's template plus what the episode changed: usually a few pages of many.
The runtime sends a kept worker (which holds the template, `_warm`) only the `PAGE`-byte pages that differ and
the DB's length; the worker rebuilds the exact bytes. Byte-exact for any two byte strings: pages need not be
SQLite's (a DB with other pages only costs more pages sent).
"""

from __future__ import annotations

from typing import Any

PAGE = 4096  # SQLite's default page size


def changed_pages(base: bytes, data: bytes) -> list[int]:
    """The indices of `data`'s `PAGE`-byte pages that are not the same bytes in `base` (its last one may be
    short; pages past `base`'s end are all changed). The whole pages both have are compared in numpy, 8 bytes a
    step (~10 us for a 176 KiB DB; a Python loop over page slices took ~40 us, a verification's largest cost in the
    runtime)."""
    if base == data:  # a verification of an episode that changed nothing
        return []
    np = numpy()
    common = min(len(base), len(data))
    whole = common // PAGE
    words = whole * (PAGE // 8)
    old = np.frombuffer(base, np.uint64, words).reshape(whole, PAGE // 8)
    new = np.frombuffer(data, np.uint64, words).reshape(whole, PAGE // 8)
    changed: list[int] = np.flatnonzero((old != new).any(axis=1)).tolist()
    for index in range(whole, (len(data) + PAGE - 1) // PAGE):  # a short page both have, and pages past `base`
        lo, hi = index * PAGE, min(index * PAGE + PAGE, len(data))
        if hi > common or base[lo:hi] != data[lo:hi]:
            changed.append(index)
    return changed


def numpy() -> Any:
    """numpy, imported on first use (~0.1 s: a runtime with kept verifier workers imports it when it makes its
    `Sandbox`, not on its event loop; the worker, which only patches, never does)."""
    import numpy as np

    return np


def page_bytes(data: bytes, pages: list[int]) -> list[memoryview]:
    """The bytes of `data`'s `pages`, in order (views: no copy)."""
    view = memoryview(data)
    return [view[i * PAGE:min((i + 1) * PAGE, len(data))] for i in pages]


def pages_end(length: int, pages: list[int], stream: Any, at: int) -> int:
    """Where in `stream` the bytes of `pages` of a DB of `length` bytes, read from `at`, end; ValueError naming the
    first page outside the DB or its frame."""
    for index in pages:
        lo = index * PAGE
        hi = min(lo + PAGE, length)
        if lo >= length or hi - lo > len(stream) - at:
            raise ValueError(f"page {index} is outside a DB of {length} bytes or its frame")
        at += hi - lo
    return at


def put_pages(out: Any, length: int, pages: list[int], stream: Any, at: int) -> None:
    """Write `pages` of a DB of `length` bytes into `out`, their bytes read from `stream` at `at` (as `pages_end`
    found them to fit)."""
    for index in pages:
        lo = index * PAGE
        hi = min(lo + PAGE, length)
        out[lo:hi] = stream[at:at + hi - lo]
        at += hi - lo


def patched(base: Any, length: int, pages: list[int], stream: Any, at: int) -> tuple[bytearray, int]:
    """The DB of `length` bytes that is `base` with `pages` replaced by their bytes read from `stream` at `at`;
    and where in `stream` they end (ValueError: `pages_end`)."""
    end = pages_end(length, pages, stream, at)
    common = min(len(base), length)
    out = bytearray(memoryview(base)[:common])  # one copy (not a zeroed buffer, then a copy into it)
    out.extend(bytes(length - common))
    put_pages(out, length, pages, stream, at)
    return out, end


__all__ = ["PAGE", "changed_pages", "numpy", "page_bytes", "pages_end", "patched", "put_pages"]
