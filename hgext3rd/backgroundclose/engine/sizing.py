# sizing.py - how many threads a closer's pool runs
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Starting a closer's threads when its policy asks for them
(docs/design.rst, "The closer")."""

from .threads import LOWER_BY


class PoolSizer:
    """the threads of ``pool`` (pools.py), as many as ``policy`` asks for,
    within its cap; ``lock`` is the closer's, held by every method but
    ``learn_inline``, which takes it.  A thread the system refuses to
    start (a process limit in a container, little address space) caps the
    pool at what runs; with no thread at all the closer closes inline from
    then on, and the apply goes on."""

    def __init__(self, policy, pool, lock, maxqueue):
        self._policy = policy
        self._pool = pool
        self._lock = lock
        # a backlog: more than this many files queued
        self._halfqueue = maxqueue // 2
        # the closer stopped: a refusal then says nothing of the system
        self.stopping = False
        # the threads were told to give way to the submitter (closes burn
        # CPU): once, as a thread cannot take its priority back
        self.lowered = False

    def start(self, count):
        """start ``count`` more threads, within the policy's cap"""
        policy = self._policy
        if policy.threadless:
            return
        pool = self._pool
        wanted = min(pool.threads + count, policy.thread_cap())
        if wanted <= pool.threads:
            return
        running = pool.start(wanted)
        if running < wanted and not self.stopping:
            policy.refused(running)

    def start_missing(self):
        """start the threads the policy begins with that do not run: all
        of them, or those a start an interrupt cut short did not"""
        self.start(max(0, self._policy.threads - self._pool.threads))

    def account(self, count=1):
        """count ``count`` submissions: size the pool at every window, and
        count down to the next probe"""
        interval = self._policy.account(count)
        if interval is not None:
            self._grow(interval)

    def _grow(self, interval):
        """start the threads the policy wants for one submission every
        ``interval`` seconds; lower their priority once closes are known
        to burn CPU (below)"""
        if self._policy.burning and not self.lowered:
            # threads that burn CPU on closes take the cores from the
            # submitter, whose reading and writing all of them wait for:
            # the cores' spare time is theirs, not the submitter's
            self.lowered = True
            self._pool.lower_priority(LOWER_BY)
        running = self._pool.threads
        backlog = self._pool.queued > self._halfqueue
        need = self._policy.threads_needed(interval, running, backlog)
        if need > running:
            self.start(need - running)

    def learn_inline(self, duration):
        """an inline close took ``duration`` seconds: switch to the pool if
        the policy says closes are slow.  Called by whichever thread
        closed inline; a race between two writer threads here only blurs
        the estimate a little (or counts one close of the other's in a
        run of slow closes)."""
        policy = self._policy
        if not policy.learn_inline(duration):
            return
        with self._lock:
            if policy.background or policy.threadless:
                return
            # threads first: other submitters read ``background`` unlocked
            # and must find a pool behind it
            self.start_missing()
            if self._pool.threads:  # else none could be started
                policy.switch_to_background(duration)
