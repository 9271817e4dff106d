# writepolicy.py - whether a stream apply hands whole files to writers
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""The write policy, beside the closer's (policy.py): whether the thread
that applies a stream, or an update, writes each file itself or hands it
whole to writer threads, from how long opening files waits.  Clock in,
decision out, as the closer's policy.
"""

from .policy import ADAPTIVE, BACKGROUND, INLINE, POLICIES, SAMPLE


class WritePolicy:
    """whether a stream apply hands whole files to writer threads

    Opening a file on a network file system (sshfs, NFS) is a round trip,
    and so is each directory made for it: the thread that reads the stream
    waits for them one after the other, however its closes are spread.
    Writer threads open, write and close whole files instead, many at a
    time, while the stream goes on.  That costs the reading thread a copy
    of each file's data and a hand-over, which only pays when opens wait.

    ``mode``: ``adaptive`` (opens are timed, one in ``sample`` while they
    are cheap, and writers start once opening a file, with its
    directories, waits ``threshold`` seconds on average), ``background``
    (from the first file) or ``inline`` (never).  What counts is waiting,
    wall time less the opening thread's CPU time: an open that burns CPU
    (a scan) would only take turns at the same cores.
    """

    # weight of one timed open in the estimate
    SMOOTHING = 1.0 / 8
    # opens timed before the estimate may decide
    FIRST = 8

    def __init__(self, mode=ADAPTIVE, threshold=100e-6, sample=SAMPLE):
        if mode not in POLICIES:
            raise ValueError('unknown policy %r' % (mode,))
        self.mode = mode
        self.threshold = threshold
        self.sample = max(1, sample)
        self.deferring = mode == BACKGROUND
        # smoothed wait per open (seconds), and opens it counts
        self.estimate = 0.0
        self.timed = 0
        self._untimed = 0
        # opens may be slow (one was, or the estimate nears a decision):
        # each is timed in wall and CPU time while so
        self._close = False
        # what the latest open timed in CPU time showed: that its wall time
        # was mostly waiting (then wall time alone tells near a decision)
        self._wallwaits = False

    def time_next(self):
        """how to time the open about to happen: None (not at all),
        ``'wall'`` or ``'cpu'`` (wall and CPU time; a system call)"""
        if self.mode != ADAPTIVE or self.deferring:
            return None
        if self._untimed > 0:
            self._untimed -= 1
            return None
        # one open in ``sample``, every one once the estimate is a quarter
        # of the way to the threshold (a decision may be near)
        self._untimed = (
            0 if self.estimate * 4 > self.threshold else self.sample - 1
        )
        return 'cpu' if self._close else 'wall'

    def opens_cheap(self):
        """no writer threads, and none to be started soon: told never to
        start them, or ``FIRST`` opens timed and well below the
        threshold"""
        if self.deferring:
            return False
        if self.mode == INLINE:
            return True
        return (
            self.mode == ADAPTIVE
            and self.timed >= self.FIRST
            and self.estimate * 4 <= self.threshold
        )

    def learn(self, wall, cpu=None, blocked=None):
        """an open (and its directories) took ``wall`` seconds, ``cpu`` of
        them on the opening thread's CPU, if timed so; ``blocked``: whether
        the thread slept in the kernel meanwhile (False: whatever it did
        not spend on the CPU, it spent waiting for one, on a busy machine),
        None if unknown.  True when writers should start now."""
        if cpu is None and wall * 2 > self.threshold:
            # maybe a wait, maybe a scan: time the next ones in CPU too,
            # and let them decide
            self._close = True
            self._untimed = 0
            return False
        wait = wall - (cpu or 0.0)
        if blocked is False:
            wait = 0.0  # preempted, not waiting on the file system
        if cpu is not None:
            self._wallwaits = wait * 2 > wall
        # a thread preempted in one open is not a slow file system
        wait = max(0.0, min(wait, self.threshold * 4))
        self.timed += 1
        # from zero: one slow open among the first (a preempted thread)
        # does not start writers on its own
        self.estimate += (wait - self.estimate) * self.SMOOTHING
        if self.estimate * 4 > self.threshold:
            # a decision may be near: time the next ones.  In CPU time too,
            # so that only waiting counts, unless the latest open so timed
            # showed waiting: an open that makes directories on a local
            # disk spends tens of us on the CPU, which wall time alone would
            # count, keeping the estimate here and every open timed; an
            # open that waits 25 to 50 us needs no more system calls to
            # tell.  One slow enough to be checked anyway stays checked.
            self._untimed = 0
            if not self._wallwaits:
                self._close = True
            elif cpu is not None and wall * 2 <= self.threshold:
                self._close = False
        elif cpu is not None:
            # cheap again: wall time only, which needs no system call
            self._close = False
        if (
            not self.deferring
            and self.timed >= self.FIRST
            and self.estimate > self.threshold
        ):
            self.deferring = True
            return True
        return False
