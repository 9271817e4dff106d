# closer.py - close files inline or on a pool's threads, adaptively
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""The ``Closer``: what the seams hand every file to.  It asks its
``Policy`` (policy.py) whether to close each file on the calling thread or
hand it to its pool (pools.py), sizes the pool, bounds what is pending to
``maxqueue`` files (and to what the descriptor limit leaves), and raises
what failed elsewhere on the thread that made it.  ``finish()`` is the one
way to end it.  See docs/design.rst, "The closer".
"""

import contextlib
import enum
import os
import sys
import threading
import time
import weakref

from . import (
    native,
    policy as policymod,
    pools,
)
from .descriptors import (
    FileError,  # noqa: F401 (engine.closer.FileError, as callers knew it)
    close_quietly,
    close_target,
    descriptor_room,
    give_back,
    open_owned,
    owned_closer,
    write_into,
)
from .failures import Failures
from .handovers import HANDED, PROBE, HandOvers
from .inline import InlineCloses
from .policy import ADAPTIVE
from .sizing import PoolSizer
from .stats import StatsBook, stat_clock
from .threads import deliver_again

# descriptors kept free for everything else the process does
_FD_RESERVE = 32


class State(enum.Enum):
    """where a closer is in its life (docs/design.rst, "States")"""

    # takes files, closes them inline or hands them over
    OPEN = 'open'
    # finish() began: no more hand-overs, a file that still comes is
    # closed inline; waits for what was handed over, then joins
    STOPPING = 'stopping'
    # every close done, every thread joined; finish() again only raises
    # what failed since
    FINISHED = 'finished'
    # finished, closes that hang left to their threads, which close those
    # files whenever their closes return
    ABANDONED = 'abandoned'
    # a forked child's copy: the parent's threads are not here, the child
    # closes inline and waits for nothing
    DISOWNED = 'disowned'


OPEN, STOPPING, FINISHED, ABANDONED, DISOWNED = State

# every closer of this process, so that a forked child can disown them
_live = weakref.WeakSet()


def _disown_after_fork():
    """in a forked child: the parent's threads do not exist here, and its
    locks may have been held by one of them at the fork; nothing of a
    closer the parent had may be waited for, locked or closed by the child"""
    for closer in list(_live):
        try:
            _disown(closer)
        except Exception:  # one closer's failure must not spare the others
            pass


if hasattr(os, 'register_at_fork'):
    os.register_at_fork(after_in_child=_disown_after_fork)


def _any_running():
    """whether a closer of this process has not ended yet"""
    try:
        closers = list(_live)
    except RuntimeError:  # one made meanwhile: some closer is running
        return True
    return any(
        closer.state is not FINISHED and closer.state is not ABANDONED
        for closer in closers
    )


def interrupt_again(exc):
    """what a finalizer calls with what it caught: a Ctrl-C is delivered
    again while a closer has not ended (threads.deliver_again); once
    every closer ended, it is dropped, as a finalizer of core's drops
    one (the abort callback's take-back, the end of a command server's
    command)"""
    deliver_again(exc, _any_running)


native_available = native.available


class Closer:
    """Close files inline or on a pool's threads.  See the module doc."""

    # finish(): after an interrupt, the most seconds it still waits for
    # closes that hang
    GRACE = 5.0

    def __init__(
        self,
        policy=ADAPTIVE,
        threads=4,
        maxthreads=64,
        maxqueue=384,
        threshold=30e-6,
        window=16,
        minfilecount=2048,
        expectedcount=-1,
        clock=stat_clock,
        closefn=close_target,
        fdroom=descriptor_room,
        tracknames=False,
        native=False,
        owned=None,
        sample=1,
        timeall=False,
    ):
        if maxqueue < 1:
            raise ValueError('maxqueue must be positive')
        # what to do, and when: no thread, lock or file in there (others
        # may read it as ``decisions``, and change nothing)
        self._policy = self.decisions = policymod.Policy(
            policy,
            threads,
            maxthreads,
            threshold,
            window,
            minfilecount,
            expectedcount,
            clock,
            sample=sample,
        )
        room = fdroom() if callable(fdroom) else fdroom
        if room is not None:
            # half of what is left: the submitters open files too
            maxqueue = max(1, min(maxqueue, (room - _FD_RESERVE) // 2))
        self.maxqueue = maxqueue
        self._clock = clock
        # the submitter's descriptors not handed over yet (see close())
        self.owned = owned
        # thread ident -> the set of descriptors one of core's writer
        # threads owns (owning()), for the closes made here for it
        self._threadsets = {}
        if owned is not None:
            self._closefn = owned_closer(closefn, owned, self._threadsets)
        else:
            self._closefn = closefn
        # the policy's decisions and the failures known, between threads
        self._lock = threading.Lock()
        # the one record of where the closer is (State); changed with
        # _lock held
        self.state = OPEN
        # the pool closes what was handed over, no longer in ``owned``:
        # with ``closefn`` itself (its own closes forget nothing)
        self._pool = pools.make_pool(
            native, maxqueue, self._policy.maxthreads, closefn,
            owned, tracknames, clock,
        )
        # how many threads it runs
        self._sizer = PoolSizer(self._policy, self._pool, self._lock, maxqueue)
        # what failed, raised on the thread that made the closer
        self._failures = Failures(self._pool)
        self._owner = self._failures.owner
        self._book = StatsBook(('close',))
        # the closes on this thread, most untimed
        self._inline = InlineCloses(
            self._policy, self._sizer, self._pool, self._lock, self._book,
            clock, self._closefn, timeall, clock is stat_clock,
        )
        # asking the policy, and the runs of hand-overs it grants
        self._handovers = HandOvers(
            self._policy, self._pool, self._sizer, self._lock, self._book,
            clock, self._owner, maxqueue,
        )
        # what takes the files, for the hand-overs made without asking
        self._queue = self._pool.queue
        # whether the pool's threads write the data handed over with a
        # descriptor (else the closer writes it, before the hand-over)
        self._poolwrites = self._pool.writes_on_threads
        # whether any file was handed over: until then the pool has no
        # failure to ask about
        self._handedany = False
        _live.add(self)
        # the threads of a closer that closes in the background from the
        # outset start at start() or the first close(), never in here: an
        # interrupt as the constructor returns would leave threads running
        # that no owner ever finishes
        self._startpending = self._policy.background

    # statistics ---------------------------------------------------------

    def stats(self):
        """merged statistics: ``close`` (time submitters spent closing or
        waiting; the inline closes not sampled, unless ``timeall``, and the
        hand-overs made without asking are counted, not timed) and
        ``close-background`` (time spent on the pool's threads)"""
        merged = self._book.merged()
        handovers = self._handovers
        merged['close'].count += (
            self._inline.untimedcount + handovers.counted
            + handovers.uncounted()
        )
        merged['close-background'] = background = type(merged['close'])()
        self._pool.add_background_stats(background)
        return merged

    @property
    def native(self):
        """whether descriptors are closed on threads without the GIL"""
        return self._pool.native

    @property
    def closes_cheap(self):
        """closing inline, nothing pending, closes measured cheap: a seam
        may leave the next files to core (session.py)"""
        return self._policy.closes_cheap() and not self.pending

    @property
    def mode(self):
        """what the closer is doing now: 'inline' or 'background'"""
        return self._policy.mode

    @property
    def threadcount(self):
        """the most threads that ran at once"""
        return self._pool.started

    @property
    def lowered(self):
        """whether the threads were told to run at a lower priority
        (closes burn CPU: sizing.py)"""
        return self._sizer.lowered

    @property
    def pending(self):
        """how many files were handed over and are not closed yet"""
        return self._pool.pending

    @property
    def peakpending(self):
        """the most files handed over and not closed at once"""
        return self._pool.peak

    @property
    def finished(self):
        """finish() ran to its end: every close done or left to its
        thread, every thread joined or left"""
        return self.state is FINISHED or self.state is ABANDONED

    @property
    def abandoned(self):
        """finish() left closes that hang to the threads"""
        return self.state is ABANDONED

    @property
    def errors(self):
        self._failures.collect()
        return list(self._failures.errors)

    # submission ---------------------------------------------------------

    def close(self, target, name=None, data=None):
        """close ``target`` (a descriptor or a file object) now or later

        ``data`` (bytes, with a descriptor only) is written into it first.
        ``name`` is used in the error if the write or close fails.  The
        file must not be used by the caller after this call, even when it
        raises: the file is always closed or handed over first, then an
        earlier background failure is raised (on the owner thread only).
        The one exception: an interrupt while a descriptor waits for room
        in a full pool leaves it open and in ``owned``, the submitter's to
        clean up.
        """
        if (
            self._handovers.left
            and type(target) is int
            and (data is None or self._poolwrites)
            and self.state is OPEN
            and not self._handovers.shared
            and threading.get_ident() == self._owner
        ):
            handovers = self._handovers
            # most descriptors once the pool is in use: granted a run
            # without asking, so none of the policy's calls, lock or clock
            try:
                full = self._queue.submit(target, name, data)
            except RuntimeError:
                # the pool stopped meanwhile (finish() on another thread):
                # the long way below closes it here
                handovers.end_run()
            else:
                # counted once handed over: one that raised was not
                handovers.left -= 1
                if full:
                    # full: the next file goes the long way, which grows
                    # the pool
                    handovers.end_run(cut=True)
                # the check at the end of close(), inline here: this path
                # is the one most files take while the pool is in use
                failures = self._failures
                if (
                    self._queue.failed != failures.frompool
                    or failures.raised < len(failures.errors)
                ):
                    failures.raise_on_owner()
                return
        if self._startpending:
            try:
                self.start()
            except BaseException:
                # interrupted while a thread started: the file is still ours
                give_back(target, self.owned, self._closefn)
                raise
        if self._policy.background:
            self._submit(target, name, data)
        elif (
            data is None
            and self._inline.left > 0
            and threading.get_ident() == self._owner
        ):
            # inline and not sampled: the path most files of a fast file
            # system take
            self._inline.untimed(target, name)
        else:
            if data is not None:
                write_into(target, name, data, self._closefn)
            self._inline.sampled(target, name, self._clock(), False)
            self._inline.left = self._policy.sample_every - 1
        failures = self._failures
        if (
            self._handedany and self._queue.failed != failures.frompool
        ) or failures.raised < len(failures.errors):
            failures.raise_on_owner()

    def start(self):
        """start the threads a closer that closes in the background from
        the outset begins with (``close()`` does, if not done yet): for an
        owner that wants to know now whether any thread starts"""
        with self._lock:
            if self._startpending and self.state is OPEN:
                # a start interrupted half-way is tried again
                self._sizer.start_missing()
            # only once it returned: interrupted, the next close tries again
            self._startpending = False

    def _submit(self, target, name, data=None):
        pool = self._pool
        if data is not None and not self._poolwrites:
            # written on this thread, before the hand-over is timed: the
            # policy weighs what handing over costs, not the write
            write_into(target, name, data, self._closefn)
            data = None
        start = self._clock()
        probing = False
        # after finish() nobody is left to close it later: close it here
        if (
            self._policy.background
            and self.state is OPEN
            and pool.accepts(target)
        ):
            # from here on, the pool may hold failures to raise
            self._handedany = True
            outcome = self._handovers.hand_over(
                target, name, data, start, self.owned, self._closefn
            )
            if outcome is HANDED:
                return
            probing = outcome is PROBE
        if data is not None:
            write_into(target, name, data, self._closefn)
        self._inline.sampled(target, name, start, probing)

    def holds(self, target):
        """whether ``target`` was handed over and is not closed yet"""
        return self._pool.holds(target)

    # completion ---------------------------------------------------------

    def record(self, error):
        """keep ``error`` (a FileError) to be raised on the owner thread"""
        self._failures.record(error)

    def open_owned(self, path, flags, mode=0o666):
        """``os.open(path, flags, mode)``, the descriptor not inheritable,
        added to ``owned`` in the same step where the C lane is built"""
        return open_owned(path, flags, self.owned, mode)

    @contextlib.contextmanager
    def owning(self, owned):
        """on a thread that hands files over beside the owner (one of
        core's writer threads, which no signal reaches): the descriptors
        it gives close() are in ``owned``, its own set, not the closer's.
        A hand-over leaves them there (the thread forgets each once
        close() returned); a close made here drops them from it."""
        ident = threading.get_ident()
        self._threadsets[ident] = owned
        try:
            yield
        finally:
            self._threadsets.pop(ident, None)

    def close_quietly(self, target):
        """close ``target`` here, on a path that is already failing (and
        drop it from ``owned``)"""
        close_quietly(target, self._closefn)

    def failed(self):
        """whether any close failed, or any failure was recorded, so far"""
        self._failures.collect()
        return bool(self._failures.errors)

    def raise_failure(self):
        """on the owner thread: raise the first failure not raised yet, if
        any (a thread that writes but never submits, the main thread of a
        parallel apply, asks here)"""
        self._failures.raise_on_owner()

    def wait(self):
        """wait until every file handed over so far is closed; the closer
        goes on (finish() ends it)"""
        self._pool.wait()
        self._failures.collect()

    def wait_for(self, name):
        """wait until no file handed over under ``name`` is still open

        Only for a closer made with ``tracknames=True``; the caller is the
        thread that hands files of that name over, so none can be added
        while it waits.
        """
        self._pool.wait_for(name)

    def has_pending_any(self):
        """whether any file handed over under a name may not be closed yet"""
        return self._pool.has_pending_any()

    def finish(self, failing=False, on_interrupt=None, interrupted=False):
        """the one way to finish: close everything handed over, join every
        thread, then, unless ``failing``, raise the first failure not
        raised yet (a FileError naming the file)

        Interrupts while it waits are absorbed, and the first is raised
        once it is done: whoever cleans up next (a transaction rolling
        back) must find every file handed over closed.  After an interrupt
        it waits at most ``GRACE`` seconds more: closes that still hang
        then (a hard-mounted NFS server gone away) are left to their
        threads, which alone close those files, whenever their closes
        return.  Files submitted later are closed inline; calling it again
        only raises what failed since.  ``on_interrupt`` is called at the
        first interrupt it absorbs (a closer whose closes write files is
        told to write no more).  ``interrupted``: an interrupt was caught
        elsewhere already (finishing another closer): bounded too.
        """
        absorbed = None
        deadline = None
        if interrupted or isinstance(
            sys.exc_info()[1], (KeyboardInterrupt, SystemExit)
        ):
            # finishing because of an interrupt caught elsewhere (a
            # submitter waiting for room in a full queue): bounded too
            deadline = time.monotonic() + self.GRACE
        told = False  # the first interrupt's follow-up done
        while not self.finished:  # each end state is final
            try:
                if absorbed is not None and not told:
                    # in here, not in the handler below: a second
                    # interrupt while it runs is absorbed too, and it is
                    # done again (``on_interrupt`` may be called twice)
                    deadline = time.monotonic() + self.GRACE
                    if on_interrupt is not None:
                        on_interrupt()
                    told = True
                if self._stop(deadline):
                    self._enter(FINISHED)
                elif deadline is None or time.monotonic() < deadline:
                    # not out of time: another thread's stop() joins the
                    # threads (the lane says so at once), not a hang
                    time.sleep(0.001)
                else:
                    self._abandon()
            except (KeyboardInterrupt, SystemExit) as exc:
                # only interrupts are absorbed: anything else would come
                # back at every try
                if absorbed is None:
                    absorbed = exc
        failures = self._failures
        failures.collect()
        if absorbed is not None:
            raise absorbed
        if not failing and failures.raised < len(failures.errors):
            failures.raise_next()

    def _enter(self, state):
        """the closer is in ``state`` from now on (an end state is
        final)"""
        with self._lock:
            if self.state is not FINISHED and self.state is not ABANDONED:
                self.state = state

    def _stop(self, deadline):
        """stop taking files, wait until every file handed over is closed
        and join the threads: True, or False once ``deadline`` (of
        time.monotonic()) has passed, if any"""
        with self._lock:
            if self.state is OPEN:
                self.state = STOPPING
            self._sizer.stopping = True
            self._handovers.end_run()
        return self._pool.stop(deadline)

    def _abandon(self):
        """closes hang past the grace period: leave them, and the files
        still queued behind them, to the threads"""
        self._pool.abandon()
        # once it returned: interrupted, the next try abandons again
        self._policy.reason = policymod.HUNG_LEFT
        self._enter(ABANDONED)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, exc_tb):
        self.finish(failing=exc_type is not None)
        return False


def _disown(closer):
    """forget every thread, lock and queued file of ``closer``: this
    process is a forked child of the one that made it (see
    _disown_after_fork); whatever the child still closes, it closes
    inline (a closer that had ended stays so)"""
    # first: should the rest fail, nothing starts a thread or takes
    # the parent's lock (the sizer's) from here on; the parent's sizer
    # too, which the inline closes ask until they are given the new one
    if closer.state is OPEN or closer.state is STOPPING:
        closer.state = DISOWNED
    closer._sizer.stopping = True
    closer._lock = threading.Lock()
    # the parent's writer threads do not exist here
    closer._threadsets.clear()
    closer._book.disown()
    closer._pool = closer._pool.disowned()
    closer._sizer = PoolSizer(
        closer._policy, closer._pool, closer._lock, closer.maxqueue
    )
    closer._sizer.stopping = True
    closer._inline.disown(closer._pool, closer._sizer, closer._lock)
    closer._queue = closer._pool.queue
    closer._poolwrites = closer._pool.writes_on_threads
    closer._failures.disown(closer._pool)
    closer._handedany = False
    closer._policy.disown()
    closer._owner = closer._failures.owner
    # no run granted goes on here; those counted so far stay counted
    counted = closer._handovers.counted + closer._handovers.uncounted()
    closer._handovers = HandOvers(
        closer._policy, closer._pool, closer._sizer, closer._lock, closer._book,
        closer._clock, closer._owner, closer.maxqueue,
    )
    closer._handovers.counted = counted
