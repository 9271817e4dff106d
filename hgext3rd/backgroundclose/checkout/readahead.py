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

from .. import engine
from ..engine import (
    helpers,
    threads as threadsmod,
    writepolicy as writepolicymod,
)
from ..shared import filesystems, seams

# the most reader threads: enough for the round trips of a store read
# (four or five) to overlap with a writer's, never one per file
MOST_THREADS = 16
# how long a reader waits before it looks again at what it waits for
_LOOK_AGAIN = 0.1
# after an interrupt, how long the teardown waits for readers still in a
# read (a network file system that stopped answering): the closer's grace
GRACE = engine.Closer.GRACE
# the most bytes read ahead and not taken yet, but for the file the
# applying thread takes next (one larger than this is read alone)
HELD = 16 << 20


def read_mode(repo, mode):
    """how the store is read for a checkout whose writers are ``mode``:
    as the writers, but never ahead by measure (adaptive) where the store
    is on a local file system"""
    if mode != engine.ADAPTIVE:
        return mode
    return (engine.INLINE if filesystems.is_local(repo.store.path)
            else mode)


def core_s_read_path(repo, mctx):
    """whether every read a checkout of ``mctx`` makes runs core's own
    code, which reads the store and nothing else: no flag processor of
    another extension's (lfs reads its blobs elsewhere, from a network),
    and no function on the way wrapped or overridden"""
    if seams.flag_processors(repo):
        return False
    # what a read runs through, each core's own or no read ahead: the
    # repository's filelog, the changeset's file context, its data and
    # the filelog's read; each with the object it is looked up on, if any
    # (an instance attribute would stand in for it), and the module of
    # core's that defines it (releases differ in the class: 6.5's
    # repositories get ``file`` from a mixin of localrepo's)
    unfi = repo.unfiltered()
    read_path = (
        (unfi, type(unfi), 'file', localrepo),
        (mctx, type(mctx), 'filectx', context),
        (None, context.filectx, 'data', context),
        (None, filelog.filelog, 'read', filelog),
    )
    for obj, cls, name, module in read_path:
        if not seams.core_s_method(cls, name, module):
            return False
        if obj is not None and name in getattr(obj, '__dict__', ()):
            return False
    return True


def stored_size(fctx):
    """the size the filelog's index gives for ``fctx``'s revision (its
    text as stored, with any copy metadata: no less than its data), read
    without its data; 0 if that fails (the read then says why)"""
    try:
        fl = fctx._filelog
        return max(0, fl._revlog.rawsize(fl.rev(fctx._filenode)))
    except Exception:
        return 0


def file_context(mctx, name):
    """on the applying thread: ``name``'s file context, made as core's
    batchget makes it (``mctx.filectx(name)``), its node looked up in the
    manifest here where the context would look it up later (releases
    whose context takes no node): its read then touches only the store"""
    fctx = mctx.filectx(name)
    if '_fileid' not in vars(fctx):
        fctx._filenode = mctx.filenode(name)
    return fctx


class _Slot:
    """one file to read: its name and context, then its data or
    failure"""

    __slots__ = ('name', 'fctx', 'data', 'error', 'done')

    def __init__(self, name, fctx):
        self.name = name
        self.fctx = fctx
        self.data = None
        self.error = None
        self.done = False


class StoreReads:
    """the data of ``names`` (a checkout's paths, in its order) from
    ``mctx``'s store, taken one after the other by the applying thread
    (``take``).  ``mode``: the writers' (adaptive: read ahead once reads
    wait; background: from the second file; inline: never).  ``ahead``:
    whether another extension leaves the read path to core.  The
    checkout's teardown calls ``stop()`` first, then ``join()``."""

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
        self._held = 0  # bytes read, or being read, and not taken yet
        # The applying thread, which takes Ctrl-C, only ever holds
        # ``_mutex`` in a ``with`` (a C lock's enter and exit, which no
        # signal handler can come between) and waits for a read on
        # ``_wake``, one C call that an interrupt leaves as it was.
        # Condition.wait() and a Condition's ``with`` run Python code
        # between taking the lock and giving it back, where a Ctrl-C can
        # leave it held, or released and then released again.  Readers,
        # which never take a signal, wait on ``_cond``, and look again
        # every ``_LOOK_AGAIN`` seconds: a notification an interrupt cut
        # short costs them that long.
        self._mutex = threading.Lock()
        self._cond = threading.Condition(self._mutex)
        self._wake = threading.Lock()
        self._wake.acquire()
        self._readers = helpers.HelperThreads(
            self._reader, 'backgroundclose-read', GRACE)
        self._began = False  # readers started (or tried)
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
        if self._policy.deferring and not self._began and position:
            # background asked for: from the second file on (the first,
            # read here, fills the repository's caches a read starts
            # with, which core never fills from two threads at once)
            self._start(position)
        if self._readers:
            return self._take_ahead(name)
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
        with self._mutex:  # (readers may count theirs by now)
            self.reads.add(duration, len(data))
        return data

    def _take_ahead(self, name):
        self._give()
        mutex = self._mutex
        waited = None
        while True:
            with mutex:
                slot = self._slots[0]
                if slot.name != name:  # (the checkout's own order broken)
                    raise RuntimeError('read ahead out of order: %r' % name)
                if slot.done:
                    self._slots.popleft()
                    data, error = slot.data, slot.error
                    slot.data = slot.error = slot.fctx = None
                    if data is not None:
                        self._held -= len(data)
                    # a reader may wait for room, or for this file to
                    # be the next one
                    helpers.notify(self._cond)
                    break
                if waited is None:
                    waited = self._clock()
                    self._grow()
            # until a reader is done with a file (released before it,
            # if one was done meanwhile)
            self._wake.acquire()
        if waited is not None:
            with mutex:
                self.waits.add(self._clock() - waited)
        if error is not None:
            try:
                raise error
            finally:
                error = None
        return data

    def _give(self):
        """the readers given the files they may read next, each with its
        file context (made here, the manifest looked up here, never on
        their threads): a few a thread.  A lookup that fails is that
        file's failure, at its turn."""
        want = self._next - 1 + 4 * len(self._readers)
        names = self._names
        mctx = self._mctx
        fresh = []
        while self._given < len(names) and self._given <= want:
            name = names[self._given]
            self._given += 1
            try:
                slot = _Slot(name, file_context(mctx, name))
            except Exception as exc:
                slot = _Slot(name, None)
                slot.error, slot.done = exc, True
            fresh.append(slot)
        if fresh:
            with self._mutex:
                self._slots.extend(fresh)
                self._queued.extend(s for s in fresh if not s.done)
                helpers.notify(self._cond)

    def _start(self, position):
        """read ahead from ``position`` on: two readers, more while the
        applying thread still waits for them.  Once: where no thread
        starts, the applying thread reads on by itself."""
        self._began = True
        self._given = position
        for _ in range(min(2, MOST_THREADS)):
            self._readers.spawn()

    def _grow(self):
        """the applying thread waits for a read: one more reader, within
        the cap (called with the lock held)"""
        if len(self._readers) < MOST_THREADS and self._queued:
            self._readers.spawn()

    def stop(self):
        """the teardown's first step, which never waits (and again
        ``join()``'s first, in case an interrupt cut this one short): the
        readers told to read nothing more, and what they read and was not
        taken let go"""
        with self._mutex:
            self._stopping = True
            for slot in self._slots:
                slot.data = slot.error = slot.fctx = None
            self._queued.clear()
            self._slots.clear()
            self._held = 0
            helpers.notify(self._cond)

    @property
    def started(self):
        """reader threads started in all"""
        return self._readers.started

    def join(self, interrupted=False):
        """the teardown's last step: every reader joined, each after the
        read it is in (helpers.HelperThreads.join: an interrupt meanwhile
        is returned, and after one a read hung past ``GRACE`` is left to
        its thread, which holds no descriptor past its read)"""
        return self._readers.join(self.stop, interrupted)

    # reader threads -------------------------------------------------------

    def _reader(self):
        # a Ctrl-C is the main thread's, never a read's in progress here
        threadsmod.block_worker_signals()
        cond = self._cond
        while True:
            with cond:
                while not self._stopping and not self._queued:
                    cond.wait(_LOOK_AGAIN)
                if self._stopping:
                    return
                slot = self._queued.popleft()
            data, error, duration = self._read_held(slot)
            with cond:
                if self._stopping:
                    return
                slot.data, slot.error, slot.done = data, error, True
                # its filelog (and the text its cache keeps) let go
                slot.fctx = None
                if data is not None:
                    self.reads.add(duration, len(data))
                cond.notify_all()
            self._wake_applier()
            data = error = slot = None

    def _read_held(self, slot):
        """``slot``'s (data, failure, seconds the read took), its size
        counted as held from before the read (the filelog's index says
        it): a reader waits while reading it would hold more than
        ``HELD``, unless the applying thread takes this very file next
        (so at most ``HELD`` and that one file are held; a file larger
        than ``HELD`` is read when it is next).  A failure keeps no frame
        of this thread's but this one's, whose locals are let go."""
        fctx = slot.fctx
        try:
            size = stored_size(fctx)
            cond = self._cond
            with cond:
                while (not self._stopping and self._held + size > HELD
                       and slot is not self._slots[0]):
                    cond.wait(_LOOK_AGAIN)
                if self._stopping:
                    return None, None, 0.0
                self._held += size
            start = self._clock()
            data = None
            try:
                data = fctx.data()
            finally:
                duration = self._clock() - start
                with cond:
                    if not self._stopping:
                        # what it holds: the data, not the size guessed
                        self._held += (
                            len(data) if data is not None else 0) - size
                        self.peakheld = max(self.peakheld, self._held)
                        cond.notify_all()
            return data, None, duration
        except BaseException as exc:
            return None, exc, 0.0
        finally:
            fctx = None

    def _wake_applier(self):
        """the applying thread woken, if it waits (else told to look
        once more when it next would)"""
        try:
            self._wake.release()
        except RuntimeError:  # released already, not taken since
            pass

    def _read_here(self, name):
        """on the applying thread: core's own read, as its batchget
        makes it"""
        return self._mctx.filectx(name).data()
