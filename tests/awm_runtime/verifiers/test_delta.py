"""A DB sent to a kept worker as the pages where it differs from its template (`_delta`) is rebuilt byte for byte."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from awm_runtime.verifiers._delta import PAGE, changed_pages, page_bytes, patched


def rebuilt(base: bytes, data: bytes) -> bytes:
    pages = changed_pages(base, data)
    stream = b"".join(page_bytes(data, pages))
    out, at = patched(base, len(data), pages, memoryview(stream), 0)
    assert at == len(stream)
    return bytes(out)


@settings(max_examples=200, deadline=None)
@given(base=st.binary(max_size=5 * PAGE), edits=st.lists(st.tuples(st.integers(0, 6 * PAGE), st.binary(min_size=1,
       max_size=300)), max_size=6), length=st.integers(0, 6 * PAGE))
def test_any_bytes_are_rebuilt_exactly_from_their_changed_pages(base: bytes, edits: list[tuple[int, bytes]],
                                                                 length: int) -> None:
    data = bytearray((base * 2)[:length].ljust(length, b"\x07"))  # shorter, longer, or as long as the base
    for at, chunk in edits:
        data[at:at + len(chunk)] = chunk
    assert rebuilt(base, bytes(data)) == bytes(data)


def test_only_the_pages_an_episode_changed_are_sent() -> None:
    base = bytes(range(256)) * (10 * PAGE // 256)
    data = bytearray(base)
    data[PAGE + 5] ^= 1
    data[7 * PAGE] ^= 1
    assert changed_pages(base, bytes(data)) == [1, 7]
    assert changed_pages(base, base) == []
    grown = bytes(data) + b"x" * (PAGE + 1)
    assert changed_pages(base, grown) == [1, 7, 10, 11]


def test_a_page_outside_the_db_or_its_frame_is_refused() -> None:
    with pytest.raises(ValueError, match="outside"):
        patched(b"a" * PAGE, PAGE, [1], memoryview(b"b" * PAGE), 0)
    with pytest.raises(ValueError, match="outside"):
        patched(b"a" * PAGE, PAGE, [0], memoryview(b"b" * 10), 0)


@settings(max_examples=200, deadline=None)
@given(base=st.binary(max_size=4 * PAGE + 9), edits=st.lists(st.tuples(st.integers(0, 5 * PAGE), st.integers(0, 255)),
       max_size=5), length=st.integers(0, 5 * PAGE + 9))
def test_exactly_the_pages_that_differ_are_found(base: bytes, edits: list[tuple[int, int]], length: int) -> None:
    data = bytearray((base * 2)[:length].ljust(length, b"\x07"))
    for at, value in edits:
        if at < length:
            data[at] = value
    spans = [(i * PAGE, min(i * PAGE + PAGE, length)) for i in range((length + PAGE - 1) // PAGE)]
    expected = [i for i, (lo, hi) in enumerate(spans) if hi > len(base) or base[lo:hi] != data[lo:hi]]
    assert changed_pages(base, bytes(data)) == expected
