# pythonpool.py - Python threads that close files of any kind
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""``PythonPool``: one of the two pools behind the interface pools.py
describes (the other is the C lane's).  See docs/design.rst, "The
pools"."""

import collections
import threading
import time

from .descriptors import (
    drop,
    file_error,
    give_back,
    queue_handed_over,
    take_back_handed,
)
from .stats import StatsBook
from .threads import (
    block_worker_signals,
    lower_own_priority,
    run_as_batch_thread,
    take_pool_role,
)

# how often a wait wakes up to let an interrupt through, in seconds
POLL = 0.1


class PythonPool:
    """Python threads closing files of any kind.  See the module doc."""

    # how long a thread whose start() was interrupted may take to run before
    # it is taken for one that never will (see _settle_starts_locked)
    START_GRACE = 1.0

    native = writes_on_threads = False

    def __init__(self, maxqueue, maxthreads, batch, closefn, owned=None,
                 tracknames=False, clock=time.perf_counter):
        self.maxqueue = maxqueue
        self._clock = clock
        self._maxthreads = maxthreads
        self._batch = batch
        self._closefn = closefn
        self.owned = owned
        # reentrant, for what its conditions do with it: a Ctrl-C on the
        # main thread while Condition.wait() takes a plain Lock back
        # raises without it, and leaving the ``with`` then releases the
        # lock a worker holds (an RLock's is taken back whole, and only
        # its holder may release it)
        self._lock = threading.RLock()
        self._work = threading.Condition(self._lock)  # workers wait for items
        # submitters wait for room
        self._room = threading.Condition(self._lock)
        self._exited = threading.Condition(self._lock)
        self._items = collections.deque()
        # worker thread's ident -> the file it took and has not closed yet;
        # with what is queued, all that is pending (kept by the workers
        # alone, so that a signal in the submitter can never leave it wrong)
        self._closing = {}
        self._idle = 0  # workers waiting for an item
        self._roomwaiters = 0
        self._stopping = False
        # threads listed before their start(); an interrupt in it may have
        # left one that never ran, until _settle_starts_locked()
        self._workers = []
        # how many of them returned from _worker(); stop() waits for all,
        # then joins them (counted by the threads alone)
        self._returned = 0
        self._failures = []
        # name -> files of that name handed over and not closed yet
        self._queuednames = {} if tracknames else None
        self.peak = 0
        self._book = StatsBook(('close-background',))
        self.queue = self
        # nice steps the threads run lower than they began, each taking
        # them as it takes its next file (lower_priority)
        self._lowered = 0

    @staticmethod
    def accepts(target):
        return True

    @property
    def threads(self):
        return len(self._workers) - self._returned

    @property
    def started(self):
        # a thread stays listed once it ran (only one whose start was cut
        # short is dropped), and returns only once the pool stops
        return len(self._workers)

    @property
    def queued(self):
        return len(self._items)

    @property
    def pending(self):
        return len(self._items) + len(self._closing)

    @property
    def failed(self):
        return len(self._failures)

    def failures(self, start=0):
        with self._lock:
            return self._failures[start:]

    def add_background_stats(self, stat):
        stat.merge(self._book.merged()['close-background'])

    # submission ---------------------------------------------------------

    def submit(self, target, name=None, data=None):
        if data is not None:
            # the closer writes it first (writes_on_threads is False)
            raise ValueError('Python threads do not write data')
        handed = False
        try:
            with self._lock:
                try:
                    handed = self._enqueue_locked(target, name)
                except BaseException:
                    # a signal raised after the file was queued: take it
                    # back; no worker can have taken it, the lock is held
                    if (
                        not handed
                        and self._items
                        and self._items[-1][0] is target
                    ):
                        self._taken_back_locked(target, name)
                    raise
        except BaseException as exc:
            if not handed and not isinstance(exc, RuntimeError):
                # interrupted while it waited: the caller's again
                give_back(target, self.owned, self._closefn)
            raise
        return self.pending >= self.maxqueue

    def _enqueue_locked(self, target, name):
        """queue ``target``: True; RuntimeError if no thread is left to
        close it (stopped while this waited for room, or every thread's
        start was cut short)"""
        while self.pending >= self.maxqueue:
            if not self._wait_for_a_close_locked():
                raise RuntimeError('the pool takes no more files')
        # after any wait for room too: a stop() meanwhile (on another
        # thread) may have drained the queue already, and a file queued
        # now would never be closed
        if self._stopping or not self._workers:
            raise RuntimeError('the pool takes no more files')
        # the hand-over: one step (a descriptor leaves ``owned`` in the
        # same one: whoever cleans up after a failure, even once hung
        # closes were left to the threads, must not close it too).  An
        # interrupt after it (in any step below) is taken back by
        # submit(), the lock still held
        if self.owned is not None and type(target) is int:
            queue_handed_over(self._items, (target, name), self.owned,
                              target)
        else:
            self._items.append((target, name))
        queuednames = self._queuednames
        if queuednames is not None and name is not None:
            queuednames[name] = queuednames.get(name, 0) + 1
        pending = self.pending
        if pending > self.peak:
            self.peak = pending
        # wake a parked worker only when the busy ones have more than one
        # file each waiting, and at least a batch waits: a worker that
        # finds work when it finishes a close costs fewer GIL hand-offs
        # than one woken up.  Whoever waits for closes wakes them all.
        if (
            self._idle
            and len(self._items) >= self._batch
            and len(self._items) > len(self._workers) - self._idle
        ):
            self._work.notify()
        return True

    def _taken_back_locked(self, target, name):
        """undo the hand-over of ``target``, the last queued: its
        submitter's again (a descriptor back in ``owned`` in the same step
        that takes it out of the queue, so that a second interrupt leaves
        it either queued or owned, never both)"""
        if self.owned is not None and type(target) is int:
            take_back_handed(self._items, self.owned, target)
        else:
            self._items.pop()
        self._forget_name_locked(name)

    def _forget_name_locked(self, name):
        """one file handed over under ``name`` is closed, or was taken
        back: wait_for(name) must not wait for it any more"""
        queuednames = self._queuednames
        if queuednames is not None and name is not None:
            left = queuednames.get(name, 0) - 1
            if left > 0:
                queuednames[name] = left
            else:
                queuednames.pop(name, None)

    def holds(self, target):
        """whether ``target`` was handed over and is not closed yet.  Where
        the lock cannot be had (held for good by an interrupt at the wrong
        bytecode, before Python 3.10), it says so, and the caller leaves
        the file alone."""
        if not self._lock.acquire(timeout=POLL * 10):
            return True
        try:
            return any(
                taken is target for taken in self._closing.values()
            ) or any(queued is target for queued, _name in self._items)
        finally:
            self._lock.release()

    def _wait_for_a_close_locked(self):
        """with the lock held: wake the workers (parked ones wait for a
        batch otherwise) and wait until one of them finishes a close, or a
        while: True, or False if no thread is left to wait for"""
        self._settle_starts_locked()
        if not self._workers or self._stopping:
            return False
        self._work.notify_all()
        self._roomwaiters += 1
        try:
            # timed: a start cut short is settled, a stop noticed
            self._room.wait(POLL)
        finally:
            self._roomwaiters -= 1
        return True

    def kick(self):
        with self._lock:
            if self._items:
                self._work.notify_all()

    def lower_priority(self, steps):
        with self._lock:
            self._lowered = max(self._lowered, steps)

    # threads ------------------------------------------------------------

    def start(self, count):
        """start threads until ``count`` run, within maxthreads.  A thread
        the system refuses to start (a process limit in a container, little
        address space) stops the starting: how many run"""
        with self._lock:
            return self._start_locked(min(count, self._maxthreads))

    def _start_locked(self, count):
        while self.threads < count and not self._stopping:
            worker = threading.Thread(
                target=self._worker,
                name='backgroundclose-%d' % len(self._workers),
                daemon=True,
            )
            try:
                # listed before start(): a thread that runs must be known
                # to stop(); one that finds itself unlisted leaves at once
                # (see _worker)
                self._workers.append(worker)
                worker.start()
            except (RuntimeError, MemoryError):  # "can't start new thread"
                self._unlist_locked(worker)
                break
            except BaseException:
                # an interrupt cut start() short: the thread may run, or
                # never will
                self._settle_starts_locked()
                raise
        return self.threads

    def _unlist_locked(self, worker):
        if worker in self._workers:
            self._workers.remove(worker)

    def _settle_starts_locked(self, deadline=None):
        """forget the listed threads that never ran

        A thread has an ident from the moment it runs; one still without
        one had its start() cut short by an interrupt, either before the
        system made it or while start() waited for it to run.  Which of
        the two is not known from outside, so it gets START_GRACE seconds
        (or until ``deadline``) to show up; one that shows up later finds
        itself unlisted and returns without touching a file.
        """
        end = None
        interrupted = None
        for worker in list(self._workers):
            while worker.ident is None:
                # bounded, so interrupts wait until it is done: cut short,
                # it would leave a thread listed that never runs, and
                # whoever waits for closes would wait for it
                try:
                    now = time.monotonic()
                    if end is None:
                        end = now + self.START_GRACE
                        if deadline is not None:
                            end = min(end, deadline)
                    if now >= end:
                        self._unlist_locked(worker)
                        break
                    # with the lock held: the thread needs only the GIL
                    time.sleep(0.001)
                except (KeyboardInterrupt, SystemExit) as exc:
                    if interrupted is None:
                        interrupted = exc
        if interrupted is not None:
            raise interrupted

    def _worker(self):
        block_worker_signals()  # first: the owner thread gets Ctrl-C
        take_pool_role()
        run_as_batch_thread()
        lock = self._lock
        lock.acquire()
        if threading.current_thread() not in self._workers:
            # its start() was cut short and _settle_starts_locked() gave up
            # on it: nobody will wait for it, so it touches nothing
            lock.release()
            return
        try:
            clock = self._clock
            closefn = self._closefn
            items = self._items
            closing = self._closing
            me = threading.get_ident()
            # one critical section per close: account for the last close
            # and take the next item together, so that a busy worker needs
            # the GIL once per close
            stat = self._book.mine()['close-background']
            lowered = 0
            while True:
                while not items:
                    if self._stopping:
                        return
                    self._idle += 1
                    self._work.wait()
                    self._idle -= 1
                target, name = items.popleft()
                closing[me] = target
                lower = self._lowered - lowered
                lowered = self._lowered
                lock.release()
                if lower > 0:
                    lower_own_priority(lower)
                error = None
                start = clock()
                try:
                    closefn(target)
                except BaseException as exc:  # raised on the owner
                    error = file_error(name, exc)
                stat.add(clock() - start)
                lock.acquire()
                del closing[me]
                self._forget_name_locked(name)
                if error is not None:
                    self._failures.append(error)
                if self._roomwaiters:
                    self._room.notify_all()
        finally:
            self._returned += 1
            self._exited.notify_all()
            lock.release()

    # completion ---------------------------------------------------------

    def wait(self):
        with self._lock:
            while self.pending:
                if not self._wait_for_a_close_locked():
                    return  # what is left queued, stop() drops

    def wait_for(self, name):
        queuednames = self._queuednames
        if not queuednames or name not in queuednames:
            return
        with self._lock:
            while name in queuednames:
                if not self._wait_for_a_close_locked():
                    return  # what is left queued, stop() drops

    def has_pending_any(self):
        return bool(self._queuednames)

    def stop(self, deadline=None):
        with self._lock:
            self._stopping = True
            self._work.notify_all()
            # submitters waiting for room close their files themselves now
            self._room.notify_all()
            # a double interrupt can leave a start unsettled
            self._settle_starts_locked(deadline)
            while self._returned < len(self._workers):
                # timed: a wait without one may not notice a signal the
                # kernel delivered to another thread
                left = POLL
                if deadline is not None:
                    left = min(left, deadline - time.monotonic())
                    if left <= 0:
                        return False
                self._exited.wait(left)
        for worker in self._workers:
            worker.join()  # returned from _worker() already
        # queued for threads that never ran (each start cut short by an
        # interrupt, so the command is failing): taken back and dropped
        # here as by any interrupt
        items = self._items
        while items:
            with self._lock:
                target, name = items.popleft()
                self._forget_name_locked(name)
            # the pool's, as any file queued: closed by the pool alone
            drop(target, self._closefn)
        return True

    def abandon(self):
        """nothing to do: stop() told the threads to leave once the queue
        is empty, and being daemons they never keep the process from
        exiting"""

    def disowned(self):
        # (pools.py imports this module: looked up as it is needed)
        from .pools import DisownedPool

        return DisownedPool(self._items)
