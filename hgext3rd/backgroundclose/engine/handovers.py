# handovers.py - handing one file to a closer's pool
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""A closer's hand-overs: asking its policy whether a file goes to the
pool, timing what handing it over cost, and the runs of hand-overs the
policy grants without asking (docs/design.rst, "The closer")."""

import threading

from .descriptors import give_back
from .policy import ADAPTIVE

# what HandOvers.hand_over() did with a file
HANDED = 'handed'
PROBE = 'probe'
INLINE = 'inline'


class HandOvers:
    """the hand-overs of one closer: its ``policy``, ``pool``, ``sizer``
    (sizing.py) and ``lock``; ``book`` the stats book its close times go
    to, ``clock`` what times them, ``owner`` the thread that made it.

    A run granted without asking (``left``) goes straight to the pool,
    untimed, and is counted by the next file that asks (owner thread
    only; none once another thread submitted too, which also ends a run
    granted before).  Granted while a report times every file as well:
    such a hand-over never waits for room (the one before it left some,
    and no other thread submits), so what it costs the writer is one call,
    and the waits the report shows are all timed by the files that ask
    (a full pool ends the run)."""

    def __init__(self, policy, pool, sizer, lock, book, clock, owner,
                 maxqueue):
        self._policy = policy
        self._pool = pool
        self._queue = pool.queue
        self._sizer = sizer
        self._lock = lock
        self._book = book
        self._clock = clock
        self._owner = owner
        self._maxqueue = maxqueue
        # hand-overs left before the next file that asks, and how many
        # the current run was granted (read by Closer.close() directly)
        self.left = 0
        self.granted = 0
        # the last run ended early, on a full pool: the next file's wait
        # for room stands for itself alone
        self.cut = False
        # a thread other than the owner submitted: every file asks
        self.shared = False
        # hand-overs made without asking and counted since
        self.counted = 0

    def uncounted(self):
        """hand-overs made without asking that no file asked after yet"""
        return self.granted - self.left

    def end_run(self, cut=False):
        """no more hand-overs without asking until the next file that asks
        grants some: those made are still counted by it (or by
        uncounted()); ``cut``: ended by a full pool"""
        self.granted -= self.left
        self.left = 0
        if cut:
            self.cut = True

    def hand_over(self, target, name, data, start, owned, closefn):
        """hand ``target`` to the pool, unless it is to be closed inline:
        HANDED, PROBE (time it inline for a probe) or INLINE.  If this
        raises, ``target`` was either handed over or is still the caller's
        (in ``owned``, or closed by the pool with ``closefn``): never
        closed twice.  ``start``: when the close began."""
        try:
            asked = self._ask(threading.get_ident() == self._owner)
            if type(asked) is str:
                return asked  # PROBE or INLINE
            stands, granted = asked
            pool = self._pool
            if (
                pool.pending >= self._maxqueue
                and pool.threads < self._policy.maxthreads
            ):
                # the pool is too small for this latency: grow it now
                # (closes that hang keep it full: a thread a file at most)
                with self._lock:
                    self._sizer.start(1)
        except BaseException:
            # interrupted before the hand-over (sizing the pool starts
            # threads, and waits for them): the file is still ours
            give_back(target, owned, closefn)
            raise
        began = self._clock()
        try:
            full = self._queue.submit(target, name, data)
        except RuntimeError:
            # the pool takes no more (the closer finished on another
            # thread, or no thread could be started)
            return INLINE
        # a file that stands for a run of hand-overs is timed around the
        # submit alone for the policy: the window's sizing above may start
        # a thread, which would weigh as much as the whole run.  One on
        # its own is timed from the start of its close, as every file is
        # when each asks.  The stats (a report) get the whole close.
        end = self._clock()
        self._book.mine()['close'].add(end - start)
        if self._policy.policy == ADAPTIVE:
            # unlocked: a race between two submitters only blurs it
            self._policy.learn_handover(
                end - (began if stands > 1 else start), stands
            )
        if granted and not full:
            # the count first: an interrupt in between grants nothing (the
            # closer's routine path also refuses once it is stopping)
            self.granted = granted
            self.left = granted
        return HANDED

    def _ask(self, owner):
        """count a file about to be handed over (and the hand-overs made
        without asking before it), sizing the pool at every window:
        PROBE if the policy wants it closed inline for a probe, INLINE if
        closing went back inline meanwhile or the closer is stopping, else
        what its hand-over time stands for and how many hand-overs may
        follow without asking.  ``owner``: the submitter made the closer."""
        with self._lock:
            policy = self._policy
            routine = 0
            if owner:
                # the hand-overs made without asking since the last file
                # that asked came before this one: counted first
                routine = max(0, self.granted - self.left)
                self.granted = self.left = 0
                self.counted += routine
            else:
                # another thread submits too: from now on every file asks,
                # so that the policy counts them in the order they come
                self.shared = True
            # what this file's hand-over time stands for in the estimate
            stands = 1 if self.cut else routine + 1
            self.cut = False
            sizer = self._sizer
            if not policy.background or sizer.stopping:
                # read unlocked by the closer: meanwhile a probe sent
                # closing back inline, or the closer stopped.  Closed by
                # the caller
                if routine:
                    sizer.account(routine)
                return INLINE
            if policy.take_probe():
                if routine:
                    sizer.account(routine)
                return PROBE
            sizer.account(routine + 1)
            granted = 0
            if owner and not self.shared:
                granted = policy.routine_handovers()
            return stands, granted
