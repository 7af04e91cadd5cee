"""A kept verifier worker's reusable store for the final DBs it is sent as pages unlike a template (`_delta`).

SQLite parses a DB's whole schema on a connection's first statement: ~145 us for the bench's 20 tables, a third of
a verification, for every final DB opened as a private copy (`deserialize`). Connections to one shared-cache DB
share one parsed schema, kept while the schema cookie (header offset 40) stays the same. So a worker keeps, per
template, one shared in-memory store (SQLite's `memdb` VFS, a named store, `cache=shared`), writes each job's final
DB into its memory (the template, then the changed pages), and the job's connection to it costs ~30 us.

What SQLite is then told, so that no job ever reads another job's pages or schema:
- the change counter (offset 24, and 92 with it where the DB's own were equal) is made one more than the one
  SQLite last read there: the first connection that starts reading sees it moved and drops every cached page.
  SQLite looks only when a first reader takes the store, so a store still held by a statement of an ended job
  (`busy`) is not written again: the worker makes a new one;
- the schema cookie is set by the worker, never taken from the DB (whose world or agent may have set it with
  `PRAGMA schema_version`): the template's own cookie when the DB's schema is the template's, byte for byte (no
  changed page is one of the template's `sqlite_schema` pages, and page 1 differs only in the header fields an
  ordinary write moves), else a cookie no job has had, which makes SQLite parse the schema again.
A verifier sees those three header fields as set here, and every other byte of its DB as the runtime sent it.

The store's memory is reached through SQLite's own structures (`MemFile.pStore`, `MemStore.aData`), which are not
public API: they are read only on SQLite >= 3.36 (where the named `memdb` store they describe came in), and
checked before a store is used: the DB SQLite reads back through its own API must be the bytes found there, and
the reader count must be 1 while a statement reads and 0 after. A store that cannot be made or checked is not used:
its jobs open private copies, as before. A DB larger than the store's room (about twice its template) opens a private
copy too. A store costs its worker about three times its template's size (templates a worker keeps are at most
`REUSE_MAX_BYTES` each, and a worker serves one verifier's code: in practice one template).
"""

from __future__ import annotations

import contextlib
import ctypes
import sqlite3
import struct
from itertools import count
from typing import Any

from awm_runtime.verifiers._delta import PAGE, pages_end, put_pages

MEMDB_SINCE = (3, 36, 0)  # the named, shared `memdb` store (MemStore) whose layout `Scratch` reads
_MAGIC = b"SQLite format 3\x00"
_COUNTER, _COOKIE, _VALID_FOR = 24, 40, 92
# Page 1's header bytes an ordinary write moves: change counter, page count, freelist trunk and count, the schema
# cookie (set here), version-valid-for and the writer's SQLite version. Any other byte of page 1 that differs
# from the template's means its schema may not be the template's.
_MOVED_BY_WRITES = ((24, 44), (92, 100))
_OPEN_FLAGS = 0x02 | 0x40 | 0x20000  # SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI | SQLITE_OPEN_SHAREDCACHE
_FCNTL_FILE_POINTER = 7
_NAMES = count(1)
# struct MemStore { i64 sz, szAlloc, szMax; u8 *aData; sqlite3_mutex *pMutex; int nMmap; unsigned mFlags;
#                   int nRdLock; int nWrLock; int nRef; char *zFName; }
_LOCKS_AT = 3 * 8 + 2 * ctypes.sizeof(ctypes.c_void_p) + 2 * 4


def _library() -> Any:
    """The SQLite library the `sqlite3` module uses (its extension's own handle: the same library whether linked
    in or shared), with the three functions `_Store` needs; None when it cannot be had."""
    if not MEMDB_SINCE <= sqlite3.sqlite_version_info < (4,):
        return None
    try:
        import _sqlite3

        lib = ctypes.CDLL(_sqlite3.__file__)
        lib.sqlite3_open_v2.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int,
                                        ctypes.c_char_p]
        lib.sqlite3_file_control.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p]
        lib.sqlite3_close.argtypes = [ctypes.c_void_p]
        return lib
    except (OSError, AttributeError, ImportError):
        return None


_LIB = _library()  # loaded when the verifier server imports this (before any worker confines itself)


def _store_address(uri: str) -> int:
    """The address of the named memdb store `uri` opens (its MemStore), from a connection of SQLite's own."""
    db = ctypes.c_void_p()
    try:
        if _LIB.sqlite3_open_v2(uri.encode(), ctypes.byref(db), _OPEN_FLAGS, None) != 0:
            raise sqlite3.OperationalError("cannot open the store")
        file = ctypes.c_void_p()
        if _LIB.sqlite3_file_control(db, b"main", _FCNTL_FILE_POINTER, ctypes.byref(file)) != 0 or not file.value:
            raise sqlite3.OperationalError("the store has no file")
        # struct MemFile { sqlite3_file base (one pointer); MemStore *pStore; ... }
        address = ctypes.c_void_p.from_address(file.value + ctypes.sizeof(ctypes.c_void_p)).value
        if not address:
            raise sqlite3.OperationalError("the store is not a memdb store")
        return address
    finally:
        _LIB.sqlite3_close(db)


class Scratch:
    """One template's shared store (`uri`), which `load` fills with a final DB for one job at a time."""

    def __init__(self, template: bytes) -> None:
        if _LIB is None:
            raise sqlite3.NotSupportedError(f"SQLite {sqlite3.sqlite_version} has no named memdb store")
        self.uri = f"file:/awm-final-{next(_NAMES)}?vfs=memdb&cache=shared"
        self._holder = sqlite3.Connection(self.uri, uri=True, isolation_level=None)
        try:
            source = sqlite3.Connection(":memory:")
            try:
                source.deserialize(template)
                source.backup(self._holder)
            finally:
                source.close()
            rows = self._holder.execute("SELECT pageno FROM dbstat WHERE name IN ('sqlite_schema', 'sqlite_master')")
            self._schema_pages = frozenset(int(r[0]) - 1 for r in rows) - {0}  # 0-based, as `_delta` counts them
            self._schema_end = (max(self._schema_pages, default=0) + 1) * PAGE  # a shorter DB lost some of them
            self._page1 = bytes(template[:PAGE])
            self._cookie = struct.unpack_from(">I", template, _COOKIE)[0]
            # Room for a DB twice the template's size: SQLite grows the store, the worker only ever writes within.
            self._holder.execute("CREATE TABLE awm_room (x)")
            self._holder.execute("INSERT INTO awm_room VALUES (zeroblob(?))", (max(len(template), 1 << 16),))
            # The schema parsed now (with awm_room) under a cookie `load` never sets: the template's + 1.
            self._holder.execute(f"PRAGMA schema_version = {ctypes.c_int32(self._cookie + 1).value}")
            self._store = _store_address(self.uri)
            size, room, most, data = self._fields()
            reading = self._holder.execute("SELECT * FROM sqlite_schema")
            reading.fetchone()  # a read transaction: MemStore.nRdLock is 1 while it lasts
            locks = self._locks()
            reading.close()
            serialised = self._holder.serialize()
            # The sizes first: `aData` is read only once they are the store's as SQLite gives them.
            if not (size == len(serialised) <= room <= most and data and ctypes.string_at(data, 16) == _MAGIC
                    and ctypes.string_at(data, size) == serialised and locks == 1 and self._locks() == 0):
                raise sqlite3.NotSupportedError("the memdb store is not laid out as this SQLite version's was")
        except BaseException:
            self._holder.close()
            raise
        self._jobs = count(1)
        self._open: list[sqlite3.Connection] = []  # the running job's connections to the store

    def load(self, base: Any, length: int, pages: list[int], stream: Any, at: int) -> int | None:
        """Make the store the DB of `length` bytes that is `base` (the template) with `pages` replaced by their
        bytes read from `stream` at `at` (as `_delta.patched` builds it); where in `stream` they end. None (nothing
        written) when the DB does not fit the store's room, its pages do not fit the frame, or the store is `busy`."""
        _, room, _, data = self._fields()
        if not PAGE <= length <= room or self.busy():
            return None
        try:
            end = pages_end(length, pages, stream, at)  # checked before anything is written (`seen` below)
        except ValueError:
            return None
        with memoryview((ctypes.c_char * room).from_address(data)).cast("B") as memory:
            (seen,) = struct.unpack_from(">I", memory, _COUNTER)  # the counter SQLite last read here
            common = min(len(base), length)
            memory[:common] = memoryview(base)[:common]
            if length > common:
                ctypes.memset(data + common, 0, length - common)
            put_pages(memory, length, pages, stream, at)
            same_schema = (self._schema_pages.isdisjoint(pages) and self._schema_end <= length
                           and self._same_page1(memory))
            counter = struct.pack(">I", (seen + 1) & 0xFFFFFFFF)
            if memory[_VALID_FOR:_VALID_FOR + 4] == memory[_COUNTER:_COUNTER + 4]:
                memory[_VALID_FOR:_VALID_FOR + 4] = counter
            memory[_COUNTER:_COUNTER + 4] = counter
            # The template's cookie for its schema; else one this store has never had (not the template's, nor
            # the one its making left, the template's + 1), so SQLite parses that schema afresh.
            cookie = self._cookie if same_schema else self._cookie + 1 + next(self._jobs)
            struct.pack_into(">I", memory, _COOKIE, cookie & 0xFFFFFFFF)
        ctypes.c_int64.from_address(self._store).value = length  # MemStore.sz: the DB's size
        return end

    def _fields(self) -> tuple[int, int, int, int]:
        """MemStore.sz, szAlloc, szMax and aData: the DB's size, the store's room, its most, and its memory."""
        return struct.unpack("qqqQ", ctypes.string_at(self._store, 32))  # type: ignore[return-value]

    def _locks(self) -> int:
        """MemStore.nRdLock + nWrLock: the store's readers and writer now (0: no connection holds it)."""
        return sum(struct.unpack_from("ii", ctypes.string_at(self._store + _LOCKS_AT, 8)))

    def busy(self) -> bool:
        """Whether a connection still holds the store (a statement of an ended job that is not yet finalized keeps
        its read transaction open, and SQLite checks the change counter only when a first reader takes the store:
        such a store is never written again)."""
        return self._locks() != 0

    def _same_page1(self, memory: memoryview) -> bool:
        """Whether page 1 is the template's but for the header fields an ordinary write moves."""
        lo = 0
        for start, end in _MOVED_BY_WRITES:
            if memory[lo:start] != self._page1[lo:start]:
                return False
            lo = end
        return memory[lo:PAGE] == self._page1[lo:PAGE]

    def bytes(self) -> bytes:
        """The DB now in the store (what a connection that cannot share it opens a private copy of)."""
        size, _, _, data = self._fields()
        return ctypes.string_at(data, size)

    def opened(self, connection: sqlite3.Connection) -> None:
        """Note a job's connection to the store (`end_job` closes it)."""
        self._open.append(connection)

    def end_job(self) -> None:
        """Close the ended job's connections to the store, so that none holds a read transaction when the next
        job's DB is written: SQLite checks the change counter only when a first reader takes the store's lock."""
        for connection in self._open:
            with contextlib.suppress(sqlite3.Error):
                sqlite3.Connection.close(connection)
        self._open.clear()

    def close(self) -> None:
        """Let the store go (with its last connection)."""
        with contextlib.suppress(sqlite3.Error):
            self._holder.close()


__all__ = ["MEMDB_SINCE", "Scratch"]
