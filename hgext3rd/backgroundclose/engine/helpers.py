# helpers.py - threads that work ahead of the applying thread
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""``HelperThreads``: the threads of one helper that works ahead of the
applying thread (the checkout's store readers, the directories made ahead
of the writers): started one at a time, each listed before it starts, and
all joined in the teardown's last step, an interrupt there kept for the
caller.  See docs/design.rst, "Helpers ahead"."""

import threading
import time

# how long the teardown waits for a thread whose start() an interrupt cut
# short to show it runs
START_GRACE = 1.0


def notify(cond, every=True):
    """``cond`` notified, all its waiters or one (its lock held), from a
    thread that takes Ctrl-C.  Python 3.9 and 3.10's notify can leave a
    waiter an interrupt cut short in its list, which a later notify fails
    to release: a helper's waiters look again soon anyway, so that
    failure is let go"""
    try:
        if every:
            cond.notify_all()
        else:
            cond.notify()
    except RuntimeError:
        pass


class HelperThreads:
    """the threads running ``target``, named ``name``"""

    def __init__(self, target, name, grace):
        self._target = target
        self._name = name
        # after an interrupt, how long join() waits for a thread still in
        # a system call (a network file system that stopped answering)
        self._grace = grace
        self._threads = []
        self.started = 0  # threads started in all

    def __len__(self):
        return len(self._threads)

    def spawn(self):
        """one more thread: whether it started.  None starts where the
        system has none to give (a process limit): those running go on,
        or the applying thread does the work itself."""
        thread = threading.Thread(
            target=self._target, name=self._name, daemon=True)
        # listed before it starts: an interrupt between the two leaves no
        # thread that join() does not know of
        self._threads.append(thread)
        try:
            thread.start()
        except RuntimeError as exc:
            if exc.__context__ is not None:
                # an interrupt inside start() (its wait for the thread to
                # run), which then failed as it let go: the interrupt goes
                # on, the thread stays listed for join()
                raise exc.__context__
            self._threads.remove(thread)
            return False
        self.started += 1
        return True

    def join(self, stop, interrupted=False):
        """every thread joined, ``stop()`` called before each (again and
        again: an interrupt may cut one short); each thread ends once
        told, after the system call it is in.  An interrupt while they
        are joined is kept and returned (the caller raises it, or not);
        after one (or if ``interrupted`` already), a thread still in its
        call after the grace period is left to end by itself, holding no
        descriptor past it.  A thread whose start() an interrupt cut short
        gets ``START_GRACE`` seconds to show it runs (it then does
        nothing), or never will.  None if nothing interrupted."""
        caught = None
        deadline = time.monotonic() + self._grace if interrupted else None
        threads = self._threads
        pending = list(threads)
        try:
            stop()  # once at least, though no thread ever started
        except (KeyboardInterrupt, SystemExit) as exc:
            caught = exc
            if deadline is None:
                deadline = time.monotonic() + self._grace
        while pending:
            try:
                stop()
                _join_one(pending[0], deadline)
                pending.pop(0)
            except (KeyboardInterrupt, SystemExit) as exc:
                if caught is None:
                    caught = exc
                if deadline is None:
                    deadline = time.monotonic() + self._grace
        del threads[:]
        return caught

    def wait_all(self):
        """every thread joined, however long each takes: for threads
        whose work must be over before the caller's next step (a
        transaction's abort).  An interrupt goes on to the caller, the
        threads not joined yet still listed for the next call.  A thread
        whose start() an interrupt cut short gets ``START_GRACE`` seconds
        to show it runs, or never will."""
        threads = self._threads
        while threads:
            _join_one(threads[0])
            threads.pop(0)


def _join_one(thread, deadline=None):
    """``thread`` joined, until it ends or ``deadline`` (monotonic
    seconds) passes; one whose start() an interrupt cut short gets
    ``START_GRACE`` seconds to show it runs, or never will"""
    unstarted_until = time.monotonic() + START_GRACE
    while True:
        now = time.monotonic()
        timeout = None
        if deadline is not None:
            timeout = deadline - now
            if timeout <= 0:
                return
        try:
            thread.join(timeout)
        except RuntimeError:  # not started (yet)
            if now > unstarted_until:
                return
            time.sleep(0.001)
            continue
        if not thread.is_alive():
            return
