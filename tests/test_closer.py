# test_closer.py - unit tests of the background closer
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""The closer on its own: no Mercurial, fake or real files."""

import errno
import os
import signal
import sys
import threading
import time

import pytest
from hypothesis import given, settings, strategies as st

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.dirname(__file__))

from hgext3rd.backgroundclose import engine as closermod  # noqa: E402
from hgext3rd.backgroundclose.engine import native, pools  # noqa: E402
from hgext3rd.backgroundclose.engine import threads as threadsmod  # noqa: E402
from scheduling import under_chosen_policy  # noqa: E402
from waiting import interrupted_after, true_by  # noqa: E402

Closer = closermod.Closer


class Files:
    """fake files: records every close, optionally slow or failing"""

    def __init__(self, latency=0.0, failing=()):
        self.latency = latency
        self.failing = set(failing)
        self.closed = []
        self.lock = threading.Lock()
        self.open = 0
        self.peak_open = 0

    def opened(self):
        with self.lock:
            self.open += 1
            self.peak_open = max(self.peak_open, self.open)

    def close(self, target):
        if self.latency:
            time.sleep(self.latency)
        with self.lock:
            self.closed.append(target)
            self.open -= 1
        if target in self.failing:
            raise OSError(errno.EIO, os.strerror(errno.EIO))


def closer_for(files, **kwargs):
    kwargs.setdefault('fdroom', None)
    return Closer(closefn=files.close, **kwargs)


@pytest.mark.parametrize('policy', closermod.POLICIES)
def test_every_file_closed_exactly_once(policy):
    files = Files(latency=0.0002)
    with closer_for(files, policy=policy, minfilecount=0) as closer:
        for target in range(500):
            files.opened()
            closer.close(target, 'f%d' % target)
    assert sorted(files.closed) == list(range(500))


def test_every_file_closed_once_from_several_threads():
    files = Files(latency=0.0001)
    closer = closer_for(files, policy=closermod.BACKGROUND)

    def submit(base):
        for i in range(300):
            closer.close(base + i, None)

    with closer:
        threads = [
            threading.Thread(target=submit, args=(n * 1000,)) for n in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    expected = [n * 1000 + i for n in range(4) for i in range(300)]
    assert sorted(files.closed) == expected


@pytest.mark.parametrize('maxqueue', [1, 3, 17])
def test_open_files_bounded_by_maxqueue(maxqueue):
    files = Files(latency=0.001)
    with closer_for(
        files, policy=closermod.BACKGROUND, maxqueue=maxqueue, maxthreads=64
    ) as closer:
        for target in range(200):
            files.opened()
            # the file being submitted is open, plus those handed over
            assert files.open <= maxqueue + 1
            closer.close(target)
    assert closer.peakpending <= maxqueue
    assert files.peak_open <= maxqueue + 1
    assert len(files.closed) == 200


def test_descriptor_limit_clamps_the_queue():
    closer = Closer(fdroom=40, maxqueue=384)
    assert closer.maxqueue == (40 - closermod.closer._FD_RESERVE) // 2
    assert Closer(fdroom=3, maxqueue=384).maxqueue == 1
    assert Closer(fdroom=None, maxqueue=384).maxqueue == 384


def _closer_threads():
    return [
        t for t in threading.enumerate() if t.name.startswith('backgroundclose')
    ]


def test_threads_joined_on_exit():
    before = len(_closer_threads())
    files = Files(latency=0.0005)
    with closer_for(files, policy=closermod.BACKGROUND, threads=8) as closer:
        for target in range(100):
            closer.close(target)
        assert len(_closer_threads()) >= before + 8
    assert len(_closer_threads()) == before


def test_threads_joined_and_files_closed_when_the_block_fails():
    before = len(_closer_threads())
    files = Files(latency=0.0005)
    with pytest.raises(KeyError):
        with closer_for(files, policy=closermod.BACKGROUND) as closer:
            for target in range(100):
                closer.close(target)
            raise KeyError('the apply failed')
    assert len(_closer_threads()) == before
    assert sorted(files.closed) == list(range(100))


def test_background_error_raised_on_the_main_thread():
    files = Files(latency=0.0002, failing={40})
    closer = closer_for(files, policy=closermod.BACKGROUND)
    with pytest.raises(closermod.FileError) as caught:
        with closer:
            for target in range(200):
                closer.close(target, 'data/file%d.i' % target)
    error = caught.value
    assert error.name == 'data/file40.i'
    assert error.error.errno == errno.EIO
    assert str(error) == 'error closing data/file40.i: Input/output error'
    # the failure did not stop the other files from being closed
    assert sorted(files.closed) == list(range(200))


def test_error_on_the_last_file_raised_at_exit():
    files = Files(latency=0.002, failing={99})
    closer = closer_for(files, policy=closermod.BACKGROUND)
    with pytest.raises(closermod.FileError) as caught:
        with closer:
            for target in range(100):
                closer.close(target, 'last%d' % target)
            # nothing failed yet from the submitter's point of view
    assert caught.value.name == 'last99'


def test_finish_waits_then_raises_once():
    files = Files(latency=0.001, failing={3})
    closer = closer_for(files, policy=closermod.BACKGROUND)
    for target in range(10):
        closer.close(target, str(target))
    with pytest.raises(closermod.FileError):
        closer.finish()
    assert len(files.closed) == 10
    closer.finish()  # the error was raised once, not twice


def test_inline_error_raised_immediately():
    files = Files(failing={2})
    with closer_for(files, policy=closermod.INLINE) as closer:
        closer.close(1, 'one')
        with pytest.raises(closermod.FileError) as caught:
            closer.close(2, 'two')
        assert caught.value.name == 'two'
        closer.close(3, 'three')
    assert files.closed == [1, 2, 3]


def record_on_another_thread(closer, name):
    """what a writer thread does when its write fails: the disk is full"""
    error = closermod.FileError(name, OSError(errno.ENOSPC, 'full'),
                                'writing')
    writer = threading.Thread(target=closer.record, args=(error,))
    writer.start()
    writer.join()


def test_errors_recorded_by_other_threads_raised_on_owner():
    files = Files()
    with pytest.raises(closermod.FileError) as caught:
        with closer_for(files, policy=closermod.INLINE) as closer:
            record_on_another_thread(closer, 'w')
    assert str(caught.value) == 'error writing w: full'


@pytest.mark.parametrize('native', [False, True], ids=['python', 'lane'])
def test_data_is_written_once_by_whichever_writes_it(tmp_path, native):
    # the Python threads only close: the closer writes the data on the
    # calling thread, also for the hand-overs made without asking, and a
    # failed write is raised there, the file closed; the lane's threads
    # write it themselves
    if native and not closermod.native_available():
        pytest.skip('the C lane is not built here')
    owned = set()
    paths = [str(tmp_path / ('f%d' % i)) for i in range(200)]
    with Closer(policy=closermod.BACKGROUND, native=native, owned=owned,
                fdroom=None, sample=closermod.SAMPLE) as closer:
        assert closer.native == native
        for path in paths:
            fd = closer.open_owned(path, os.O_WRONLY | os.O_CREAT)
            closer.close(fd, path, b'once')
        if not native:  # the lane's failed writes: tests/test_pools.py
            readonly = closer.open_owned(os.devnull, os.O_RDONLY)
            with pytest.raises(closermod.FileError) as caught:
                closer.close(readonly, 'ro', b'x')
            assert caught.value.action == 'writing'
            assert readonly not in owned
    for path in paths:
        with open(path, 'rb') as fp:
            assert fp.read() == b'once'
    assert owned == set()


def test_the_first_failure_to_happen_is_the_one_raised():
    # a close failed on a pool thread, then a writer thread recorded its
    # own failure: the pool's came first, and is the one the owner sees
    release = threading.Event()
    closed = []

    def close(target):
        release.wait(10)  # no failure before every file is submitted
        closed.append(target)
        if target == 'a':
            raise OSError(errno.EIO, os.strerror(errno.EIO))

    closer = Closer(policy=closermod.BACKGROUND, closefn=close, fdroom=None)
    # a batch, so that a parked thread wakes without anyone waiting (a
    # wait would collect the failure already)
    for target in ('a', 'x', 'y', 'z'):
        closer.close(target, 'data/%s.i' % target)
    release.set()
    deadline = time.monotonic() + 10
    while closer.pending and time.monotonic() < deadline:
        time.sleep(0.001)
    assert sorted(closed) == ['a', 'x', 'y', 'z']
    record_on_another_thread(closer, 'data/b.i')
    with pytest.raises(closermod.FileError) as caught:
        closer.finish()
    assert caught.value.name == 'data/a.i'


@pytest.mark.skipif(
    not (hasattr(os, 'SCHED_BATCH') and sys.platform.startswith('linux')),
    reason='batch scheduling is Linux only')
@under_chosen_policy
def test_python_close_threads_run_as_batch_threads_the_writer_does_not():
    # as the C lane's threads: woken as a close returns, a thread does not
    # preempt the writer.  What each close's thread runs as, and the writer
    # after the closer is done
    policies = []

    def close(target):
        policies.append(os.sched_getscheduler(0))

    with Closer(policy=closermod.BACKGROUND, minfilecount=0, closefn=close,
                fdroom=None, threads=2) as closer:
        for target in range(20):
            closer.close(target)
    assert policies == [os.SCHED_BATCH] * 20
    assert os.sched_getscheduler(0) == os.SCHED_OTHER


class FakeClock:
    """a clock that only moves when a fake close takes time"""

    def __init__(self):
        self.now = 0.0
        self.lock = threading.Lock()

    def __call__(self):
        return self.now

    def advance(self, seconds):
        with self.lock:
            self.now += seconds


def timed_files(clock, latency_of):
    closed = []

    def close(target):
        latency = latency_of(target)
        if latency >= 10e-6:
            # a close that waits on the file system sleeps in the kernel
            # (closes that burn CPU do not: test_closes_that_burn_cpu...)
            time.sleep(1e-6)
        clock.advance(latency)
        closed.append(target)

    return close, closed


def test_adaptive_stays_inline_when_closes_are_cheap():
    clock = FakeClock()
    close, closed = timed_files(clock, lambda t: 2e-6)
    with Closer(clock=clock, closefn=close, fdroom=None) as closer:
        for target in range(5000):
            clock.advance(50e-6)  # the writer's own work between closes
            closer.close(target)
    assert closer.mode == closermod.INLINE
    assert closer.threadcount == 0
    assert len(closed) == 5000


def test_adaptive_ignores_one_slow_close_among_cheap_ones():
    clock = FakeClock()
    close, closed = timed_files(clock, lambda t: 500e-6 if t == 100 else 2e-6)
    with Closer(clock=clock, closefn=close, fdroom=None) as closer:
        for target in range(1000):
            closer.close(target)
    assert closer.decisions.switches == 0
    assert closer.threadcount == 0


def test_adaptive_ignores_a_few_preempted_closes():
    # a writer preempted for a time slice in the middle of a close: three
    # closes of 5 ms among cheap ones, close together
    clock = FakeClock()
    close, closed = timed_files(
        clock, lambda t: 5e-3 if t in (100, 101, 103) else 2e-6
    )
    with Closer(clock=clock, closefn=close, fdroom=None) as closer:
        for target in range(1000):
            closer.close(target)
    assert closer.decisions.switches == 0
    assert closer.threadcount == 0


def test_adaptive_goes_background_when_closes_are_slow():
    clock = FakeClock()
    close, closed = timed_files(clock, lambda t: 700e-6)
    with Closer(
        clock=clock, closefn=close, fdroom=None, threads=2, maxthreads=16
    ) as closer:
        for target in range(400):
            clock.advance(50e-6)
            closer.close(target)
        assert closer.mode == closermod.BACKGROUND
        # 700 us closes every 50 us need about 14 threads: the pool grew
        assert closer.threadcount > 2
        # and what handing the files over cost the writer was measured, for
        # the probes to weigh against closing inline
        assert closer.decisions.handover is not None
    assert sorted(closed) == list(range(400))


def test_adaptive_returns_inline_when_closes_become_cheap():
    clock = FakeClock()
    slow_until = 300
    close, closed = timed_files(
        clock, lambda t: 700e-6 if t < slow_until else 1e-6
    )
    with Closer(clock=clock, closefn=close, fdroom=None) as closer:
        for target in range(3000):
            closer.close(target)
            if target == slow_until - 50:
                assert closer.mode == closermod.BACKGROUND
    assert closer.mode == closermod.INLINE
    assert closer.decisions.switches == 2
    assert sorted(closed) == list(range(3000))


class CountingClock(FakeClock):
    """a fake clock that counts how often it is read"""

    def __init__(self):
        super().__init__()
        self.reads = 0

    def __call__(self):
        self.reads += 1
        return self.now


def close_sampled(clock, latency, count):
    """close ``count`` fake files of ``latency`` seconds, one every 50 us,
    with a sampling closer: (closer, closed), the closer still open"""
    close, closed = timed_files(clock, lambda t: latency)
    closer = Closer(
        clock=clock, closefn=close, fdroom=None, sample=closermod.SAMPLE
    )
    for target in range(count):
        clock.advance(50e-6)
        closer.close(target)
    return closer, closed


def test_sampled_closer_times_few_cheap_closes_and_counts_all():
    clock = CountingClock()
    closer, closed = close_sampled(clock, 2e-6, 4000)
    closer.finish()
    assert len(closed) == 4000
    assert closer.stats()['close'].count == 4000
    # three clock reads per timed close: one close in SAMPLE is timed
    assert clock.reads < 4000 * 3 / closermod.SAMPLE + 100
    assert closer.mode == closermod.INLINE


def test_a_report_times_every_close_and_the_policy_still_samples():
    # timeall (a report is shown): each inline close's time is in the
    # stats, exactly; the policy learns from one close in SAMPLE, as it
    # would without a report
    clock = FakeClock()
    close, closed = timed_files(clock, lambda t: 2e-6 * (1 + t % 3))
    closer = Closer(
        clock=clock, closefn=close, fdroom=None, sample=closermod.SAMPLE,
        timeall=True,
    )
    learned = []
    learn = closer.decisions.learn_inline
    closer.decisions.learn_inline = lambda d: learned.append(d) or learn(d)
    with closer:
        for target in range(4000):
            clock.advance(50e-6)
            closer.close(target)
    stat = closer.stats()['close']
    assert stat.count == 4000
    assert stat.seconds == pytest.approx(
        sum(2e-6 * (1 + t % 3) for t in range(4000))
    )
    assert stat.max == pytest.approx(6e-6)
    assert 0 < len(learned) <= 4000 // closermod.SAMPLE + 1
    assert closer.mode == closermod.INLINE


def test_a_report_times_each_close_on_the_closers_own_clock_a_failed_one_too():
    # the default clock is the stats' own (closer.stat_clock): the closes
    # the policy does not sample are timed by OpStat.since, one call, and
    # the one that fails is counted before its FileError names it
    assert closermod.Closer(fdroom=None)._inline._statclock
    files = Files(latency=0.0, failing={5})
    closer = Closer(
        closefn=files.close, fdroom=None, sample=closermod.SAMPLE,
        timeall=True,
    )
    with pytest.raises(closermod.FileError) as caught:
        with closer:
            for target in range(10):
                closer.close(target, 'data/file%d.i' % target)
    assert str(caught.value) == (
        'error closing data/file5.i: Input/output error')
    stat = closer.stats()['close']
    assert stat.count == 6  # 0 to 5: the policy's sample, then five more
    assert stat.max >= 0.0 and stat.seconds >= stat.max


def test_sampled_closer_still_finds_slow_closes_within_a_few_dozen():
    closer, closed = close_sampled(FakeClock(), 700e-6, 60)
    with closer:
        assert closer.mode == closermod.BACKGROUND
    assert sorted(closed) == list(range(60))


def test_a_close_that_is_not_timed_still_fails_naming_its_file():
    files = Files(failing={5})
    closer = closer_for(files, sample=closermod.SAMPLE)
    with pytest.raises(closermod.FileError) as caught:
        with closer:
            for target in range(10):
                closer.close(target, 'file%d' % target)
    assert caught.value.name == 'file5'
    assert sorted(files.closed) == list(range(6))


def test_minfilecount_keeps_small_applies_inline():
    files = Files(latency=0.001)
    closer = closer_for(
        files, policy=closermod.BACKGROUND, minfilecount=2048, expectedcount=10
    )
    with closer:
        for target in range(10):
            closer.close(target)
    assert closer.decisions.policy == closermod.INLINE
    assert closer.threadcount == 0
    assert closer.decisions.reason


def open_identities():
    """(device, inode) of every file this process has open: a descriptor
    number alone proves nothing, as a closed one may be reused at once"""
    found = set()
    for name in os.listdir('/proc/self/fd'):
        try:
            st = os.stat('/proc/self/fd/' + name)
        except OSError:  # the listing's own descriptor, or closed meanwhile
            continue
        found.add((st.st_dev, st.st_ino))
    return found


@pytest.mark.skipif(not os.path.isdir('/proc/self/fd'),
                    reason='needs /proc/self/fd to list open files')
def test_real_descriptors_are_closed(tmp_path):
    identities = set()
    fillers = []
    with Closer(policy=closermod.BACKGROUND) as closer:
        for i in range(50):
            fd = os.open(str(tmp_path / ('f%d' % i)), os.O_WRONLY | os.O_CREAT)
            os.write(fd, b'data %d' % i)
            st = os.fstat(fd)
            identities.add((st.st_dev, st.st_ino))
            closer.close(fd, 'f%d' % i)
            # numbers freed by the closer are taken again at once
            fillers.append(os.open(os.devnull, os.O_RDONLY))
    assert len(identities) == 50
    assert not identities & open_identities()
    for fd in fillers:
        os.close(fd)
    assert (tmp_path / 'f49').read_bytes() == b'data 49'


def test_stats_count_every_close():
    files = Files(latency=0.0001)
    with closer_for(files, policy=closermod.BACKGROUND) as closer:
        for target in range(100):
            closer.close(target)
    stats = closer.stats()
    assert stats['close'].count == 100
    assert stats['close-background'].count == 100
    assert stats['close-background'].seconds >= 100 * 0.0001


@settings(max_examples=40, deadline=None)
@given(
    policy=st.sampled_from(closermod.POLICIES),
    count=st.integers(min_value=0, max_value=120),
    failing=st.sets(st.integers(min_value=0, max_value=119), max_size=5),
    maxqueue=st.integers(min_value=1, max_value=40),
    latency=st.sampled_from([0.0, 0.00005, 0.0005]),
    sample=st.sampled_from([1, closermod.SAMPLE]),
)
def test_property_closed_once_errors_never_lost(
    policy, count, failing, maxqueue, latency, sample
):
    files = Files(latency=latency, failing=failing)
    closer = closer_for(
        files, policy=policy, maxqueue=maxqueue, minfilecount=0,
        sample=sample,
    )
    raised = []
    try:
        with closer:
            for target in range(count):
                try:
                    closer.close(target, target)
                except closermod.FileError as exc:
                    raised.append(exc.name)
    except closermod.FileError as exc:
        raised.append(exc.name)
    assert sorted(files.closed) == list(range(count))
    expected_failures = {t for t in failing if t < count}
    # at least one failure surfaces when any close failed, and only real ones
    assert bool(raised) == bool(expected_failures)
    assert set(raised) <= expected_failures
    assert {e.name for e in closer.errors} | set(raised) == expected_failures


def test_file_closed_when_interrupted_while_waiting_for_room():
    files = Files(latency=0.05)
    closer = closer_for(files, policy=closermod.BACKGROUND, maxqueue=1,
                        threads=1, maxthreads=1)
    interrupted = threading.Event()
    original_wait = closer._pool._room.wait

    def interrupting_wait(*args, **kwargs):
        # what a KeyboardInterrupt during the wait looks like to the closer
        interrupted.set()
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        with closer:
            closer.close('first')  # taken by the only worker (slow close)
            closer._pool._room.wait = interrupting_wait
            closer.close('second')  # no room: waits, and is interrupted
    closer._pool._room.wait = original_wait
    assert interrupted.is_set()
    assert sorted(files.closed) == ['first', 'second']


def test_file_closed_once_when_interrupted_after_it_was_queued():
    # growing the pool starts a thread, which waits for it to run: a
    # KeyboardInterrupt can land there, after the file went into the queue
    files = Files(latency=0.01)
    # a worker slower than the submitter: the queue passes half of maxqueue
    # (and the pool grows) before it is full (and the submitter waits)
    closer = closer_for(files, policy=closermod.BACKGROUND, threads=1,
                        maxthreads=8, maxqueue=16, window=1)
    closer.start()  # the first thread; the test interrupts the next ones
    original_start = closer._sizer.start
    calls = []

    def interrupting_start(count):
        calls.append(count)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        with closer:
            closer._sizer.start = interrupting_start
            for target in range(100):
                files.opened()
                closer.close(target)
    closer._sizer.start = original_start
    assert calls, 'the pool never tried to grow: the test proves nothing'
    # every file submitted was closed exactly once: by a worker, or by the
    # submitter that took it back
    assert sorted(files.closed) == list(range(len(files.closed)))
    assert files.open == 0


def test_wait_for_waits_until_that_file_is_closed():
    # a revlog reopened while its close is pending on a worker: wait_for()
    # returns once that close is done, and does not wait for other names
    release = threading.Event()
    closed = []

    def close(target):
        if target == 'slow':
            release.wait(10)
        closed.append(target)

    with Closer(
        policy=closermod.BACKGROUND, closefn=close, fdroom=None,
        tracknames=True,
    ) as closer:
        closer.close('slow', 'data/a.i')
        closer.wait_for('data/b.i')  # nothing of that name: no wait
        assert closed == []
        timer = threading.Timer(0.05, release.set)
        timer.start()
        closer.wait_for('data/a.i')
        assert closed == ['slow']
        assert not closer.has_pending_any()
        timer.join()


def test_names_tracked_only_when_asked():
    with Closer(policy=closermod.BACKGROUND, fdroom=None) as closer:
        closer.close(os.open(os.devnull, os.O_RDONLY), 'x')
        assert not closer.has_pending_any()
        closer.wait_for('x')  # returns: nothing is tracked


def eight_held_closes():
    """a background closer whose closes of the 8 files handed to it wait
    until ``release`` is set: (closer, release, closed targets)"""
    release = threading.Event()
    closed = []

    def close(target):
        release.wait(10)
        closed.append(target)

    closer = Closer(policy=closermod.BACKGROUND, closefn=close, fdroom=None)
    for target in range(8):
        closer.close(target)
    return closer, release, closed


def test_finish_closes_everything_when_interrupted_while_joining():
    # a rollback follows a failed changegroup step: whatever interrupts
    # the wait, every file must be closed before finish() raises it
    closer, release, closed = eight_held_closes()
    joins = []
    original = threading.Thread.join

    def interrupted_join(thread, timeout=None):
        if not joins:
            joins.append(thread)
            release.set()
            raise KeyboardInterrupt
        return original(thread, timeout)

    threading.Thread.join = interrupted_join
    try:
        with pytest.raises(KeyboardInterrupt):
            closer.finish(failing=True)
    finally:
        threading.Thread.join = original
    assert sorted(closed) == list(range(8))


def test_a_second_interrupt_as_finish_takes_the_first_still_joins():
    # Ctrl-C twice: the second lands as finish() sets its grace period
    # after absorbing the first.  It is absorbed too, and finish() still
    # closes everything and joins every thread before it raises the
    # first: the take-back that follows must find nothing pending
    closer, release, closed = eight_held_closes()
    stop = closer._pool.stop

    def second(frame, event, arg):
        if (event == 'c_return' and arg is time.monotonic
                and frame.f_code.co_name == 'finish'):
            sys.setprofile(None)
            raise KeyboardInterrupt('second')

    def interrupted_stop(deadline=None):
        closer._pool.stop = stop
        sys.setprofile(second)
        raise KeyboardInterrupt('first')  # as from the pool's wait

    closer._pool.stop = interrupted_stop
    try:
        with pytest.raises(KeyboardInterrupt, match='first'):
            closer.finish(failing=True, on_interrupt=release.set)
    finally:
        sys.setprofile(None)
        release.set()
    assert closer.finished
    assert closer._pool.threads == 0
    assert closer.pending == 0
    assert sorted(closed) == list(range(8))


def test_native_falls_back_to_python_threads_without_the_c_lane(
    tmp_path, monkeypatch
):
    # where _closelane.c was not built (not POSIX, no compiler), a closer
    # asked for the lane closes on Python threads, and still forgets each
    # descriptor it closes from the submitter's owned set
    monkeypatch.setattr(native, 'lane_module', None)
    assert not closermod.native_available()
    fds = [
        os.open(str(tmp_path / ('f%d' % i)), os.O_WRONLY | os.O_CREAT)
        for i in range(20)
    ]
    owned = set(fds)
    with Closer(policy=closermod.BACKGROUND, native=True, owned=owned,
                fdroom=None) as closer:
        assert not closer.native
        for fd in fds:
            closer.close(fd, 'f')
    assert closer.stats()['close-background'].count == 20
    assert owned == set()
    for fd in fds:
        with pytest.raises(OSError):
            os.fstat(fd)


def run_bounded(function, seconds=30):
    """run ``function`` on a thread; fail (instead of hanging the suite) if
    it has not returned after ``seconds``.  What it raised is raised here."""
    outcome = []

    def target():
        try:
            outcome.append(('value', function()))
        except BaseException as exc:  # noqa: B902 - carried to the test
            outcome.append(('raised', exc))

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), '%s hangs' % function.__name__
    kind, value = outcome[0]
    if kind == 'raised':
        raise value
    return value


def child_exit(pid, seconds=20):
    """the exit code of forked child ``pid``; a child still running after
    ``seconds`` hangs: killed, and the test fails"""
    deadline = time.monotonic() + seconds
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail('the forked child hangs')
        time.sleep(0.01)


def refusing_threads(monkeypatch, allowed):
    """threading.Thread.start succeeds ``allowed`` times, then fails as it
    does under a process limit"""
    original = threading.Thread.start
    started = []

    def start(thread):
        if not thread.name.startswith('backgroundclose-'):
            return original(thread)
        if len(started) >= allowed:
            raise RuntimeError("can't start new thread")
        started.append(thread)
        return original(thread)

    monkeypatch.setattr(threading.Thread, 'start', start)
    return started


@pytest.mark.parametrize('allowed', [0, 2])
@pytest.mark.parametrize('policy', [closermod.BACKGROUND, closermod.ADAPTIVE])
def test_threads_that_cannot_start_leave_the_pool_as_it_is(
    monkeypatch, policy, allowed
):
    # a container's process limit: the pool keeps the threads that started
    # (none: it closes inline for good) and the apply goes on; finishing
    # joins only started threads, and returns
    refusing_threads(monkeypatch, allowed)
    clock = FakeClock()
    files = Files()

    def close(target):
        clock.advance(0.002)  # slow: the adaptive closer wants threads
        files.close(target)

    closer = Closer(policy=policy, closefn=close, clock=clock, fdroom=None,
                    threads=4, minfilecount=0)

    def apply():
        for target in range(300):
            closer.close(target, 'f%d' % target)
        closer.finish()

    run_bounded(apply)
    assert sorted(files.closed) == list(range(300))
    assert closer.threadcount == allowed
    if not allowed:
        assert closer.mode == closermod.INLINE
        assert closer.decisions.reason == 'no thread could be started'


def test_finishing_absorbs_only_interrupts(monkeypatch):
    # an error that is not an interrupt comes back at every try: finish()
    # must raise it, not retry it forever
    closer = Closer(policy=closermod.BACKGROUND, fdroom=None)
    calls = []
    original = closer._stop

    def failing_stop(deadline):
        calls.append(1)
        if len(calls) <= 1000:
            raise ValueError('not an interrupt')
        return original(deadline)

    monkeypatch.setattr(closer, '_stop', failing_stop)
    with pytest.raises(ValueError):
        run_bounded(closer.finish)
    assert len(calls) == 1
    original(None)


def test_a_taken_back_submission_is_not_waited_for():
    # the submitter is interrupted after its file was queued (growing the
    # pool starts a thread, and starting one waits): it takes the file back,
    # and a later wait_for() of that name (a reopen of the revlog) must not
    # wait for a close that will never come
    files = Files(latency=0.01)
    closer = closer_for(files, policy=closermod.BACKGROUND, threads=1,
                        maxthreads=8, maxqueue=16, window=1, tracknames=True)
    closer.start()  # the first thread; the test interrupts the next ones
    original_start = closer._sizer.start
    names = []

    def interrupting_start(count):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        closer._sizer.start = interrupting_start
        for target in range(100):
            names.append('data/f%d.i' % target)
            closer.close(target, names[-1])
    closer._sizer.start = original_start
    for name in names:
        run_bounded(lambda: closer.wait_for(name), seconds=10)
    assert not closer.has_pending_any()
    closer.finish()
    assert sorted(files.closed) == list(range(len(names)))


@pytest.mark.skipif(not hasattr(os, 'fork'), reason='needs os.fork')
@pytest.mark.parametrize('tracknames', [False, True])
def test_a_forked_child_inherits_no_live_closer(tracknames):
    # fork while closes are in flight on the Python pool: in the child none
    # of the parent's threads exist and its lock may be held; whatever the
    # child does with the closer must neither deadlock nor wait for them
    release = threading.Event()
    closed = []

    def close(target):
        release.wait(0.02)
        closed.append(target)

    closer = Closer(policy=closermod.BACKGROUND, closefn=close, fdroom=None,
                    threads=4, maxqueue=8, tracknames=tracknames)
    for round_ in range(20):
        for target in range(12):
            closer.close((round_, target), 'data/f%d.i' % target)
        pid = os.fork()
        if pid == 0:  # the child: any exception or hang is a failure
            status = 1
            try:
                closer.close(('child', 0), 'data/f0.i')
                closer.wait_for('data/f1.i')
                closer.wait()
                closer.finish()
                status = 0 if ('child', 0) in closed else 2
            finally:
                os._exit(status)
        assert child_exit(pid) == 0, round_
    release.set()
    closer.finish()
    assert ('child', 0) not in closed
    assert len(closed) == 20 * 12


@pytest.mark.skipif(
    not hasattr(os, 'fork') or not closermod.native_available(),
    reason='needs os.fork and the C lane',
)
def test_a_forked_child_closes_here_what_the_parent_closed_on_the_lane(
    tmp_path
):
    # the parent handed descriptors to the lane; the child has none of its
    # threads, and closes its own files on the spot.  Every other use of
    # the closer in the child leaves the parent's lane alone too (in a
    # forked child the lane refuses every call: one made would raise)
    closer = Closer(policy=closermod.BACKGROUND, native=True, owned=set(),
                    fdroom=None, tracknames=True)
    assert closer.native
    # opened into the closer's ``owned``, as a seam opens a descriptor
    fd = closer.open_owned(str(tmp_path / 'parent'), os.O_WRONLY | os.O_CREAT)
    closer.close(fd, b'parent')
    assert closer._handedany  # handed to the lane, not closed inline
    pid = os.fork()
    if pid == 0:  # the child: any exception or hang is a failure
        status = 1
        try:
            mine = closer.open_owned(str(tmp_path / 'child'),
                                     os.O_WRONLY | os.O_CREAT)
            closer.close(mine, b'child')
            try:
                os.fstat(mine)
                status = 2  # left open
            except OSError:
                status = 3
            if status == 3 and closer.pending == 0 and not closer.native:
                closer.wait_for(b'parent')
                assert not closer.has_pending_any()
                closer.wait()
                assert not closer.failed()
                closer.stats()
                closer.finish()
                status = 0
        finally:
            os._exit(status)
    assert child_exit(pid) == 0
    closer.finish()


@pytest.mark.skipif(not closermod.native_available(),
                    reason='the C lane is not built here')
@pytest.mark.parametrize('maxqueue', [8, 384])
def test_a_parked_lane_thread_is_woken_before_the_queue_is_full(
    tmp_path, maxqueue
):
    # the lane wakes a parked thread once LANE_BATCH files wait, but never
    # later than a quarter of the queue: a small queue (a low descriptor
    # limit) would otherwise fill before any thread woke, and each file
    # after it wait for room
    closer = Closer(policy=closermod.BACKGROUND, native=True, owned=set(),
                    threads=1, maxqueue=maxqueue, fdroom=None)
    lane = closer._pool._lane
    batch = min(pools.LANE_BATCH, maxqueue // 4)
    assert lane.batch == batch
    closer.start()
    deadline = time.monotonic() + 10
    try:
        assert true_by(deadline, lambda: lane.parked >= 1)
        for number in range(batch):
            if number == batch - 1:
                # one short of a batch: none woken yet
                assert (lane.queued, lane.parked) == (batch - 1, 1)
            fd = os.open(str(tmp_path / ('%d' % number)),
                         os.O_WRONLY | os.O_CREAT)
            closer.close(fd, b'%d' % number)
        # closed without anyone waiting for them
        assert true_by(deadline, lambda: lane.closed >= batch), (
            lane.queued, lane.parked)
    finally:
        closer.finish()


@pytest.mark.skipif(not closermod.native_available(),
                    reason='the C lane is not built here')
def test_closes_sent_back_inline_leave_nothing_queued_on_the_lane(tmp_path):
    # a probe finds closes cheap again: the descriptors queued on the lane
    # since its thread parked (fewer than a batch) are closed then, not
    # left open until the closer finishes
    slow = [True]

    def closefn(fd):
        if slow[0]:
            time.sleep(0.002)
        os.close(fd)

    # closes of 2 ms are slow and a plain close is cheap against a
    # threshold of 1 ms, however busy the machine: at 30 us a probe
    # preempted on a loaded one measured slow and kept the closer in the
    # background past a batch (seen once, under make test-python)
    closer = Closer(policy=closermod.ADAPTIVE, native=True, owned=set(),
                    threads=1, maxthreads=1, closefn=closefn, fdroom=None,
                    threshold=1e-3)
    closer.decisions.PROBE_FIRST = 8  # from the switch on
    lane = closer._pool._lane
    made = [0]

    def close_one():
        fd = closer.open_owned(str(tmp_path / ('%d' % made[0])),
                               os.O_WRONLY | os.O_CREAT)
        made[0] += 1
        closer.close(fd, b'f')

    try:
        while closer.decisions.mode == closermod.INLINE:
            close_one()
            assert made[0] <= pools.LANE_BATCH
        slow[0] = False
        deadline = time.monotonic() + 10
        assert true_by(deadline, lambda: lane.parked >= 1)
        while closer.decisions.mode == closermod.BACKGROUND:
            close_one()
            assert made[0] <= pools.LANE_BATCH
        assert lane.lasttoken >= 0  # some went to the lane
        assert true_by(deadline, lambda: not lane.queued), lane.queued
    finally:
        closer.finish()


def test_a_thread_interrupted_in_its_start_is_still_waited_for(monkeypatch):
    # Thread.start() makes the thread, then waits for it to run: a Ctrl-C
    # there leaves a running worker that finishing must still wait for
    original = threading.Thread.start
    interrupted = []

    def start(thread):
        original(thread)
        if thread.name.startswith('backgroundclose-') and not interrupted:
            interrupted.append(thread)
            raise KeyboardInterrupt

    files = Files(latency=0.01)

    def close(target):
        if threading.current_thread() in interrupted:
            time.sleep(0.3)  # still closing when the others are done
        files.close(target)

    # a worker slower than the submitter: the queue passes half of maxqueue
    # and the pool grows
    closer = Closer(closefn=close, fdroom=None, policy=closermod.BACKGROUND,
                    threads=1, maxthreads=8, maxqueue=16, window=1)
    monkeypatch.setattr(threading.Thread, 'start', start)
    with pytest.raises(KeyboardInterrupt):
        for target in range(200):
            closer.close(target)  # the pool grows: one start interrupted
    monkeypatch.setattr(threading.Thread, 'start', original)
    assert interrupted, 'no start was interrupted: the test proves nothing'
    run_bounded(lambda: closer.finish(failing=True))
    assert not any(t.is_alive() for t in interrupted)
    assert not [t for t in threading.enumerate()
                if t.name.startswith('backgroundclose-') and t.is_alive()]
    assert sorted(files.closed) == list(range(len(files.closed)))


def interrupting_at_bytecode(code, count):
    """a tracer for sys.settrace() that raises KeyboardInterrupt at the
    ``count``-th bytecode run in frames of ``code``, as a signal can; it
    records whether it did, and Python unsets it once it has raised"""
    seen = [0]
    raised = []

    def local(frame, event, arg):
        if event == 'opcode':
            seen[0] += 1
            if seen[0] == count:
                raised.append(count)
                raise KeyboardInterrupt
        return local

    def tracer(frame, event, arg):
        if frame.f_code is code:
            frame.f_trace_opcodes = True
            return local
        return None

    return tracer, raised


def growing_closer(files):
    """two threads at the first close, growing to four: the worker is
    slower than submitting"""
    return closer_for(files, policy=closermod.BACKGROUND, threads=2,
                      maxthreads=4, maxqueue=8, window=1)


def submit_through_interrupts(closer, count):
    for target in range(count):
        try:
            closer.close(target, 'f%d' % target)
        except KeyboardInterrupt:
            pass


def recording_starts(monkeypatch):
    """every thread the closer starts (or tries to), in a list"""
    original = threading.Thread.start
    started = []

    def start(thread):
        if thread.name.startswith('backgroundclose-'):
            started.append(thread)
        return original(thread)

    monkeypatch.setattr(threading.Thread, 'start', start)
    return started


def assert_finished_and_joined(closer, files, count, started):
    run_bounded(lambda: closer.finish(failing=True))
    assert sorted(files.closed) == list(range(count))
    # every thread that was made (it has an ident) is the closer's, and
    # finish() joined it
    made = [t for t in started if t.ident is not None]
    assert made
    assert not [t for t in made if t not in closer._pool._workers]
    assert not [t for t in made if t.is_alive()]


def test_an_interrupt_at_any_bytecode_of_a_worker_start(monkeypatch):
    # one run for each bytecode the closer runs to start its threads (two
    # at the first close, then two more as it grows), interrupted there:
    # the CI failure of stop 22 was one between listing a thread and
    # counting it.  In this frame start() either was not called or has
    # returned: a thread without an ident never runs, no need to wait long
    monkeypatch.setattr(pools.PythonPool, "START_GRACE", 0.01)
    started = recording_starts(monkeypatch)
    count = 0
    while True:
        count += 1
        files = Files(latency=0.0005)
        closer = growing_closer(files)
        del started[:]  # this run's
        tracer, raised = interrupting_at_bytecode(
            pools.PythonPool._start_locked.__code__, count
        )
        sys.settrace(tracer)
        try:
            submit_through_interrupts(closer, 40)
        finally:
            sys.settrace(None)
        assert_finished_and_joined(closer, files, 40, started)
        if not raised:
            break  # past the last bytecode of the last start
    assert count > 50, count


# where Thread.start() makes the thread: a private name, by release
_MAKE_THREAD = next(
    (name for name in ('_start_joinable_thread', '_start_new_thread')
     if hasattr(threading, name)),
    None,
)


@pytest.mark.skipif(
    _MAKE_THREAD is None,
    reason='this Python makes threads in a way the test does not know',
)
@pytest.mark.parametrize('which', [1, 3])  # the first start, a growth
@pytest.mark.parametrize('made', [False, True], ids=['before', 'after'])
def test_an_interrupt_as_the_system_makes_a_thread(monkeypatch, made, which):
    # a signal inside Thread.start(), just before or just after the thread
    # is made: the closer cannot tell which, and must neither wait for a
    # thread that never runs nor leave one running unjoined
    # a thread that was made shows up at once, unless the machine is very
    # busy: the grace is long then, and costs a run only where none was made
    monkeypatch.setattr(pools.PythonPool, "START_GRACE", 10.0 if made else 0.2)
    original = getattr(threading, _MAKE_THREAD)
    calls = []

    def make_thread(*args, **kwargs):
        calls.append(None)
        if len(calls) != which:
            return original(*args, **kwargs)
        if made:
            original(*args, **kwargs)
        raise KeyboardInterrupt

    files = Files(latency=0.002)
    closer = growing_closer(files)
    started = recording_starts(monkeypatch)
    monkeypatch.setattr(threading, _MAKE_THREAD, make_thread)
    submit_through_interrupts(closer, 40)
    monkeypatch.setattr(threading, _MAKE_THREAD, original)
    assert len(calls) >= which, 'the pool never made that thread'
    assert_finished_and_joined(closer, files, 40, started)


def test_a_second_interrupt_while_a_start_is_settled_leaves_no_phantom(
    monkeypatch,
):
    # the first signal cuts the only thread's start() short before the
    # thread is made, the second lands while the closer waits to see
    # whether it runs: the closer must not go on counting a thread that
    # never runs, and wait for room it would make
    started = recording_starts(monkeypatch)
    recorded = threading.Thread.start
    original_sleep = time.sleep
    interrupts = []

    def start(thread):
        if thread.name.startswith('backgroundclose-') and not interrupts:
            interrupts.append('start')
            raise KeyboardInterrupt
        return recorded(thread)

    def sleep(seconds):
        caller = sys._getframe(1).f_code.co_name
        if caller == '_settle_starts_locked' and len(interrupts) == 1:
            interrupts.append('settle')
            raise KeyboardInterrupt
        return original_sleep(seconds)

    monkeypatch.setattr(pools.PythonPool, "START_GRACE", 0.05)
    files = Files(latency=0.001)
    closer = closer_for(files, policy=closermod.BACKGROUND, threads=1,
                        maxthreads=1, maxqueue=4)
    monkeypatch.setattr(threading.Thread, 'start', start)
    monkeypatch.setattr(time, "sleep", sleep)
    run_bounded(lambda: submit_through_interrupts(closer, 40))
    monkeypatch.undo()
    assert interrupts == ['start', 'settle']
    assert_finished_and_joined(closer, files, 40, started)


def test_closes_that_hang_start_no_thread_per_timed_out_wait():
    # a full queue and closes that never return: waiting for room times
    # out again and again, and each time out must not start a thread more
    # (each would hang on the dead mount as well)
    release = threading.Event()
    files = Files()

    def hung_close(target):
        release.wait(30)
        files.close(target)

    closer = Closer(closefn=hung_close, fdroom=None,
                    policy=closermod.BACKGROUND, threads=1, maxthreads=16,
                    maxqueue=2)
    submitter = threading.Thread(
        target=lambda: [closer.close(t) for t in range(4)], daemon=True
    )
    submitter.start()
    time.sleep(1.5)  # 15 timed-out waits
    assert submitter.is_alive()  # still waiting for room
    assert closer.threadcount <= 3
    release.set()
    submitter.join(10)
    run_bounded(closer.finish)
    assert sorted(files.closed) == [0, 1, 2, 3]


def test_a_stale_background_flag_never_queues_into_no_pool(monkeypatch):
    # a second submitter read ``background`` unlocked just before the
    # switch found no thread would start: its file is closed here, never
    # queued where no worker will take it
    refusing_threads(monkeypatch, 0)
    files = Files()
    closer = closer_for(files, policy=closermod.BACKGROUND)
    closer.start()
    assert closer.mode == closermod.INLINE and not closer._pool._workers
    closer._policy.background = True  # what the other submitter saw
    closer.close('late', 'data/late.i')
    assert files.closed == ['late']
    run_bounded(closer.finish)


@pytest.mark.skipif(not hasattr(os, 'fork'), reason='needs os.fork')
def test_a_forked_child_meets_no_parent_lock_and_no_parent_error():
    closer = Closer(policy=closermod.BACKGROUND, closefn=lambda t: None,
                    fdroom=None)
    closer.record(closermod.FileError('data/parent.i', OSError(5, 'EIO')))
    held = threading.Event()
    release = threading.Event()

    def hold_the_book():
        with closer._book._lock:
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold_the_book)
    holder.start()
    held.wait(10)
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            closer.close('child')  # no FileError of the parent's
            closer.stats()
            closer.finish()
            status = 0
        finally:
            os._exit(status)
    release.set()
    holder.join()
    assert child_exit(pid) == 0
    with pytest.raises(closermod.FileError):
        closer.finish()


@pytest.mark.skipif(not hasattr(os, 'fork'), reason='needs os.fork')
def test_a_forked_child_samples_its_closes_where_the_parent_would_have():
    # the inline closes between two samples are counted down across the
    # fork: the child's next close is no sample, as the parent's was not
    closer = Closer(closefn=lambda t: None, fdroom=None, sample=8)
    closer.close('first')  # the first is sampled
    left = closer._inline.left
    assert left > 0
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            if closer._inline.left == left:
                closer.close('child')
                if closer._inline.left == left - 1:
                    status = 0
        finally:
            os._exit(status)
    assert child_exit(pid) == 0
    closer.finish()


def interrupt_thread(thread):
    """raise KeyboardInterrupt in ``thread`` at its next bytecode, as a
    Ctrl-C does in the main thread"""
    import ctypes

    done = ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread.ident), ctypes.py_object(KeyboardInterrupt)
    )
    assert done == 1


def test_finish_leaves_a_hung_close_to_its_thread_after_an_interrupt():
    # a hard-mounted NFS server gone away: one close never returns.  A
    # Ctrl-C must still end finish(), once its grace period is over, and
    # every other file is closed meanwhile
    hung = threading.Event()
    closed = []

    def close(target):
        if target == 3:
            hung.wait()
        closed.append(target)

    closer = Closer(policy=closermod.BACKGROUND, closefn=close, fdroom=None,
                    threads=2)
    closer.GRACE = 0.5
    for target in range(8):
        closer.close(target)

    def interrupt_soon():
        time.sleep(0.3)
        interrupt_thread(finisher[0])

    finisher = []

    def finish():
        finisher.append(threading.current_thread())
        threading.Thread(target=interrupt_soon, daemon=True).start()
        started = time.monotonic()
        try:
            closer.finish()
        finally:
            finisher.append(time.monotonic() - started)

    try:
        with pytest.raises(KeyboardInterrupt):
            run_bounded(finish, seconds=10)
        assert closer.abandoned
        assert finisher[1] < 5  # the grace period, not forever
        assert sorted(closed) == [0, 1, 2, 4, 5, 6, 7]
        # finishing again (the failing path that takes the apply back)
        # does not wait for the hung close a second time
        run_bounded(lambda: closer.finish(failing=True), seconds=3)
    finally:
        hung.set()
    # the close returns at last: its thread closed the file, once
    for _ in range(100):
        if len(closed) == 8:
            break
        time.sleep(0.01)
    assert sorted(closed) == list(range(8))


def test_finish_told_of_an_interrupt_elsewhere_waits_only_its_grace():
    # an apply whose writers' closer was interrupted finishes its own
    # closer next, outside any except block: told so, that finish is
    # bounded too, and leaves a hung close to its thread
    hung = threading.Event()
    closer = Closer(policy=closermod.BACKGROUND, closefn=lambda t: hung.wait(),
                    fdroom=None, threads=1)
    closer.GRACE = 0.3
    closer.close(0)
    try:
        run_bounded(lambda: closer.finish(failing=True, interrupted=True),
                    seconds=10)
        assert closer.abandoned
    finally:
        hung.set()


def test_a_closer_starts_no_thread_before_its_owner_holds_it():
    # Closer(...) returns, and a Ctrl-C lands before the owner stores it:
    # threads started in the constructor would run with nobody left to
    # finish them.  They start at start() or at the first close()
    before = set(threading.enumerate())  # earlier tests' may end meanwhile
    files = Files()
    closer = closer_for(files, policy=closermod.BACKGROUND, threads=3)
    assert not set(threading.enumerate()) - before
    assert closer.threadcount == 0
    closer.close('first')
    assert closer.threadcount == 3
    closer.finish()
    assert files.closed == ['first']
    assert not set(threading.enumerate()) - before


class Deferred:
    """a file whose close would write it (as deferredwrite.FileWrite)"""

    def __init__(self):
        self.discarded = False

    def discard(self):
        self.discarded = True


def test_an_interrupt_while_the_first_threads_start_still_closes_the_file():
    # the first close() starts the threads, and starting one waits for it
    # to run: a Ctrl-C there must not leave the file open (or a file whose
    # close would write it, not written and not dropped)
    files = Files()
    closer = closer_for(files, policy=closermod.BACKGROUND, threads=4)
    deferred = Deferred()
    original_start = closer._sizer.start

    def interrupted_start(count):
        original_start(min(count, 2))  # two threads run, then the signal
        raise KeyboardInterrupt

    closer._sizer.start = interrupted_start
    for target in ('first', deferred):
        try:
            closer.close(target, 'data/f.i')
        except KeyboardInterrupt:
            pass
        else:
            pytest.fail('the interrupt was lost')
    assert files.closed == ['first'] and deferred.discarded
    # the next close starts only the threads still missing
    closer._sizer.start = original_start
    closer.close('second')
    assert closer.threadcount == 4
    run_bounded(closer.finish)
    assert sorted(files.closed) == ['first', 'second']


def burn(seconds):
    """spend ``seconds`` of this thread's CPU time, as a scan on close"""
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass


@pytest.mark.skipif(
    (os.cpu_count() or 1) >= 16,
    reason='needs fewer cores than the sleeping closes want threads',
)
@pytest.mark.parametrize('kind', ['burning', 'sleeping'])
def test_closes_that_burn_cpu_get_no_more_threads_than_cores(
    kind, monkeypatch
):
    # a close that burns 2 ms of CPU and one that waits 2 ms look alike by
    # the clock; only the first keeps a core busy, and more threads than
    # cores only take turns at it
    if kind == 'burning':
        # on a busy machine a burning close also waits for a core: count
        # all of its time as CPU, so that the test does not depend on load
        # (a probe close that waits for the GIL meanwhile counts as one
        # that slept; test_a_close_that_never_slept... tests the rest)
        monkeypatch.setattr(threadsmod, "_thread_time", time.perf_counter)
    closed = []

    def close(target):
        if kind == 'burning':
            burn(0.002)
        else:
            time.sleep(0.002)
        closed.append(target)

    closer = Closer(closefn=close, fdroom=None, threads=4, maxthreads=16,
                    maxqueue=64, minfilecount=0)
    for target in range(400):
        closer.close(target)
    closer.finish()
    assert sorted(closed) == list(range(400))
    assert closer.decisions.switches >= 1
    cores = os.cpu_count() or 1
    if kind == 'burning':
        assert closer.decisions.burning
        assert 1 <= closer.threadcount <= cores
    else:
        assert not closer.decisions.burning
        assert closer.threadcount > cores
    # threads that burn CPU give way to the submitter; those that wait
    # keep their priority (they would only be late to wake)
    assert closer.lowered == (kind == 'burning')


def test_python_threads_own_a_descriptor_from_its_hand_over(tmp_path):
    # the rule the C lane keeps: a descriptor leaves the submitter's owned
    # set as it is queued, not once closed.  Otherwise cleanup after a
    # failure (or after hung closes were left to their threads) closes
    # queued descriptors that a thread closes again later, by then maybe
    # another file's
    fds = [os.open(str(tmp_path / ('f%d' % i)), os.O_WRONLY | os.O_CREAT)
           for i in range(6)]
    owned = set(fds)
    hung = threading.Event()
    closed = []

    def close(fd):
        if fd == fds[0]:
            hung.wait(10)
        os.close(fd)  # EBADF, recorded as a failure, if closed twice
        closed.append(fd)

    closer = Closer(policy=closermod.BACKGROUND, closefn=close, fdroom=None,
                    threads=1, maxthreads=1, owned=owned)
    try:
        for fd in fds:
            closer.close(fd, 'f')
        assert owned == set()
    finally:
        hung.set()
    closer.finish()
    assert sorted(closed) == sorted(fds)


@pytest.mark.skipif(closermod.slept() is None,
                    reason='needs RUSAGE_THREAD (Linux)')
@pytest.mark.parametrize('kind', ['spinning', 'sleeping'])
def test_a_close_that_never_slept_counts_as_cpu_on_a_busy_machine(
    kind, monkeypatch
):
    # the busiest machine: the closing thread got no CPU time at all while
    # it closed.  A close that spun all the same (a scan, preempted) never
    # slept in the kernel: it wanted a core all along.  One that slept
    # waited on the file system.
    monkeypatch.setattr(threadsmod, "_thread_time", lambda: 0.0)

    def close(target):
        if kind == 'spinning':
            until = time.perf_counter() + 200e-6
            while time.perf_counter() < until:
                pass
        else:
            time.sleep(200e-6)

    closer = Closer(closefn=close, fdroom=None, minfilecount=0)
    try:
        for target in range(500):
            closer.close(target)
            if closer.decisions.background:
                break
        # decided inline, before any thread (and its GIL) was there
        assert closer.decisions.background
        assert closer.decisions.burning == (kind == 'spinning')
    finally:
        closer.finish()


# a Ctrl-C a finalizer caught (closer.interrupt_again) --------------------

def caught_in_a_finalizer(exc):
    """a finalizer, run at once, that caught ``exc`` where its handler
    ran: what handedfiles' and deferredwrite's finalizers do"""

    class Finalized:
        def __del__(self):
            try:
                raise exc
            except BaseException as caught:  # noqa: B902
                closermod.interrupt_again(caught)

    Finalized()


def only_closer(monkeypatch, closer):
    """``closer`` the only closer of the process (others of earlier tests
    may not have been collected yet)"""
    live = closermod.closer._live.__class__()
    live.add(closer)
    monkeypatch.setattr(closermod.closer, '_live', live)


def test_a_ctrl_c_a_finalizer_caught_comes_again_while_a_closer_runs(
    monkeypatch,
):
    closer = closermod.Closer(policy='background', threads=1)
    only_closer(monkeypatch, closer)
    try:
        assert interrupted_after(
            lambda: caught_in_a_finalizer(KeyboardInterrupt())
        )
    finally:
        closer.finish()


def test_a_ctrl_c_a_finalizer_caught_is_dropped_once_every_closer_ended(
    monkeypatch,
):
    # a command server's next command, core's rollback after the
    # abort callback: no Ctrl-C of an apply that ended may land there
    closer = closermod.Closer(policy='background', threads=1)
    closer.finish()
    only_closer(monkeypatch, closer)
    assert not interrupted_after(
        lambda: caught_in_a_finalizer(KeyboardInterrupt()), within=0.3
    ), 'a Ctrl-C came again after every closer ended'


class SignalInterrupt(KeyboardInterrupt):
    """what Mercurial's handler of SIGTERM raises (error.SignalInterrupt)"""


@pytest.mark.skipif(
    not hasattr(signal, 'pthread_kill'),
    reason='no signal can be sent to one thread here',
)
def test_a_sigterm_a_finalizer_caught_comes_again_as_a_sigterm(monkeypatch):
    # as a Ctrl-C, it would leave a command server running that was told
    # to end
    closer = closermod.Closer(policy='background', threads=1)
    only_closer(monkeypatch, closer)
    caught = []

    def catchterm(signum, frame):
        caught.append(signum)
        raise SignalInterrupt

    previous = signal.signal(signal.SIGTERM, catchterm)
    try:
        try:
            caught_in_a_finalizer(SignalInterrupt())
            true_by(time.monotonic() + 10, lambda: False)
        except KeyboardInterrupt as exc:
            came = exc
        assert type(came) is SignalInterrupt
        assert caught == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, previous)
        closer.finish()
