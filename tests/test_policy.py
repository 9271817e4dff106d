# test_policy.py - the closer's decisions, without threads, driven by a clock
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.

import os
import sys

import pytest
from hypothesis import given, settings, strategies as st

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))

from hgext3rd.backgroundclose.engine import policy as policymod  # noqa: E402
from hgext3rd.backgroundclose.engine import (  # noqa: E402
    writepolicy as writepolicymod,
)
from hgext3rd.backgroundclose.engine.policy import Policy  # noqa: E402


class Clock:
    """a clock that moves only when told"""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def switch_after(policy, duration, most=1000):
    """how many inline closes of ``duration`` seconds until the policy
    wants the background, or None"""
    for count in range(1, most + 1):
        if policy.learn_inline(duration):
            return count
    return None


def test_cheap_closes_stay_inline():
    policy = Policy(threshold=30e-6)
    assert switch_after(policy, 5e-6) is None
    assert policy.mode == policymod.INLINE


def test_a_file_system_slow_from_the_first_file_switches_after_a_run():
    # the estimate alone, one close counted at most OUTLIER thresholds,
    # would take about ten closes
    policy = Policy(threshold=30e-6)
    assert switch_after(policy, 700e-6) == Policy.SLOW_RUN
    assert policy.estimate < policy.threshold


def test_a_cheap_close_ends_the_run():
    policy = Policy(threshold=30e-6)
    for _ in range(Policy.SLOW_RUN - 1):
        assert not policy.learn_inline(700e-6)
    assert not policy.learn_inline(5e-6)
    assert switch_after(policy, 700e-6) == Policy.SLOW_RUN


def test_slow_closes_among_cheap_ones_switch_only_once_the_estimate_does():
    # a writer preempted in every eighth close (a busy machine) makes no
    # run; every other close slow still switches, by the estimate
    policy = Policy(threshold=30e-6)
    for _ in range(100):
        for duration in (5e-3,) + (5e-6,) * 7:
            assert not policy.learn_inline(duration)
    closes = 0
    while not policy.learn_inline(5e-6 if closes % 2 else 5e-3):
        closes += 1
        assert closes < 100
    assert policy.estimate > policy.threshold


def test_the_closes_after_a_slow_one_are_timed():
    policy = Policy(threshold=30e-6, sample=8)
    policy.learn_inline(5e-6)
    assert policy.sample_every == 8
    assert not policy.wants_cpu_time(probing=False)
    policy.learn_inline(700e-6)
    # the next close is timed, in CPU time too: the run's CPU share is
    # known by its end, so that the pool starts at its right size
    assert policy.sample_every == 1
    assert policy.wants_cpu_time(probing=False)
    policy.learn_inline(5e-6)
    assert policy.sample_every == 8
    assert not policy.wants_cpu_time(probing=False)


def test_a_run_sizes_the_pool_from_its_fastest_close():
    # closes that each also waited for a core, but one
    policy = Policy(threshold=30e-6)
    for duration in (2.4e-3, 0.8e-3, 1.9e-3):
        assert not policy.learn_inline(duration)
    assert policy.learn_inline(3e-3)
    policy.switch_to_background(3e-3)
    assert policy.latency == pytest.approx(0.8e-3)


def switched_by_a_run():
    """a policy that went to the background after slow closes"""
    policy = Policy(threshold=30e-6)
    assert switch_after(policy, 700e-6)
    policy.switch_to_background(700e-6)
    return policy


def sent_back_inline_by_a_cheap_probe(policy):
    policy.account(Policy.PROBE_FIRST)
    while policy.take_probe():
        policy.learn_probe(2e-6)
    assert policy.mode == policymod.INLINE


def test_slow_closes_made_inline_in_the_background_are_no_run():
    # a file object the C lane does not take is closed inline in the
    # background too: once closes come back inline, one slow close does
    # not switch again
    policy = switched_by_a_run()
    for _ in range(2 * Policy.SLOW_RUN):
        assert not policy.learn_inline(700e-6)
    assert policy._slowrun == 0
    sent_back_inline_by_a_cheap_probe(policy)
    assert not policy.learn_inline(700e-6)


def test_a_run_counted_by_a_racing_thread_ends_with_the_background():
    # another writer thread read ``background`` just before the switch and
    # counted its slow close after it: gone once closes come back inline
    policy = switched_by_a_run()
    policy._slowrun = Policy.SLOW_RUN
    sent_back_inline_by_a_cheap_probe(policy)
    assert not policy.learn_inline(700e-6)


def test_a_run_never_sizes_the_pool_below_the_threshold():
    # another writer thread may begin a run meanwhile (unlocked)
    policy = Policy(threshold=30e-6)
    for _ in range(Policy.SLOW_RUN):
        policy.learn_inline(700e-6)
    policy._runfastest = 0.0
    policy.switch_to_background(700e-6)
    assert policy.latency == pytest.approx(30e-6)


def test_closes_sent_back_inline_start_a_run_of_their_own():
    policy = switched_by_a_run()
    sent_back_inline_by_a_cheap_probe(policy)
    # the run that switched the first time is spent
    assert not policy.learn_inline(700e-6)
    assert switch_after(policy, 700e-6) == Policy.SLOW_RUN - 1


def test_one_preempted_close_among_cheap_ones_does_not_switch():
    # a writer preempted for 5 ms in the middle of one close
    policy = Policy(threshold=30e-6)
    for _ in range(100):
        assert not policy.learn_inline(5e-6)
    assert not policy.learn_inline(5e-3)
    assert switch_after(policy, 5e-6, most=100) is None


def test_closes_are_cheap_only_inline_and_well_below_the_threshold():
    # what lets a seam leave files to core (session.py)
    policy = Policy(threshold=30e-6)
    assert policy.closes_cheap()
    for _ in range(200):
        policy.learn_inline(10e-6)
    assert policy.closes_cheap()
    for _ in range(200):
        policy.learn_inline(20e-6)  # below the threshold, above half of it
    assert not policy.closes_cheap()
    assert not Policy(policymod.BACKGROUND).closes_cheap()


def test_opens_are_cheap_once_measured_or_never_handed_over():
    writes = writepolicymod.WritePolicy(threshold=100e-6, sample=1)
    for _ in range(writepolicymod.WritePolicy.FIRST - 1):
        writes.learn(10e-6)
    assert not writes.opens_cheap()  # too few measured yet
    writes.learn(10e-6)
    assert writes.opens_cheap()
    for _ in range(8):
        writes.learn(45e-6)  # over a quarter of the way to the threshold
    assert not writes.opens_cheap()
    assert writepolicymod.WritePolicy(policymod.INLINE).opens_cheap()
    assert not writepolicymod.WritePolicy(policymod.BACKGROUND).opens_cheap()


def test_too_few_files_close_inline_whatever_the_policy():
    policy = Policy(policymod.BACKGROUND, minfilecount=100, expectedcount=10)
    assert policy.mode == policymod.INLINE
    assert policy.reason == 'fewer files than minfilecount'
    assert policy.requested == policymod.BACKGROUND


def test_threads_sized_from_latency_and_submission_interval():
    clock = Clock()
    policy = Policy(policymod.BACKGROUND, window=16, clock=clock)
    policy.switch_to_background(700e-6)
    interval = None
    for _ in range(16):
        clock.now += 100e-6  # one submission every 100 us
        interval = policy.account()
    assert interval == pytest.approx(100e-6)
    # 700 us closes, a file every 100 us: 7 busy threads, a quarter more
    # for jitter, and one
    assert policy.threads_needed(interval, running=4, backlog=False) == 10
    # a backlog: the threads fall behind whatever the estimate says, and
    # grow by a quarter (one at least), within the cap
    assert policy.threads_needed(interval, running=12, backlog=True) == 15
    assert policy.threads_needed(interval, running=3, backlog=True) == 10
    assert policy.threads_needed(interval, running=2, backlog=True) == 10
    assert policy.threads_needed(1e-3, running=2, backlog=True) == 3
    assert policy.threads_needed(1, running=8, backlog=True) == 10
    assert policy.threads_needed(1, running=60, backlog=True) == 64
    assert policy.threads_needed(1e-9, running=4, backlog=False) == 64


def test_closes_that_burn_cpu_stop_the_pool_at_the_core_count():
    policy = Policy(cores=2, maxthreads=64)
    policy.latency = 700e-6
    for _ in range(20):
        policy.learn_cpu(700e-6, 690e-6)  # nearly all of it on the CPU
    assert policy.burning
    assert policy.thread_cap() == 2
    assert policy.threads_needed(100e-6, running=1, backlog=True) == 2


def test_closes_that_wait_are_not_capped_at_the_core_count():
    policy = Policy(cores=2, maxthreads=64)
    policy.latency = 700e-6
    for _ in range(20):
        policy.learn_cpu(700e-6, 5e-6)  # a network round trip
    assert not policy.burning
    assert policy.threads_needed(100e-6, running=1, backlog=False) == 10


def test_cheap_closes_before_an_onset_do_not_make_it_burning():
    # on tmpfs every close is CPU; a file system that turns slow midway
    # (a scanner that sleeps, a flush) then makes closes that wait: the
    # few slow ones before the switch must not be outweighed by the cheap
    # ones timed before (a pool capped at the cores, at a lower priority)
    policy = Policy(cores=2, maxthreads=64)
    for _ in range(50):
        policy.learn_cpu(10e-6, 10e-6)  # cheap, all CPU
    for _ in range(policy.SLOW_RUN):
        policy.learn_cpu(700e-6, 5e-6)  # slow, waiting
    assert not policy.burning
    assert policy.thread_cap() == 64


def test_cpu_time_asked_only_of_closes_that_are_not_cheap():
    policy = Policy(threshold=30e-6)
    assert not policy.wants_cpu_time(probing=False)
    assert policy.wants_cpu_time(probing=True)
    # cheap closes (a fast local disk, a busy machine) never ask
    for _ in range(1000):
        policy.learn_inline(12e-6)
        assert not policy.wants_cpu_time(probing=False)
    # slow ones ask for a few closes before the switch
    policy = Policy(threshold=30e-6)
    asked = 0
    while not policy.learn_inline(700e-6):
        asked += policy.wants_cpu_time(probing=False)
    assert asked >= 3


def test_probes_go_back_inline_when_closes_became_cheap():
    policy = Policy(threshold=30e-6)
    assert switch_after(policy, 700e-6)
    policy.switch_to_background(700e-6)
    probed = 0
    for _ in range(Policy.PROBE_FIRST + Policy.PROBE_LENGTH):
        if policy.take_probe():
            probed += 1
            policy.learn_probe(2e-6)
        else:
            policy.account()
    assert probed == Policy.PROBE_LENGTH
    assert policy.mode == policymod.INLINE
    assert policy.switches == 2


def test_probes_that_confirm_slow_closes_come_less_often():
    policy = Policy(threshold=30e-6)
    policy.switch_to_background(700e-6)
    probes = []
    for submission in range(3 * Policy.PROBE_FIRST + 4 * Policy.PROBE_LENGTH):
        if policy.take_probe():
            probes.append(submission)
            policy.learn_probe(700e-6)
        else:
            policy.account()
    # one probe after PROBE_FIRST files, the next twice as far
    starts = [
        p for i, p in enumerate(probes) if i == 0 or probes[i - 1] != p - 1
    ]
    assert len(starts) == 2
    assert policy.mode == policymod.BACKGROUND
    # closes that slow decide after the fewest closes a probe takes, the
    # latency their mean
    assert len(probes) == 2 * Policy.PROBE_LEAST
    assert policy.latency == pytest.approx(700e-6)


@given(
    closes=st.lists(
        st.floats(min_value=0.0, max_value=2e-3), min_size=8, max_size=8
    ),
    handover=st.one_of(st.none(), st.floats(min_value=0.0, max_value=1e-3)),
)
def test_a_probe_ended_early_decides_as_the_whole_probe_would(
    closes, handover
):
    outcomes = []
    for least in (Policy.PROBE_LEAST, Policy.PROBE_LENGTH):
        policy = Policy(threshold=30e-6)
        policy.PROBE_LEAST = least  # PROBE_LENGTH: never ends early
        policy.switch_to_background(700e-6)
        policy.handover = handover
        policy.account(Policy.PROBE_FIRST)  # the next file starts a probe
        taken = 0
        while policy.take_probe():
            policy.learn_probe(closes[taken])
            taken += 1
        outcomes.append((policy.mode, taken))
    (early, taken), (whole, length) = outcomes
    assert length == Policy.PROBE_LENGTH
    assert Policy.PROBE_LEAST <= taken <= Policy.PROBE_LENGTH
    assert early == whole


def test_no_thread_at_all_means_inline_for_good():
    policy = Policy(policymod.BACKGROUND)
    policy.refused(0)
    assert policy.mode == policymod.INLINE
    assert policy.threadless
    assert not switch_after(policy, 700e-6, most=50)
    assert policy.reason == 'no thread could be started'


def test_unknown_policy_refused():
    with pytest.raises(ValueError):
        Policy('sometimes')


def background_with_probes(policy, handover, probe, submissions):
    """drive a policy in background mode: every file handed over in
    ``handover`` seconds, every probe close taking ``probe`` seconds"""
    for _ in range(submissions):
        if not policy.background:
            break
        if policy.take_probe():
            policy.learn_probe(probe)
        else:
            policy.learn_handover(handover)
            policy.account()


def test_probes_go_back_inline_when_a_hand_over_costs_as_much_as_a_close():
    # 200 us closes are well above the threshold, but the pool cannot keep
    # up: the writer waits 250 us for room in the queue each time
    policy = Policy(threshold=30e-6)
    assert switch_after(policy, 200e-6)
    policy.switch_to_background(200e-6)
    background_with_probes(policy, 250e-6, 200e-6, 2 * Policy.PROBE_FIRST)
    assert policy.mode == policymod.INLINE
    assert policy.switches == 2
    # the same closes try the background again, but only after a while,
    # and twice as long a while once that did not pay either
    waited = switch_after(policy, 200e-6, most=5000)
    assert Policy.PROBE_FIRST <= waited <= Policy.PROBE_FIRST + 2
    policy.switch_to_background(200e-6)
    background_with_probes(policy, 250e-6, 200e-6, 2 * Policy.PROBE_FIRST)
    assert policy.mode == policymod.INLINE
    waited = switch_after(policy, 200e-6, most=5000)
    assert 2 * Policy.PROBE_FIRST <= waited <= 2 * Policy.PROBE_FIRST + 2


def test_a_cheap_hand_over_keeps_slow_closes_in_the_background():
    # sshfs: 74 us closes, handed over in a few microseconds
    policy = Policy(threshold=30e-6)
    assert switch_after(policy, 74e-6)
    policy.switch_to_background(74e-6)
    background_with_probes(policy, 3e-6, 74e-6, 4 * Policy.PROBE_FIRST)
    assert policy.mode == policymod.BACKGROUND
    assert 2e-6 < policy.handover < 4e-6


def test_one_preempted_hand_over_does_not_send_closes_back_inline():
    policy = Policy(threshold=30e-6)
    policy.switch_to_background(200e-6)
    background_with_probes(policy, 3e-6, 200e-6, Policy.PROBE_FIRST - 1)
    # the submitter lost its core for 50 ms, just before a probe
    policy.learn_handover(50e-3)
    background_with_probes(policy, 3e-6, 200e-6, Policy.PROBE_FIRST)
    assert policy.switches == 1
    assert policy.mode == policymod.BACKGROUND


def drive(policy, clock, probes, submissions, routine):
    """hand ``submissions`` files over to a policy in background mode, a
    file every 100 us, as the closer does: with ``routine``, the files
    ``routine_handovers()`` grants go by without asking and are counted by
    the next file that asks.  Each probe's closes take the next duration
    of ``probes`` (cycled).  What the policy decided, file by file."""
    decided = []
    granted = counted = 0
    for index in range(submissions):
        clock.now += 100e-6
        if not policy.background:
            decided.append((index, 'inline'))
            continue
        if granted:
            granted -= 1
            counted += 1
            continue
        if policy.take_probe():
            if counted:
                assert policy.account(counted) is None
            counted = 0
            decided.append((index, 'probe'))
            policy.learn_probe(probes[index % len(probes)])
            continue
        interval = policy.account(counted + 1)
        counted = 0
        if interval is not None:
            decided.append((index, 'window', interval))
        if routine:
            granted = policy.routine_handovers()
    return decided


@settings(max_examples=60, deadline=None)
@given(
    window=st.integers(1, 40),
    adaptive=st.booleans(),
    probes=st.lists(
        st.sampled_from([2e-6, 700e-6]), min_size=1, max_size=5
    ),
)
def test_hand_overs_counted_all_at_once_keep_every_decision(
    window, adaptive, probes
):
    # the closer hands most descriptors to the C lane without asking the
    # policy: the windows that size the pool and the probes must still
    # come at the very same files, with the same intervals
    runs = []
    for routine in (False, True):
        clock = Clock()
        policy = Policy(
            policymod.ADAPTIVE if adaptive else policymod.BACKGROUND,
            window=window, clock=clock,
        )
        policy.switch_to_background(700e-6)
        runs.append(drive(policy, clock, probes, 3000, routine))
    assert runs[0] == runs[1]
    assert any(step[1] == 'window' for step in runs[0])


def test_no_hand_over_goes_without_asking_while_a_probe_is_due():
    policy = Policy(threshold=30e-6, window=16)
    policy.switch_to_background(700e-6)
    assert policy.routine_handovers() == 15
    policy.account(Policy.PROBE_FIRST - 1)
    # the next file starts a probe: it must ask
    assert policy.routine_handovers() == 0
    policy.account()
    assert policy.take_probe()
    assert policy.routine_handovers() == 0
    policy.learn_probe(2e-6)  # cheap: inline again
    for _ in range(Policy.PROBE_LENGTH - 1):
        policy.take_probe()
        policy.learn_probe(2e-6)
    assert policy.mode == policymod.INLINE
    assert policy.routine_handovers() == 0


def test_a_hand_over_standing_for_many_weighs_as_much_as_they_would():
    one, many = Policy(threshold=30e-6), Policy(threshold=30e-6)
    for policy in (one, many):
        policy.learn_handover(1e-6)
    for _ in range(16):
        one.learn_handover(9e-6)
    many.learn_handover(9e-6, files=16)
    # as sixteen hand-overs of their own, and never past the sample
    assert many.handover == pytest.approx(one.handover, rel=1e-9)
    many.learn_handover(50e-6, files=10 ** 6)
    assert many.handover == pytest.approx(50e-6)


def test_files_counted_late_while_a_probe_runs_do_not_restart_it():
    # a stream's writer threads submit too: the owner's files handed over
    # without asking may be counted once a probe has begun
    policy = Policy(threshold=30e-6)
    policy.switch_to_background(700e-6)
    policy.account(Policy.PROBE_FIRST)
    # closes just slow enough to stay in the background once all are
    # timed: the probe takes every one
    for _ in range(3):
        assert policy.take_probe()
        policy.learn_probe(16e-6)
    policy.account(5)
    probed = 0
    while policy.take_probe():
        probed += 1
        policy.learn_probe(16e-6)
    assert probed == Policy.PROBE_LENGTH - 3
    assert policy.mode == policymod.BACKGROUND


def probe_closes(policy, durations, share=None):
    """start a probe (the policy in background mode) and run it, its
    closes taking ``durations`` (the last one repeated), each ``share``
    of it on the CPU if given: how many closes it took"""
    policy.account(policy._probeat)  # the next file starts a probe
    taken = 0
    while policy.take_probe():
        duration = durations[min(taken, len(durations) - 1)]
        if share is not None:
            policy.learn_cpu(duration, duration * share)
        policy.learn_probe(duration)
        taken += 1
    return taken


def test_a_probe_whose_cpu_share_disagrees_takes_all_its_closes():
    policy = Policy(threshold=30e-6)
    for _ in range(20):
        policy.learn_cpu(700e-6, 0.0)  # closes that wait
    policy.switch_to_background(700e-6)
    # they burn now: the whole probe, for the estimate to follow
    assert probe_closes(policy, [700e-6], share=1.0) == Policy.PROBE_LENGTH
    assert policy.burning
    # the next probe's closes agree: it ends as soon as it may
    assert probe_closes(policy, [700e-6], share=1.0) == Policy.PROBE_LEAST


def test_a_probe_close_that_flips_the_estimate_disagrees_with_it():
    # just burning: a close that waits moves the estimate below one half,
    # and agrees with that, but not with what the estimate was
    policy = Policy(threshold=30e-6)
    policy.cpushare = 0.52
    policy.switch_to_background(700e-6)
    assert probe_closes(policy, [700e-6], share=0.3) == Policy.PROBE_LENGTH
    assert not policy.burning


def test_a_probe_whose_closes_differ_takes_all_its_closes():
    # one close preempted in the middle: not enough to size the pool on
    policy = Policy(threshold=30e-6)
    policy.switch_to_background(700e-6)
    taken = probe_closes(policy, [700e-6, 5e-3, 700e-6])
    assert taken == Policy.PROBE_LENGTH
    assert policy.latency == pytest.approx((7 * 700e-6 + 5e-3) / 8)


def test_a_close_of_a_probe_decided_meanwhile_is_not_learnt():
    # three submitters each take a probe close; two are enough to decide,
    # the third ends its close later
    policy = Policy(threshold=30e-6)
    policy.switch_to_background(700e-6)
    policy.account(Policy.PROBE_FIRST)
    assert policy.take_probe() and policy.take_probe() and policy.take_probe()
    policy.learn_probe(700e-6)
    policy.learn_probe(700e-6)
    decided = (policy.latency, policy._probeat, policy._probeevery)
    assert decided == (pytest.approx(700e-6), 2 * Policy.PROBE_FIRST,
                       2 * Policy.PROBE_FIRST)
    policy.learn_probe(5e-3)
    assert (policy.latency, policy._probeat, policy._probeevery) == decided
    assert policy.mode == policymod.BACKGROUND


def test_a_probe_against_a_dear_hand_over_ends_only_once_it_is_decided():
    # handing over costs 200 us a file: two 250 us closes do not decide it
    # yet (cheaper ones could follow), the whole probe does
    policy = Policy(threshold=30e-6)
    policy.switch_to_background(700e-6)
    policy.handover = 200e-6
    taken = probe_closes(policy, [250e-6, 250e-6, 50e-6])
    assert taken == Policy.PROBE_LENGTH
    assert policy.mode == policymod.INLINE  # a mean of 100 us


def test_a_skip_follows_each_full_sample_that_found_closes_cheap():
    schedule = policymod.SkipSchedule()
    ends = [schedule.sampled_one() for _ in range(3 * schedule.SAMPLE)]
    # every SAMPLE-th file completes a sample, and only those
    assert [i for i, end in enumerate(ends) if end] == [
        schedule.SAMPLE * n - 1 for n in (1, 2, 3)
    ]


def test_skips_double_up_to_a_bound_and_start_over_after_a_dear_sample():
    schedule = policymod.SkipSchedule()
    skip = schedule.SKIP
    cheap = [schedule.next_skip(True) for _ in range(6)]
    assert cheap == [skip, skip * 2, skip * 4, skip * 8, skip * 8, skip * 8]
    assert schedule.next_skip(False) == 0  # closes dear: no skip
    assert schedule.next_skip(True) == skip  # and the doubling starts over


# a skip's closes, one timed in a window -----------------------------------

THRESHOLD = 30e-6


def test_a_skip_is_a_whole_number_of_windows():
    assert policymod.SkipSchedule.SKIP % policymod.SkipWatch.WINDOW == 0
    assert policymod.SkipWatch.MASK == policymod.SkipWatch.WINDOW - 1


def test_a_cheap_close_goes_on_with_the_skip():
    watch = policymod.SkipWatch(THRESHOLD)
    assert not any(watch.timed(d) for d in (1e-6, 20e-6, 29.9e-6))
    assert watch.ended == 0


def test_a_close_of_the_threshold_or_more_ends_the_skip():
    watch = policymod.SkipWatch(THRESHOLD)
    assert watch.timed(700e-6)
    assert watch.timed(THRESHOLD)
    assert watch.ended == 2 and watch.last == THRESHOLD


def inline_after_onset(onset, skip=None, watched=True):
    """files closed untimed or timed inline after closes turned 700 us
    slow at file ``onset`` of a skip (0-based), until the policy wants
    threads: the skip's files up to the one whose timed close ends it
    (one in a window, the first of the skip first; all of them if not
    ``watched``), then a sample's closes as the closer times them (one in
    SAMPLE, every one after a slow one)"""
    schedule = policymod.SkipSchedule()
    skip = skip or schedule.next_skip(True, watched)
    watch = policymod.SkipWatch(THRESHOLD)
    slow, inline = 700e-6, 0
    for index in range(skip):
        late = index >= onset
        inline += late
        if watched and not index & watch.MASK and watch.timed(
            slow if late else 2e-6
        ):
            break
    policy = Policy(threshold=THRESHOLD, sample=policymod.SAMPLE)
    for index in range(1, 10 * schedule.SAMPLE):
        inline += 1
        if index % policy.sample_every:
            continue  # not timed
        if policy.learn_inline(slow):
            return inline
    raise AssertionError('never switched')


@pytest.mark.parametrize('onset', [0, 1, 63, 64, 500, 1023])
def test_an_onset_anywhere_in_a_watched_skip_switches_within_256_files(onset):
    inline = inline_after_onset(onset)
    assert inline <= 256
    # the window's timed close, then the sample's slow run
    assert inline <= policymod.SkipWatch.WINDOW + policymod.SAMPLE + 4


@pytest.mark.parametrize('onset', [0, 100, 223])
def test_an_onset_in_an_unwatched_skip_switches_within_256_files(onset):
    schedule = policymod.SkipSchedule()
    assert schedule.next_skip(True, watched=False) == schedule.UNWATCHED
    # however many cheap samples came before: never longer
    assert schedule.next_skip(True, watched=False) == schedule.UNWATCHED
    assert inline_after_onset(onset, watched=False) <= 256


# the reason for the last switch --------------------------------------------


def test_each_switch_says_why():
    policy = switched_by_a_run()
    assert policy.reason == policymod.CLOSES_SLOW
    sent_back_inline_by_a_cheap_probe(policy)
    assert policy.reason == policymod.CLOSES_CHEAP
    # back to the background, then a probe whose closes cost the writer
    # no more than handing a file over did
    assert switch_after(policy, 700e-6)
    policy.switch_to_background(700e-6)
    assert policy.reason == policymod.CLOSES_SLOW
    policy.handover = 500e-6
    probe_closes(policy, [400e-6])
    assert policy.mode == policymod.INLINE
    assert policy.reason == policymod.HANDOVER_DEAR


def test_a_forced_policy_gives_no_reason_until_something_keeps_it_inline():
    assert Policy(policy=policymod.BACKGROUND).reason is None
    assert Policy(policy=policymod.BACKGROUND, expectedcount=10,
                  minfilecount=2048).reason == policymod.FEW_FILES
