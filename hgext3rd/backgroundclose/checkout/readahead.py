# readahead.py - the store's data of a checkout's files, read ahead
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""The store's data of each file a checkout writes, in the checkout's
order: read by the applying thread itself while that is cheap, and ahead
of it on reader threads once its reads are measured to wait (a store on a
network file system: a lookup, an open, a read and a close each a round
trip).  Each read is core's own (``filectx.data()``, of the file node the
applying thread looked up in the manifest), on a filelog of its own; a
read that fails raises its error on the applying thread, at its file, as
core's would.  See docs/design.rst, "The checkout".
"""

import collections
import threading

from mercurial import context, filelog, localrepo
from mercurial.revlogutils import flagutil

from .. import engine
from ..engine import writepolicy as writepolicymod
from ..shared import seams

# the most reader threads: enough for the round trips of a store read
# (four or five) to overlap with a writer's, never one per file
MOST_THREADS = 16
# the most bytes read ahead and not taken yet, but for the file the
# applying thread takes next (one larger than this is read alone)
HELD = 16 << 20

# what a read runs through, each core's own or no read ahead: the
# repository's filelog, the changeset's file context, its data and the
# filelog's read.  For each, core's class, and the object of the checkout
# it is looked up on (None: the class alone)
_READ_PATH = (
    (localrepo.localrepository, 'file'),
    (context.changectx, 'filectx'),
    (context.filectx, 'data'),
    (filelog.filelog, 'read'),
)


def core_s_read_path(repo, mctx):
    """whether every read a checkout of ``mctx`` makes runs core's own
    code, which reads the store and nothing else: no flag processor of
    another extension's (lfs reads its blobs elsewhere, from a network),
    and no function on the way wrapped or overridden"""
    if any(processor is not None
           for processor in flagutil.flagprocessors.values()):
        return False
    objects = (repo.unfiltered(), mctx, None, None)
    for obj, (cls, name) in zip(objects, _READ_PATH):
        core = seams.core_s_own(cls, name)
        if core is None:
            return False
        if obj is not None and (
                getattr(type(obj), name, None) is not core
                or name in getattr(obj, '__dict__', ())):
            return False
    return True


class _Slot:
    """one file to read: its name and node, then its data or failure"""

    __slots__ = ('name', 'node', 'data', 'error', 'done')

    def __init__(self, name, node):
        self.name = name
        self.node = node
        self.data = None
        self.error = None
        self.done = False


class StoreReads:
    """the data of ``names`` (a checkout's paths, in its order) from
    ``mctx``'s store, taken one after the other by the applying thread
    (``take``).  ``mode``: the writers' (adaptive: read ahead once reads
    wait; background: from the first file; inline: never).  ``ahead``:
    whether another extension leaves the read path to core.  ``stop()``,
    from the checkout's teardown, joins the readers."""

    def __init__(self, mctx, names, mode, ahead, clock):
        self._mctx = mctx
        self._names = names
        self._clock = clock
        self._policy = writepolicymod.WritePolicy(
            mode if ahead else engine.INLINE, sample=engine.SAMPLE)
        self._next = 0  # the position of the file taken next
        self._slots = collections.deque()  # given to readers, in order
        self._queued = collections.deque()  # of those, not read yet
        self._given = 0  # positions given to readers so far
        self._held = 0  # bytes read and not taken yet
        self._cond = threading.Condition(threading.Lock())
        self._threads = []
        self._began = False  # readers started (or tried)
        self.started = 0  # reader threads started in all
        self._stopping = False
        # the reads, wherever they ran, and the applying thread's waits
        # for one being read ahead
        self.reads = engine.OpStat()
        self.waits = engine.OpStat()
        self.peakheld = 0

    # the applying thread ------------------------------------------------

    def take(self, name):
        """the data of ``name``, the next of ``names``: read here, or by a
        reader; a read that failed raises its failure here"""
        position = self._next
        self._next += 1
        if self._policy.deferring and not self._began:
            # background asked for: from this file on
            self._start(position)
        if self._threads:
            return self._take_ahead(name, position)
        how = self._policy.time_next()
        start = self._clock()
        if how is None:
            data = self._read_here(name)
        else:
            data, wall, cpu, blocked = engine.timed_call(
                how, self._read_here, name)
            if self._policy.learn(wall, cpu, blocked):
                self._start(self._next)
        duration = self._clock() - start
        with self._cond:  # (readers may count theirs by now)
            self.reads.add(duration, len(data))
        return data

    def _take_ahead(self, name, position):
        self._give()
        cond = self._cond
        with cond:
            slot = self._slots[0]
            if slot.name != name:  # (the checkout's own order broken)
                raise RuntimeError('read ahead out of order: %r' % name)
            if not slot.done:
                start = self._clock()
                self._grow()
                while not slot.done:
                    cond.wait()
                self.waits.add(self._clock() - start)
            self._slots.popleft()
            data, error = slot.data, slot.error
            slot.data = slot.error = None
            if data is not None:
                self._held -= len(data)
                cond.notify_all()
        if error is not None:
            try:
                raise error
            finally:
                error = None
        return data

    def _give(self):
        """the readers given the files they may read next, each with its
        node from the manifest (read here, not on their threads): a few a
        thread"""
        want = self._next - 1 + 4 * len(self._threads)
        names = self._names
        mctx = self._mctx
        fresh = []
        while self._given < len(names) and self._given <= want:
            name = names[self._given]
            fresh.append(_Slot(name, mctx.filenode(name)))
            self._given += 1
        if fresh:
            with self._cond:
                self._slots.extend(fresh)
                self._queued.extend(fresh)
                self._cond.notify_all()

    def _start(self, position):
        """read ahead from ``position`` on: two readers, more while the
        applying thread still waits for them.  Once: where no thread
        starts, the applying thread reads on by itself."""
        self._began = True
        self._given = position
        for _ in range(min(2, MOST_THREADS)):
            self._spawn()

    def _grow(self):
        """the applying thread waits for a read: one more reader, within
        the cap (called with the lock held)"""
        if len(self._threads) < MOST_THREADS and self._queued:
            self._spawn()

    def _spawn(self):
        thread = threading.Thread(
            target=self._reader, name='backgroundclose-read', daemon=True)
        try:
            thread.start()
        except RuntimeError:
            # no thread to be had (a process limit): those there read,
            # or with none the applying thread itself
            return
        self._threads.append(thread)
        self.started += 1

    def stop(self):
        """the one teardown, from the checkout's: the readers told to
        read nothing more, then joined (each ends after the read it is
        in).  A second interrupt while they are joined leaves them to end
        by themselves: each holds only its own filelog's files, which its
        read closes on its way out."""
        with self._cond:
            self._stopping = True
            self._queued.clear()
            self._slots.clear()
            self._held = 0
            self._cond.notify_all()
        threads, self._threads = self._threads, []
        for thread in threads:
            thread.join()

    # reader threads -------------------------------------------------------

    def _reader(self):
        cond = self._cond
        while True:
            with cond:
                while not self._stopping and not self._queued:
                    cond.wait()
                if self._stopping:
                    return
                slot = self._queued.popleft()
            start = self._clock()
            data = error = None
            try:
                data = self._read_held(slot)
            except BaseException as exc:
                error = exc
            duration = self._clock() - start
            with cond:
                if self._stopping:
                    return
                slot.data, slot.error, slot.done = data, error, True
                if data is not None:
                    self.reads.add(duration, len(data))
                cond.notify_all()
            data = error = None

    def _read_held(self, slot):
        """``slot``'s data, its size counted as held from before the read
        (the filelog's index says it): a reader waits while reading it
        would hold more than ``HELD``, unless the applying thread takes
        this very file next (so at most ``HELD`` and that one file are
        held; a file larger than ``HELD`` is read when it is next)"""
        fctx = self._mctx.filectx(slot.name, fileid=slot.node)
        try:
            size = fctx.size()
        except Exception:
            size = 0  # the read says what is wrong, in core's words
        cond = self._cond
        with cond:
            while (not self._stopping and self._held + size > HELD
                   and slot is not self._slots[0]):
                cond.wait()
            if self._stopping:
                return None
            self._held += size
        data = None
        try:
            data = fctx.data()
            return data
        finally:
            with cond:
                if not self._stopping:
                    # what it holds: the data, not the size guessed
                    self._held += (len(data) if data is not None else 0) - size
                    self.peakheld = max(self.peakheld, self._held)
                    cond.notify_all()

    def _read_here(self, name):
        """on the applying thread: core's own read, as its batchget
        makes it"""
        return self._mctx.filectx(name).data()
