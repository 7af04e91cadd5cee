"""A world worker's request pipe, read one whole frame at a time by one thread at a time: the main thread, and,
while a call that the main thread runs in place is stuck (it waits, or hogs the CPU), a reader thread of its own
that hands the requests coming meanwhile to the call threads, so that a slow or hung call holds up its own
episode only (issue 49: `CallThreads.run_here`)."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from typing import Any

from awm_runtime.isolation import FdFrames


class Requests:
    """The requests a world worker reads from `fd`. `submit` takes a call read beside a call in place, `answer`
    any other request then (ping, a stray load); `running_here` says whether a call still runs in place."""

    def __init__(self, fd: int, *, submit: Callable[[dict[str, Any]], None],
                 answer: Callable[[dict[str, Any]], None], running_here: Callable[[], bool],
                 failed: Callable[[BaseException], str]) -> None:
        self.frames = FdFrames(fd)
        self.reading = threading.Lock()  # one reader at a time; a frame is read whole under it
        self._submit, self._answer, self._running_here, self._failed = submit, answer, running_here, failed
        self._beside_lock = threading.Lock()
        self.beside = False  # a reader thread is at work
        self.readers = 0  # reader threads ever started

    def next(self) -> dict[str, Any] | None:
        """The next request, or None at EOF."""
        with self.reading:
            msg: dict[str, Any] | None = self.frames.read()
        return msg

    def read_beside(self) -> None:
        """The call running in place is stuck: read the requests that come meanwhile on a thread of their own (one
        at a time), until that call has ended."""
        with self._beside_lock:
            if self.beside:
                return
            self.beside = True
            self.readers += 1
        threading.Thread(target=self._reader, daemon=True, name="request-reader").start()

    def _reader(self) -> None:
        try:
            while True:
                msg = self.next()
                if msg is None or msg.get("op") == "exit":
                    os._exit(0)  # as the main thread ends the worker at EOF or `exit`, with a call still running
                if msg.get("op") == "call":
                    self._submit(msg)
                else:
                    self._answer(msg)
                with self._beside_lock:
                    if not self._running_here():  # the main thread reads again from its next frame on
                        self.beside = False
                        return
        except BaseException as exc:  # a broken request pipe ends the worker, as the main thread's read would
            with contextlib.suppress(Exception):
                os.write(2, f"world worker failed: {self._failed(exc)}\n".encode())
            os._exit(70)
