# failures.py - what failed on any thread, raised once on the owner's
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""The failures of one closer's files (``FileError``), from its pool's
threads and from the threads that ``record()`` their own, raised once each
and in the order they were known, on the thread that made the closer (its
*owner*).  See docs/design.rst, "The closer"."""

import threading


class Failures:
    """failures known so far, and how many of them were raised"""

    def __init__(self, pool):
        self._lock = threading.Lock()
        self.pool = pool
        self.errors = []
        self.raised = 0  # how many of ``errors`` were raised already
        self.frompool = 0  # how many of the pool's failures are known
        self.owner = threading.get_ident()  # where they are raised

    def collect(self):
        """turn the closes the pool saw fail into errors to raise"""
        pool = self.pool
        if pool.failed == self.frompool:
            return
        with self._lock:
            new = pool.failures(self.frompool)
            self.errors.extend(new)
            self.frompool += len(new)

    def record(self, error):
        """keep ``error``, from any thread, after the pool's so far: the
        first to happen is the one raised"""
        self.collect()
        with self._lock:
            self.errors.append(error)

    def raise_on_owner(self):
        """on the owner thread: raise the first failure not raised yet, if
        any; elsewhere nothing"""
        self.collect()
        if (
            self.raised < len(self.errors)
            and threading.get_ident() == self.owner
        ):
            self.raise_next()

    def raise_next(self):
        """raise the first failure not raised yet (the later ones are
        counted as raised: one failure ends the command)"""
        error = self.errors[self.raised]
        self.raised = len(self.errors)
        raise error

    def disown(self, pool):
        """in a forked child: the parent's failures are the parent's to
        raise, and ``pool`` holds nothing of the parent's"""
        self._lock = threading.Lock()
        self.pool = pool
        self.frompool = 0
        self.raised = len(self.errors)
        self.owner = threading.get_ident()
