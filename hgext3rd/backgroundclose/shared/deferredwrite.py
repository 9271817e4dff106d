# deferredwrite.py - whole files written by writer threads
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Files a stream apply hands to writer threads before they are opened.

Where opening a file waits on the file system (writepolicy.WritePolicy), the
session gives core a ``DeferredFile`` instead of an open file.  Core writes
the file's data into it; the data stays in memory.  When core closes it,
the whole file goes to the session's writer closer as a ``FileWrite``,
whose ``close()``, on a writer thread, makes the parent directories, opens
the file through the same vfs (core's open: store encoding, file modes),
writes the data and closes the file.  The path was audited on the reading
thread before the ``DeferredFile`` was made.

Memory: the data of files not yet written is bounded by a ``WriteBudget``
(``BUDGET`` bytes).  A file whose data does not fit is opened right away
on the reading thread instead, the way files are when no writers run, and
what it buffered is written into it: the stream never waits for memory.

Ownership: the data belongs to the ``DeferredFile`` until its ``close()``
hands the ``FileWrite`` to the writer closer, in one step
(engine/closer.py); from then on to that closer alone.  The descriptor a
writer opens never leaves its thread: opened, written and closed there,
or closed there on failure.
A file left to the garbage collector, or given up by a failing ``with``
block, writes nothing, and gives its memory back.
"""

import os
import threading
import time

from .. import engine
from ..engine import policy as policymod

# bytes of data held for files not written yet, at most
BUDGET = 32 * 1024 * 1024


class WriteBudget:
    """the bytes held for files not written yet, within ``most``"""

    def __init__(self, most=BUDGET):
        self.most = most
        self.held = 0
        self.peak = 0
        self._lock = threading.Lock()

    def take(self, nbytes):
        """hold ``nbytes`` more: False (and nothing held) if over"""
        with self._lock:
            if self.held + nbytes > self.most:
                return False
            self.held += nbytes
            if self.held > self.peak:
                self.peak = self.held
            return True

    def give(self, nbytes):
        with self._lock:
            self.held -= nbytes


class WriterThreads:
    """the writer threads of one stream apply: none until opens are
    measured waiting (``policy``, a writepolicy.WritePolicy, says so), or a
    setting forces them on; then a closer of their own, whose submissions
    are ``FileWrite``s.  ``options`` are the closer's settings;
    ``on_start()`` runs once they started."""

    def __init__(self, policy, options, book, timed, cancelled, on_start):
        self.policy = policy
        self.closer = None  # once started
        self.budget = WriteBudget()
        self._options = options
        self._book = book
        self._timed = timed
        self._cancelled = cancelled
        self._on_start = on_start

    def start(self):
        """opens wait: whole files go to writer threads from now on"""
        options = dict(self._options)
        options.update(policy=engine.BACKGROUND, minfilecount=0)
        self.closer = engine.Closer(
            expectedcount=-1, native=False, **options
        )
        self.closer.start()
        if not self.closer.decisions.background:
            # no thread could be started: written where they are read, as
            # before, for good
            self.policy.deferring = False
            self.policy.mode = policymod.INLINE
            return
        self._on_start()

    def started(self):
        """the writers' closer, started now if it was not (forced on:
        worker.backgroundclosewrites); None if no thread could be
        started.  A writer's failure is raised here, before one more file
        is handed over."""
        if self.closer is None:
            self.start()
        if not self.policy.deferring:
            return None
        self.closer.raise_failure()
        return self.closer

    def hand_over(self, name, prepare, opener, chunks, size):
        """``chunks`` (``size`` bytes, held in the budget already) to be
        written whole into ``name`` by a writer: ``prepare()`` makes its
        directories, ``opener()`` opens it.  From here on the data is the
        writers' closer's."""
        write = FileWrite(
            name, prepare, opener, chunks, size, self.budget, self._book,
            self._cancelled, self._timed,
        )
        self.closer.close(write, name)


class FileWrite:
    """one file for a writer thread: ``close()`` writes it whole

    ``opener()`` opens it (after its directories are made by
    ``prepare()``) and returns a file object; ``chunks`` are its data,
    ``size`` bytes held in ``budget``.  ``cancelled`` (a threading.Event):
    the apply failed, write nothing more.
    """

    __slots__ = ('name', '_prepare', '_opener', '_chunks', '_size',
                 '_budget', '_book', '_cancelled', '_timed')

    def __init__(self, name, prepare, opener, chunks, size, budget, book,
                 cancelled, timed):
        self.name = name
        self._prepare = prepare
        self._opener = opener
        self._chunks = chunks
        self._size = size
        self._budget = budget
        self._book = book
        self._cancelled = cancelled
        self._timed = timed

    def close(self):
        chunks, self._chunks = self._chunks, None
        if chunks is None:  # written already
            return
        try:
            if self._cancelled.is_set():
                return
            self._write(chunks)
        finally:
            # a failure is kept, traceback and all, until the apply ends:
            # the frames it went through must not keep the data alive
            chunks = None
            self._budget.give(self._size)

    def discard(self):
        """never handed over (an interrupt while waiting for room): write
        nothing, give the memory back"""
        chunks, self._chunks = self._chunks, None
        if chunks is not None:
            self._budget.give(self._size)

    def _write(self, chunks):
        try:
            table = self._book.mine()
            clock = time.perf_counter if self._timed else _no_clock
            name = self.name
            try:
                self._prepare()  # its mkdir calls are timed on their own
                if self._cancelled.is_set():
                    return
                start = clock()
                fp = self._opener()
            except OSError as exc:
                raise engine.FileError(name, exc, 'opening') from exc
            table['open'].add(clock() - start)
            # fp is this thread's alone, from here to its close
            try:
                start = clock()
                for chunk in chunks:
                    fp.write(chunk)
                table['write'].add(clock() - start, self._size)
            except BaseException as exc:
                engine.close_quietly(fp)
                if isinstance(exc, OSError):
                    raise engine.FileError(name, exc, 'writing') from exc
                raise
            start = clock()
            try:
                fp.close()
            except OSError as exc:
                raise engine.FileError(name, exc) from exc
            table['close-written'].add(clock() - start)
            if self._cancelled.is_set():
                # the apply failed meanwhile, and may have taken back
                # what it wrote already (a write that hung past the
                # closer's grace period ends here): this file too
                _tryunlink(name)
        finally:
            chunks = chunk = None  # see close()


class DeferredFile:
    """what core writes a deferred file into; see the module doc

    ``handler`` (stream/opens.py's StreamOpener) hands the whole file to the
    writers (``handler.write_later``) and, when the data does not fit the
    budget, opens the file on this thread (``handler.open_now``).
    """

    def __init__(self, handler, name, budget):
        self.name = name
        self._handler = handler
        self._budget = budget
        self._chunks = []
        self._size = 0  # held in the budget
        self._now = None  # the file opened on this thread, if it had to be
        self._closed = False
        # the handler's: where and how to open the file
        self.where = None

    def write(self, data):
        now = self._now
        if now is not None:
            return now.write(data)
        if type(data) is not bytes:
            data = bytes(data)  # core's buffer may be reused
        if not self._budget.take(len(data)):
            return self._open_now().write(data)
        self._chunks.append(data)
        self._size += len(data)
        return len(data)

    def _open_now(self):
        """open the file here and move what was buffered into it"""
        now = self._now = self._handler.open_now(self)
        chunks, self._chunks = self._chunks, []
        size, self._size = self._size, 0
        try:
            for chunk in chunks:
                now.write(chunk)
        finally:
            self._budget.give(size)
        return now

    def close(self):
        if self._closed:
            return
        self._closed = True
        if self._now is not None:
            self._now.close()
            return
        chunks, self._chunks = self._chunks, None
        size, self._size = self._size, 0
        # the hand-over: from here on the writer closer's (it closes what
        # it cannot take, here)
        self._handler.write_later(self, chunks, size)

    def discard(self):
        """on a failing path: write nothing, give the memory back"""
        if self._closed:
            return
        self._closed = True
        if self._now is not None:
            self._now.__exit__(RuntimeError, None, None)
            return
        self._chunks = None
        size, self._size = self._size, 0
        self._budget.give(size)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, exc_tb):
        if exc_type is None:
            self.close()
        else:
            self.discard()
        return False

    def __del__(self, _again=engine.interrupt_again):
        try:
            if not self.__dict__.get('_closed', True):
                self.discard()
        except BaseException as exc:  # noqa: B902
            # a finalizer can raise nothing: at interpreter exit modules
            # may be gone, and a Ctrl-C whose handler ran in here would
            # be lost (it is delivered again)
            _again(exc)


def _no_clock():
    return 0.0


def _tryunlink(name):
    try:
        os.unlink(name)
    except OSError:
        pass
