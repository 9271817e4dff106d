# test_sizing.py - how many threads a closer's pool runs
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""The sizer starts what the policy asks for, tells it of a backlog, and
of a thread the system refused; a policy and a pool of its own here."""

import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))

from hgext3rd.backgroundclose.engine.sizing import PoolSizer  # noqa: E402
from hgext3rd.backgroundclose.engine.threads import LOWER_BY  # noqa: E402


class Policy:
    threadless = False
    threads = 2
    background = False
    burning = False

    def __init__(self, cap=8, needed=None):
        self.cap = cap
        self.needed = needed
        self.backlogs = []
        self.refusals = []
        self.switched = False

    def account(self, count):
        return 0.001  # a window ended: one file a millisecond

    def threads_needed(self, interval, running, backlog):
        self.backlogs.append(backlog)
        return running if self.needed is None else self.needed

    def thread_cap(self):
        return self.cap

    def refused(self, running):
        self.refusals.append(running)

    def learn_inline(self, duration):
        return duration > 0.001  # slow: time for threads

    def switch_to_background(self, duration):
        self.switched = True


class Pool:
    def __init__(self, refuse_after=None):
        self.threads = 0
        self.queued = 0
        self.refuse_after = refuse_after
        self.lowered = []

    def lower_priority(self, steps):
        self.lowered.append(steps)

    def start(self, wanted):
        if self.refuse_after is not None:
            wanted = min(wanted, self.refuse_after)
        self.threads = max(self.threads, wanted)
        return self.threads


def test_the_policy_is_told_of_a_backlog_past_half_the_queue():
    policy, pool = Policy(), Pool()
    sizer = PoolSizer(policy, pool, threading.Lock(), maxqueue=16)
    for queued in (0, 8, 9):
        pool.queued = queued
        sizer.account(1)
    assert policy.backlogs == [False, False, True]


def test_threads_give_way_once_closes_are_known_to_burn_cpu():
    policy, pool = Policy(), Pool()
    sizer = PoolSizer(policy, pool, threading.Lock(), maxqueue=16)
    sizer.account(1)
    assert pool.lowered == []  # waiting closes: the threads keep theirs
    policy.burning = True
    for _ in range(3):
        sizer.account(1)
    # once: a thread cannot take its priority back
    assert pool.lowered == [LOWER_BY] and sizer.lowered


def test_it_starts_what_the_policy_needs_within_its_cap():
    policy, pool = Policy(cap=5, needed=7), Pool()
    PoolSizer(policy, pool, threading.Lock(), maxqueue=16).account(1)
    assert pool.threads == 5
    assert policy.refusals == []


def test_a_refused_thread_is_told_to_the_policy_unless_stopping():
    policy, pool = Policy(needed=4), Pool(refuse_after=3)
    sizer = PoolSizer(policy, pool, threading.Lock(), maxqueue=16)
    sizer.account(1)
    assert (pool.threads, policy.refusals) == (3, [3])
    # a closer that stopped refuses its own threads: nothing to learn
    sizer.stopping = True
    sizer.start(1)
    assert policy.refusals == [3]


def test_slow_inline_closes_switch_only_once_a_thread_runs():
    policy, pool = Policy(), Pool(refuse_after=0)
    sizer = PoolSizer(policy, pool, threading.Lock(), maxqueue=16)
    sizer.learn_inline(0.0001)  # cheap: nothing
    assert not policy.switched and policy.refusals == []
    sizer.learn_inline(0.01)  # slow, but no thread starts
    assert not policy.switched and policy.refusals == [0]
    pool.refuse_after = None
    sizer.learn_inline(0.01)
    assert policy.switched and pool.threads == policy.threads
