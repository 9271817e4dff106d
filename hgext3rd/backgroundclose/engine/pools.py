# pools.py - the threads that close what is handed over: Python or C
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Two pools of closing threads behind one interface: ``PythonPool``
(Python threads, any file) and ``LanePool`` (the C lane, descriptors
only, threads that never take the GIL).  The closer (closer.py) decides
what to hand over and how many threads to run; a pool only queues, closes,
counts and stops.  See docs/design.rst, "The pools".

The interface, which both implement:

``queue``
    what takes the files: an object with this ``submit`` and ``failed``
    (the pool itself, or the C lane's own object, so that the closer's
    most frequent calls reach C without a Python frame between)
``native``, ``writes_on_threads``
    whether its threads never take the GIL, and whether they write the
    data handed over with a descriptor (else the closer writes it before
    the hand-over, and ``submit`` takes none)
``accepts(target)``
    whether the pool can close ``target`` (else it is closed inline)
``submit(target, name, data)``
    hand ``target`` over, ``data`` (only for a pool that
    ``writes_on_threads``) to be written into the descriptor first: wait
    for room, queue it and drop it from ``owned`` in one step.  Returns
    whether the pool is full now.  Raises ``RuntimeError`` having done
    nothing when it takes no more files (stopped, or no thread runs): the
    caller closes it.  Interrupted while it waits for room, the file is
    the caller's again: a descriptor in ``owned`` (a seam always passes
    one: without it the pool may leave the descriptor open, as the lane
    cannot tell an interrupt before the hand-over from one just after),
    a file object closed (or discarded) by the pool.
``start(count)``
    start threads until ``count`` run: how many run
``holds(target)``
    whether ``target`` was handed over and is not closed yet
``threads``, ``started``, ``queued``, ``pending``, ``peak``
    threads running now, the most ever running, files queued, files
    handed over and not closed, the most ever pending
``failed``, ``failures(start)``
    how many writes or closes failed; the ``FileError`` of each, from
    the ``start``-th on
``wait()``, ``wait_for(name)``, ``has_pending_any()``
    wait until every file handed over so far, or every one handed over
    under ``name`` (``tracknames``), is closed
``kick()``
    no more files may come for a while: close those queued now
``lower_priority(steps)``
    closes burn CPU: each thread runs ``steps`` nice steps lower from the
    next file it takes (Linux; never back up), so that the thread that
    submits gets a core first
``stop(deadline)``
    wait until every file handed over is closed, then join the threads:
    True, or False once ``deadline`` (``time.monotonic()``) passed, the
    threads still running (call again, or ``abandon()``).  The caller
    submits nothing more once it called stop(); a submitter still waiting
    for room gets ``RuntimeError``.
``abandon()``
    leave closes that hang to the threads, which exit once they return
``add_background_stats(stat)``
    add the time the threads spent closing to the ``OpStat`` ``stat``
``disowned()``
    in a forked child: a pool that takes no file, and that never
    touches what the parent's pool held (it only keeps the parent's
    queued file objects from being finalized in the child)
"""

import os
import time

from . import native
from .descriptors import FileError
from .pythonpool import PythonPool

# files queued before a parked Python worker is woken up
BATCH = 4
# the same for a parked C lane thread (see make_pool)
LANE_BATCH = 32


class LanePool:
    """The C lane (``_closelane.Lane``): descriptors only.  See the module
    doc; the lane's own documentation says how each call waits."""

    native = writes_on_threads = True

    def __init__(self, maxqueue, maxthreads, batch, closefn=None,
                 owned=None, tracknames=False, clock=None):
        # for wait_for(), each name's latest token (the lane records it as
        # it takes the descriptor)
        self._latesttokens = {} if tracknames else None
        self._lane = self.queue = native.lane_module.Lane(
            maxqueue, maxthreads, batch, owned, self._latesttokens
        )
        self.maxqueue = maxqueue
        self.started = 0

    @staticmethod
    def accepts(target):
        return type(target) is int

    threads = property(lambda self: self._lane.threads)
    queued = property(lambda self: self._lane.queued)
    pending = property(lambda self: self._lane.pending)
    peak = property(lambda self: self._lane.peak)
    failed = property(lambda self: self._lane.failed)

    def failures(self, start=0):
        return [
            FileError(
                name,
                OSError(code, os.strerror(code)),
                'writing' if writing else 'closing',
            )
            for name, code, writing in self._lane.failures(start)
        ]

    def add_background_stats(self, stat):
        lane = self._lane
        if lane.closed:
            stat.add_many(lane.closed, lane.seconds, lane.maxseconds)

    def submit(self, target, name=None, data=None):
        # waits for room without the GIL; queues and drops the descriptor
        # from owned in one step, or raises having done neither (then it
        # is still the caller's, in owned)
        return self._lane.submit(target, name, data)

    def holds(self, target):
        # file objects are never handed to the lane, and a descriptor is
        # the lane's from the step that queues it
        return False

    def kick(self):
        self._lane.kick()

    def lower_priority(self, steps):
        self._lane.lower_priority(steps)

    def start(self, count):
        try:
            running = self._lane.start(count)
        except OSError:  # not one thread could be started
            running = 0
        self.started = max(self.started, running)
        return running

    def wait(self):
        self._lane.wait()

    def wait_for(self, name):
        latest = self._latesttokens
        if latest is None:
            return
        token = latest.get(name)
        if token is None:
            return
        # every descriptor handed over up to the name's latest: a few more
        # than needed at most, as the lane's queue is a FIFO
        self._lane.wait(token)
        if latest.get(name) == token:
            del latest[name]

    def has_pending_any(self):
        return bool(self._latesttokens) and self._lane.pending > 0

    def stop(self, deadline=None):
        left = -1.0
        if deadline is not None:
            left = max(0.0, deadline - time.monotonic())
        return self._lane.stop(left)

    def abandon(self):
        # the lane takes nothing more; its threads, detached, exit once
        # their closes return, and the last one releases it
        self._lane.abandon()

    def disowned(self):
        # the lane's threads and mutex are the parent's
        return DisownedPool(())


class DisownedPool:
    """a forked child's pool: the parent's threads do not exist here, and
    its queued files stay referenced, never finalized (a file object's
    finalizer would flush its buffer into the file the child shares with
    the parent).  Takes nothing: the child closes inline."""

    native = writes_on_threads = False
    threads = started = queued = pending = peak = failed = 0

    def __init__(self, parentitems):
        self._parentitems = parentitems
        self.queue = self

    @staticmethod
    def accepts(target):
        return False

    def failures(self, start=0):
        return []

    def add_background_stats(self, stat):
        pass

    def submit(self, target, name=None, data=None):
        raise RuntimeError('a forked child hands nothing over')

    def holds(self, target):
        return False

    def start(self, count):
        return 0

    def kick(self):
        pass

    def lower_priority(self, steps):
        pass

    def wait(self):
        pass

    def wait_for(self, name):
        pass

    def has_pending_any(self):
        return False

    def stop(self, deadline=None):
        return True

    def abandon(self):
        pass

    def disowned(self):
        return self


def make_pool(native_wanted, maxqueue, maxthreads, closefn, owned,
              tracknames, clock):
    """the C lane where asked for and built, else Python threads"""
    if native_wanted and native.lane_module is not None:
        # a wake-up costs the submitter a system call and its thread a
        # switch, where a thread that finds work as its close returns costs
        # nothing: the lane wakes its threads for a batch, at most a
        # quarter of the queue (a small one would fill first)
        batch = max(1, min(LANE_BATCH, maxqueue // 4))
        return LanePool(maxqueue, maxthreads, batch, closefn, owned,
                        tracknames, clock)
    return PythonPool(maxqueue, maxthreads, BATCH, closefn, owned,
                      tracknames, clock)
