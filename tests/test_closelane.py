# test_closelane.py - unit tests of the C lane and the closer over it
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""The closer with ``native=True``: real descriptors closed on C threads.

Slow closes come from the close-latency shim (``SLOWCLOSE_SO``, built by
``make``), loaded into a child Python: the lane calls the C library's
close(), which the shim delays for files opened for writing.
"""

import errno
import gc
import importlib.util
import os
import signal
import subprocess
import sys
import sysconfig
import textwrap
import threading
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.dirname(__file__))

from cbuild import build_module, load_in_child  # noqa: E402
from fdcheck import is_open, left_open  # noqa: E402
from scheduling import under_chosen_policy  # noqa: E402
from waiting import true_by  # noqa: E402
from hgext3rd.backgroundclose import engine as closermod  # noqa: E402
from hgext3rd.backgroundclose.engine import native  # noqa: E402

Closer = closermod.Closer

# make test sets this where the lane must have been built (POSIX with a
# compiler): a lane that silently failed to build would otherwise only
# show up as skips.  On a free-threaded Python it refuses to load.
FREE_THREADED = bool(sysconfig.get_config_var('Py_GIL_DISABLED'))
if (
    os.environ.get('BACKGROUNDCLOSE_REQUIRE_NATIVE')
    and os.name == 'posix'
    and not FREE_THREADED
):
    assert closermod.native_available(), '_closelane.c was not built'

pytestmark = pytest.mark.skipif(
    not closermod.native_available(),
    reason='the C lane is not built here (not POSIX, or no compiler when '
    'installing) or refuses to load (free-threaded Python); test_closer.py '
    'covers the Python threads',
)

SHIM = os.environ.get('SLOWCLOSE_SO')
needs_shim = pytest.mark.skipif(
    not (SHIM and os.path.isfile(SHIM)),
    reason='SLOWCLOSE_SO (the close-latency shim) is not built; make sets it',
)

WRITE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC


def open_files(tmp_path, count, prefix='f'):
    fds = []
    for i in range(count):
        fd = os.open(str(tmp_path / ('%s%d' % (prefix, i))), WRITE, 0o644)
        os.write(fd, b'data %d' % i)
        fds.append(fd)
    return fds


def close_all(tmp_path, prefix='f', spy=None, **options):
    """300 descriptors through a native closer made with ``options``
    (``spy(closer)`` first, if given): each counted and closed once"""
    fds = open_files(tmp_path, 300, prefix)
    owned = set(fds)
    closer = Closer(minfilecount=0, native=True, owned=owned, **options)
    assert closer.native
    if spy is not None:
        spy(closer)
    with closer:
        for i, fd in enumerate(fds):
            closer.close(fd, 'f%d' % i)
    # a second close of any of them would have failed with EBADF
    assert closer.errors == []
    assert not any(is_open(fd) for fd in fds)
    assert owned == set()
    assert closer.stats()['close'].count == 300
    return closer


@pytest.mark.parametrize('policy', closermod.POLICIES)
def test_every_descriptor_closed_once(tmp_path, policy):
    closer = close_all(tmp_path, policy=policy)
    if policy == closermod.BACKGROUND:
        assert closer.stats()['close-background'].count == 300
        assert closer.threadcount >= 1
    assert (tmp_path / 'f299').read_bytes() == b'data 299'


def test_most_lane_hand_overs_ask_the_policy_nothing_and_all_count(
    tmp_path,
):
    # the files between two that end a sizing window go straight to the
    # lane, also where a report times every file (sample 1); all of them
    # are still counted, handed over and closed once
    asked = {1: [], 8: []}

    def spy(closer):
        take_probe = closer.decisions.take_probe
        calls = asked[closer.decisions.sample]
        closer.decisions.take_probe = lambda: calls.append(1) or take_probe()

    for sample in (1, 8):
        closer = close_all(
            tmp_path, 's%d-' % sample, spy, policy=closermod.BACKGROUND,
            sample=sample, window=16,
        )
        assert closer.stats()['close-background'].count == 300
    # the first file, then the last of each window of 16
    assert len(asked[1]) == len(asked[8]) == 1 + 300 // 16


def test_a_report_s_close_time_holds_the_whole_of_each_asking_close(
    tmp_path,
):
    # the file that asks for a run of hand-overs is timed around the
    # submit alone for the policy, but what it cost the writer in all (the
    # closer's lock and its policy calls: half a second each here) goes to
    # the stats a report shows
    offset = [0.0]

    def clock():
        return time.perf_counter() + offset[0]

    fds = open_files(tmp_path, 64)
    closer = Closer(
        policy=closermod.BACKGROUND, minfilecount=0, native=True,
        owned=set(fds), sample=8, window=16, clock=clock,
    )
    asked = []
    take_probe = closer.decisions.take_probe

    def slow_take_probe():
        asked.append(1)
        offset[0] += 0.5
        return take_probe()

    closer.decisions.take_probe = slow_take_probe
    with closer:
        for i, fd in enumerate(fds):
            closer.close(fd, 'f%d' % i)
    stat = closer.stats()['close']
    assert stat.count == 64
    assert len(asked) == 1 + 64 // 16
    assert stat.seconds >= 0.5 * len(asked)
    assert not any(is_open(fd) for fd in fds)


def test_once_another_thread_submits_every_hand_over_asks(tmp_path):
    # a stream apply's writer threads hand files over too: the policy then
    # sees every file in the order they come
    fds = open_files(tmp_path, 61)
    closer = Closer(
        policy=closermod.BACKGROUND, minfilecount=0, native=True,
        owned=set(fds), sample=8, window=16,
    )
    calls = []
    take_probe = closer.decisions.take_probe
    closer.decisions.take_probe = lambda: calls.append(1) or take_probe()
    with closer:
        for i in range(20):
            closer.close(fds[i], 'f%d' % i)
        assert len(calls) == 2
        writer = threading.Thread(target=closer.close, args=(fds[20], 'w'))
        writer.start()
        writer.join()
        for i in range(21, 61):
            closer.close(fds[i], 'f%d' % i)
    # the writer's file; the owner's run granted at its 16th file ends
    # there (a hand-over made without asking could wait for room once
    # another thread submits), and each of its files asks
    assert len(calls) == 2 + 1 + 40
    assert closer.stats()['close'].count == 61
    assert not any(is_open(fd) for fd in fds)


def test_a_run_cut_short_by_a_stopped_lane_closes_here_counted_once(
    tmp_path,
):
    # finish() on another thread stops the lane while the owner has
    # hand-overs granted: the next one finds it stopped and closes here
    fds = open_files(tmp_path, 4)
    owned = set(fds)
    closer = Closer(
        policy=closermod.BACKGROUND, minfilecount=0, native=True,
        owned=owned, sample=8,
    )
    closer.close(fds[0], 'f0')
    closer.close(fds[1], 'f1')
    assert closer._pool._lane.stop()  # what that finish() does first, unlocked
    closer.close(fds[2], 'f2')
    closer.close(fds[3], 'f3')
    closer.finish()
    assert closer.errors == []
    assert owned == set()
    assert not any(is_open(fd) for fd in fds)
    stats = closer.stats()
    assert stats['close'].count == 4
    assert stats['close-background'].count == 2


@pytest.mark.skipif(
    not (hasattr(os, 'SCHED_BATCH') and os.path.isdir('/proc/self/task')),
    reason='batch scheduling and /proc/self/task are Linux only',
)
@under_chosen_policy
def test_lane_threads_do_not_preempt_the_writer():
    # they run as batch threads: a thread woken as its close returns waits
    # for the next tick or an idle core instead of preempting the writer
    before = set(os.listdir('/proc/self/task'))
    lane = native.lane_module.Lane(4, 2)
    assert lane.start(2) == 2
    try:
        started = set(os.listdir('/proc/self/task')) - before
        assert len(started) == 2
        # each thread sets its policy as it begins: wait for that, boundedly
        for _ in range(500):
            policies = [os.sched_getscheduler(int(tid)) for tid in started]
            if policies == [os.SCHED_BATCH] * 2:
                break
            time.sleep(0.01)
    finally:
        lane.stop()
    assert policies == [os.SCHED_BATCH] * 2
    assert os.sched_getscheduler(0) == os.SCHED_OTHER


def test_a_forked_child_hands_nothing_to_the_parent_s_lane(tmp_path):
    # the parent's closer has hand-overs granted without asking when the
    # process forks: the child closes inline, as after any fork
    fds = open_files(tmp_path, 3)
    closer = Closer(
        policy=closermod.BACKGROUND, minfilecount=0, native=True,
        owned=set(fds), sample=8,
    )
    for i, fd in enumerate(fds):
        closer.close(fd, 'f%d' % i)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            fd = closer.open_owned(str(tmp_path / 'child'), WRITE, 0o644)
            closer.close(fd, 'child')
            code = 0 if not is_open(fd) else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    closer.finish()
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert not any(is_open(fd) for fd in fds)


def test_failed_close_raised_with_its_name():
    # a number no file has: close() fails with EBADF on a lane thread
    bogus = 1 << 20
    assert not is_open(bogus)
    closer = Closer(policy=closermod.BACKGROUND, native=True)
    with pytest.raises(closermod.FileError) as caught:
        with closer:
            closer.close(bogus, 'data/ghost.i')
    assert caught.value.name == 'data/ghost.i'
    assert caught.value.error.errno == errno.EBADF
    assert 'data/ghost.i' in str(caught.value)


def test_file_objects_closed_inline(tmp_path):
    fp = open(tmp_path / 'obj', 'wb')
    with Closer(policy=closermod.BACKGROUND, native=True) as closer:
        closer.close(fp, 'obj')
        assert fp.closed
    assert closer.stats()['close-background'].count == 0


def test_descriptor_closed_here_after_finishing(tmp_path):
    (fd,) = open_files(tmp_path, 1)
    owned = {fd}
    closer = Closer(policy=closermod.BACKGROUND, native=True, owned=owned)
    closer.finish()
    closer.close(fd, 'late')
    assert not is_open(fd)
    assert owned == set()


def test_lane_refuses_when_stopped_and_leaves_the_descriptor(tmp_path):
    (fd,) = open_files(tmp_path, 1)
    owned = {fd}
    names = {}
    lane = native.lane_module.Lane(4, 2, owned=owned, names=names)
    with pytest.raises(RuntimeError):
        lane.submit(fd, b'x')  # no thread yet
    lane.start(1)
    lane.stop()
    with pytest.raises(RuntimeError):
        lane.submit(fd, b'x')
    assert owned == {fd} and names == {} and is_open(fd)
    os.close(fd)


@pytest.mark.skipif(not hasattr(signal, 'setitimer'),
                    reason='no interval timer to raise a signal with')
def test_ctrl_c_ends_an_owned_open_that_waits(tmp_path):
    # an open that waits and meets a signal gets EINTR (a FIFO with no
    # reader here; an interruptible network mount in the field): as
    # os.open() does, a handler that raises ends it, and nothing is owned.
    # Should the open wait on regardless, a reader ends it after 5 s, so
    # that the test fails instead of hanging
    fifo = str(tmp_path / 'fifo')
    os.mkfifo(fifo)
    owned = set()

    class Interrupted(Exception):
        pass

    def interrupt(signum, frame):
        raise Interrupted()

    def unblock():
        if not done.wait(5):
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))

    done = threading.Event()
    reader = threading.Thread(target=unblock)
    reader.start()
    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(Interrupted):
            native.lane_module.open_owned(fifo, os.O_WRONLY, 0o666, owned)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        done.set()
        reader.join()
        for fd in owned:
            os.close(fd)
    assert owned == set()


def test_lane_records_names_and_owned_in_the_same_step(tmp_path):
    fds = open_files(tmp_path, 3)
    owned = set(fds)
    names = {}
    lane = native.lane_module.Lane(8, 2, owned=owned, names=names)
    lane.start(2)
    lane.submit(fds[0], b'a')
    lane.submit(fds[1], b'b')
    lane.submit(fds[2], b'a')
    assert names == {b'a': 2, b'b': 1}
    assert owned == set()
    assert lane.lasttoken == 2
    lane.stop()
    assert lane.closed == 3 and lane.pending == 0 and lane.threads == 0
    assert not any(is_open(fd) for fd in fds)


def parked_lane(batch, threads=1):
    """a lane of ``threads`` threads, every one parked"""
    lane = native.lane_module.Lane(64, threads, batch=batch)
    assert lane.start(threads) == threads
    assert true_by(time.monotonic() + 10, lambda: lane.parked >= threads)
    return lane


def queued_on_a_parked_lane(tmp_path, count, batch):
    """``count`` descriptors submitted to a lane whose one thread is
    parked, fewer than ``batch``: the lane and the descriptors"""
    fds = open_files(tmp_path, count)
    lane = parked_lane(batch)
    for fd in fds:
        lane.submit(fd, b'f')
    return lane, fds


def closed_in_time(lane, count):
    """whether ``count`` closes are done within 10 s, no one waiting"""
    return true_by(time.monotonic() + 10, lambda: lane.closed >= count)


def test_fewer_than_a_batch_wait_until_kicked(tmp_path):
    # the closer kicks the lane when closing goes back inline: no more
    # descriptors may come to make a batch
    lane, fds = queued_on_a_parked_lane(tmp_path, 3, batch=16)
    try:
        assert (lane.queued, lane.parked) == (3, 1)
        lane.kick()
        assert closed_in_time(lane, 3)
    finally:
        lane.stop()
    assert not any(is_open(fd) for fd in fds)


def test_a_stop_out_of_time_still_wakes_the_parked_threads(tmp_path):
    # stop(0) returns at once, before waiting; the threads it woke close
    # what is queued all the same, not left to an abandon()
    lane, fds = queued_on_a_parked_lane(tmp_path, 3, batch=16)
    try:
        assert lane.stop(0) in (False, True)
        assert closed_in_time(lane, 3)
    finally:
        assert lane.stop()
    assert not any(is_open(fd) for fd in fds)


def os_threads():
    """the threads of this process, as the kernel counts them (a C lane's
    too, which threading does not know)"""
    return len(os.listdir('/proc/self/task'))


def a_lane_held_on_a_full_pipe(threads, data=1 << 20):
    """a lane of ``threads`` threads, one of them writing ``data`` bytes
    into a pipe nobody reads yet (as a close held on a dead mount), the
    others parked: the lane and the pipe's read end"""
    rfd, wfd = os.pipe()
    lane = native.lane_module.Lane(8, threads, batch=1)
    assert lane.start(threads) == threads
    lane.submit(wfd, b'pipe', b'x' * data)
    assert true_by(time.monotonic() + 10, lambda: lane.pending == 1
                   and lane.queued == 0)
    return lane, rfd


def drain(rfd):
    while os.read(rfd, 1 << 16):
        pass
    os.close(rfd)


@pytest.mark.skipif(not os.path.isdir('/proc/self/task'),
                    reason='counts threads in /proc/self/task (Linux)')
def test_an_abandoned_lane_s_threads_exit_once_their_close_returns():
    # Ctrl-C on a hung close: stop() runs out of time and the closer
    # abandons the lane.  Once the close returns, its thread and the parked
    # ones exit, and the lane is released with what it held
    gc.collect()  # earlier tests' lanes: their threads leave meanwhile
    lane, rfd = a_lane_held_on_a_full_pipe(4)
    assert lane.running == 4
    assert lane.stop(0.2) is False
    refs = sys.getrefcount(lane)
    lane.abandon()
    lane.abandon()  # again: no second reference kept
    assert sys.getrefcount(lane) == refs + 1  # kept for its threads
    # the parked ones leave at once
    assert true_by(time.monotonic() + 10, lambda: lane.running == 1)
    with pytest.raises(RuntimeError):
        lane.submit(0)  # stopped: takes nothing more
    drain(rfd)
    assert true_by(time.monotonic() + 10, lambda: lane.running == 0)
    # released by the main thread, as soon as it runs Python code again
    assert true_by(time.monotonic() + 10,
                   lambda: sys.getrefcount(lane) == refs)
    assert lane.closed == 1 and lane.failures() == []
    assert lane.stop() is True  # nothing left, no thread to join


@pytest.mark.skipif(not os.path.isdir('/proc/self/task'),
                    reason='counts threads in /proc/self/task (Linux)')
def test_a_lane_dropped_while_a_close_hangs_does_not_wait_for_it():
    # a lane freed while one of its closes hangs: no wait that nothing
    # could interrupt; its threads are left the close, then exit, and the
    # last one out frees the lane
    gc.collect()  # earlier tests' lanes: their threads leave meanwhile
    before = os_threads()
    lane, rfd = a_lane_held_on_a_full_pipe(2)
    started = time.monotonic()
    del lane
    assert time.monotonic() - started < 5
    # the thread writes on, then closes the pipe: its end comes only then
    drain(rfd)
    assert true_by(time.monotonic() + 10, lambda: os_threads() <= before)


@pytest.mark.parametrize('native', [False, True])
def test_names_are_not_kept_once_their_files_are_closed(tmp_path, native):
    # a changegroup hands over the revlogs of thousands of files, each by
    # its name, for wait_for(): a name whose files are all closed needs no
    # entry (on the lane, at most about two per descriptor it may hold)
    closer = Closer(policy=closermod.BACKGROUND, native=native, owned=set(),
                    fdroom=None, maxqueue=8, tracknames=True, threads=2)
    assert closer.native == native
    for number in range(600):
        fd = os.open(str(tmp_path / 'f'), WRITE)
        closer.owned.add(fd)
        closer.close(fd, b'data/f%d.i' % number)
    closer.wait()
    names = (closer._pool._latesttokens if native
             else closer._pool._queuednames)
    # about twice the lane's room at most (more if a close was slow as the
    # last names were pruned); one per name, 600, without pruning
    assert len(names) < 100
    closer.wait_for(b'data/f599.i')
    closer.wait_for(b'data/f3.i')
    assert not closer.has_pending_any()
    closer.finish()


def test_lane_writes_what_it_is_given_then_closes(tmp_path):
    fds = [os.open(str(tmp_path / name), WRITE) for name in ('f0', 'f1')]
    owned = set(fds)
    lane = native.lane_module.Lane(8, 2, owned=owned)
    # bytes only, which nothing can change while a thread writes them:
    # refused having done nothing
    with pytest.raises(TypeError):
        lane.submit(fds[0], b'f0', bytearray(b'no'))
    assert owned == set(fds) and is_open(fds[0])
    lane.start(2)
    lane.submit(fds[0], b'f0', b'zero')
    lane.submit(fds[1], b'f1', b'')
    lane.stop()
    assert lane.closed == 2 and lane.held == 0 and lane.failures() == []
    assert not any(is_open(fd) for fd in fds)
    assert (tmp_path / 'f0').read_bytes() == b'zero'
    assert (tmp_path / 'f1').read_bytes() == b''


@pytest.mark.skipif(not os.path.exists('/dev/full'),
                    reason='no /dev/full on this system')
def test_lane_reports_a_failed_write_and_closes_all_the_same():
    fd = os.open('/dev/full', os.O_WRONLY)
    lane = native.lane_module.Lane(4, 1)
    lane.start(1)
    lane.submit(fd, b'full', b'x')
    lane.stop()
    assert lane.failures() == [(b'full', errno.ENOSPC, True)]
    assert lane.held == 0 and not is_open(fd)


def test_lane_unusable_in_a_forked_child():
    lane = native.lane_module.Lane(4, 1)
    lane.start(1)
    pid = os.fork()
    if pid == 0:  # the child: its copy has no threads
        try:
            lane.submit(0)
        except RuntimeError:
            os._exit(0)
        os._exit(1)
    _, status = os.waitpid(pid, 0)
    lane.stop()
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


@pytest.mark.skipif(
    sys.version_info < (3, 10),
    reason='before Python 3.10 an interrupt between a lock\'s __enter__ '
    'and its with block leaves the lock held (CPython bpo-29988); this '
    'test interrupts between any two bytecodes',
)
@pytest.mark.parametrize(
    'native, sample',
    [(True, 1), (True, 8), (False, 1)],
    ids=['lane', 'lane-unasked', 'python'],
)
def test_interrupts_never_close_a_descriptor_twice(tmp_path, native, sample):
    # a timer fires every 150 us; when it finds the submitter running the
    # closer's code, it raises KeyboardInterrupt there, between any two
    # bytecodes.  (Not inside threading's Condition: CPython cannot be
    # interrupted safely there, and an interrupt is raised once.)  The
    # submitter goes on with the next file (to land in as many places as
    # possible) and at the end closes what is still in owned, as a session
    # cleans up.  A descriptor closed twice fails with EBADF, on a lane
    # thread or here.
    fds = open_files(tmp_path, 3000)
    owned = set(fds)
    # sample 8: no report times each hand-over, so most go to the lane
    # without asking the policy (Closer.close's first branch), unless the
    # lane is full: a longer queue there
    closer = Closer(
        policy=closermod.BACKGROUND, native=native, owned=owned,
        maxqueue=8 if sample == 1 else 64, threads=2, sample=sample,
    )
    asked = []
    take_probe = closer.decisions.take_probe
    closer.decisions.take_probe = lambda: asked.append(1) or take_probe()
    inside = {
        os.path.normcase(module.__file__)
        for module in (closermod.closer, closermod.pools,
                       closermod.pythonpool, closermod.handovers,
                       closermod.inline)
    }
    interrupts = []

    def interrupt(signum, frame):
        if os.path.normcase(frame.f_code.co_filename) in inside:
            interrupts.append(frame.f_code.co_name)
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.00015, 0.00015)
        for i, fd in enumerate(fds):
            try:
                closer.close(fd, 'f%d' % i)
            except KeyboardInterrupt:
                pass
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    closer.finish(failing=True)
    left = len(owned)
    for fd in list(owned):
        os.close(fd)  # raises EBADF if the closer closed it too
    assert len(interrupts) > 10, 'too few interrupts to prove anything'
    if native and sample > 1:
        assert len(asked) < len(fds) // 2, 'the first branch barely ran'
    assert closer.errors == []
    # every file closed (the numbers may be open again: any thread of the
    # process opens files with the lowest numbers free)
    assert left_open(fds, tmp_path) == {}
    # interrupted before the hand-over: some stayed the submitter's
    assert left <= len(interrupts)


def run_with_shim(code, latency_us, timeout=120, **shimenv):
    env = dict(os.environ, LD_PRELOAD=SHIM, SLOWCLOSE_US=str(latency_us))
    env.update(shimenv)
    env['PYTHONPATH'] = os.path.join(os.path.dirname(__file__), '..')
    result = subprocess.run(
        [sys.executable, '-c', textwrap.dedent(code)],
        env=env, capture_output=True, text=True, timeout=timeout,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@needs_shim
def test_wait_for_waits_for_that_name_only(tmp_path):
    # 300 ms per close: a.i is still open when wait_for('b.i') returns only
    # if wait_for does not wait for everything; and it is closed when
    # wait_for('a.i') returns only if it waits at all
    out = run_with_shim(
        '''
        import os
        from hgext3rd.backgroundclose import engine as closermod
        def is_open(fd):
            try:
                os.fstat(fd)
                return True
            except OSError:
                return False
        flags = os.O_WRONLY | os.O_CREAT
        closer = closermod.Closer(policy='background', native=True,
                                  tracknames=True, threads=1, maxthreads=1)
        a = os.open(%r, flags)
        closer.close(a, 'a.i')
        closer.wait_for('b.i')
        print('after b.i, a.i open:', is_open(a))
        closer.wait_for('a.i')
        print('after a.i, a.i open:', is_open(a))
        print('pending:', closer.pending)
        closer.finish()
        '''
        % str(tmp_path / 'a.i'),
        300000,
    )
    assert out.splitlines() == [
        'after b.i, a.i open: True',
        'after a.i, a.i open: False',
        'pending: 0',
    ]


@needs_shim
def test_slow_closes_fail_on_lane_threads_and_are_raised(tmp_path):
    # the shim fails the close of f7 (after closing it): the error comes
    # back from a lane thread with the file's name, raised on a later
    # submission or at the end; every file handed over is closed
    out = run_with_shim(
        '''
        import os
        from hgext3rd.backgroundclose import engine as closermod
        closer = closermod.Closer(policy='background', native=True)
        names, fds = [], []
        try:
            with closer:
                for i in range(40):
                    fd = os.open(os.path.join(%r, 'f%%d' %% i),
                                 os.O_WRONLY | os.O_CREAT)
                    fds.append(fd)
                    closer.close(fd, 'f%%d' %% i)
        except closermod.FileError as exc:
            names.append((exc.name, exc.error.errno))
        closed = closer.stats()['close-background'].count
        print(names, closed == len(fds))
        for fd in fds:
            try:
                os.fstat(fd)
                print('still open:', fd)
            except OSError:
                pass
        '''
        % str(tmp_path),
        2000,
        SLOWCLOSE_FAIL_MATCH='/f7',
    ).strip()
    assert out == "[('f7', %d)] True" % errno.EIO


@needs_shim
def test_submitter_does_not_hold_the_gil_while_waiting_for_room(tmp_path):
    # a full lane (capacity 1, 100 ms per close): the submitter waits for
    # room; another Python thread must run meanwhile
    out = run_with_shim(
        '''
        import os, threading, time
        from hgext3rd.backgroundclose import engine as closermod
        ticks = []
        stop = threading.Event()
        def ticker():
            while not stop.is_set():
                ticks.append(1)
                time.sleep(0.005)
        closer = closermod.Closer(policy='background', native=True,
                                  maxqueue=1, threads=1, maxthreads=1)
        t = threading.Thread(target=ticker)
        t.start()
        with closer:
            for i in range(4):
                fd = os.open(os.path.join(%r, 'f%%d' %% i),
                             os.O_WRONLY | os.O_CREAT)
                before = len(ticks)
                closer.close(fd)
                during = len(ticks) - before
        stop.set()
        t.join()
        print('ticks while the last submission waited:', during > 3)
        '''
        % str(tmp_path),
        100000,
    ).strip()
    assert out == 'ticks while the last submission waited: True'


@needs_shim
def test_a_full_lane_grows_its_pool_at_the_next_file(tmp_path):
    # 20 ms closes, room for 4 pending: from the fifth file on the lane is
    # full after each hand-over, and each next file goes the long way,
    # which starts a thread; with window=16, waiting for files that ask
    # the policy anyway would leave the pool at a few threads
    out = run_with_shim(
        '''
        import os
        from hgext3rd.backgroundclose import engine as closermod
        closer = closermod.Closer(policy='background', native=True,
                                  minfilecount=0, maxqueue=4, threads=1,
                                  maxthreads=8, window=16, sample=8)
        with closer:
            for i in range(40):
                fd = os.open(os.path.join(%r, 'f%%d' %% i),
                             os.O_WRONLY | os.O_CREAT)
                closer.close(fd, 'f%%d' %% i)
            print('threads:', closer.threadcount)
        stats = closer.stats()
        print('counted:', stats['close'].count)
        print('closed:', stats['close-background'].count)
        '''
        % str(tmp_path),
        20000,
    )
    assert out.splitlines() == ['threads: 8', 'counted: 40', 'closed: 40']


@needs_shim
@pytest.mark.parametrize('sample', [1, 8], ids=['report', 'no report'])
def test_a_hand_over_made_without_asking_never_waits_for_room(
    tmp_path, sample
):
    # 20 ms closes, room for 4 pending, one thread at most: the lane is
    # full again and again.  The files that go straight to the lane (not
    # timed, report or not) must each find room, so that every wait for
    # room is one a timed hand-over measures; files that ask find it full
    out = run_with_shim(
        '''
        import os, sys
        from hgext3rd.backgroundclose import engine as closermod
        closer = closermod.Closer(policy='background', native=True,
                                  minfilecount=0, maxqueue=4, threads=1,
                                  maxthreads=1, window=16, sample=%d,
                                  owned=set())

        class Watched:
            def __init__(self, lane):
                self._lane = lane
                self.full = {'close': 0, 'hand_over': 0}
                self.calls = dict.fromkeys(self.full, 0)

            def submit(self, *args):
                caller = sys._getframe(1).f_code.co_name
                self.calls[caller] += 1
                if self._lane.pending >= 4:
                    self.full[caller] += 1
                return self._lane.submit(*args)

            def __getattr__(self, name):
                return getattr(self._lane, name)

        with closer:
            closer.start()
            watched = closer._queue = Watched(closer._queue)
            closer._handovers._queue = watched
            for i in range(48):
                fd = closer.open_owned(os.path.join(%r, 'f%%d' %% i),
                                       os.O_WRONLY | os.O_CREAT)
                closer.close(fd, 'f%%d' %% i)
            closer._queue = closer._handovers._queue = watched._lane
        print('routine:', watched.calls['close'] > 0)
        print('routine found it full:', watched.full['close'])
        print('asking found it full:', watched.full['hand_over'] > 0)
        print('closed:', closer.stats()['close-background'].count)
        '''
        % (sample, str(tmp_path)),
        20000,
    )
    assert out.splitlines() == [
        'routine: True',
        'routine found it full: 0',
        'asking found it full: True',
        'closed: 48',
    ]


# what the builds these tests make are imported as: the init function's
# name comes from the last part, and the whole name must not be the
# installed module's, as importing a module with single-phase init puts it
# in sys.modules
FALLBACK_NAME = 'fallback._closelane'


def build_lane(directory, *flags):
    """build _closelane.c into ``directory`` with extra compiler ``flags``,
    against this Python's headers: the path of the module"""
    return build_module('_closelane', directory, *flags)


@pytest.fixture(scope='module')
def fallback_lane(tmp_path_factory):
    """the path of _closelane.c built as on macOS, which has no
    pthread_condattr_setclock()"""
    # the function renamed to one that exists nowhere: a call to it left in
    # the fallback then fails to load here as it fails to build on macOS
    return build_lane(
        tmp_path_factory.mktemp('fallback'),
        '-DBACKGROUNDCLOSE_NO_CONDATTR_SETCLOCK',
        '-Dpthread_condattr_setclock=backgroundclose_no_such_function',
    )


def load_lane_module(path):
    spec = importlib.util.spec_from_file_location(FALLBACK_NAME, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fallback_without_condattr_setclock_closes_files(
        tmp_path, fallback_lane):
    lanemod = load_lane_module(fallback_lane)
    assert lanemod.__file__ == fallback_lane
    fds = open_files(tmp_path, 6)
    owned = set(fds)
    names = {}
    lane = lanemod.Lane(2, 2, owned=owned, names=names)
    assert lane.start(2) == 2
    tokens = []
    for i, fd in enumerate(fds):
        lane.submit(fd, b'f%d' % i)  # room for two: the others wait for it
        tokens.append(lane.lasttoken)
    # the names of closed files may be forgotten meanwhile (the dict holds
    # more than twice the lane's room): f2's token as submitted
    assert names.get(b'f2', tokens[2]) == tokens[2]
    lane.wait(tokens[2])
    assert not any(is_open(fd) for fd in fds[:3])
    lane.stop()
    assert (lane.closed, lane.failed, lane.threads) == (6, 0, 0)
    assert owned == set()
    assert not any(is_open(fd) for fd in fds)
    assert (tmp_path / 'f5').read_bytes() == b'data 5'


def test_free_threaded_build_refuses_to_load(tmp_path):
    # no free-threaded Python here: build the lane as it would be built for
    # one (its pyconfig.h defines Py_GIL_DISABLED) against these headers.
    # It must refuse before touching anything whose layout that changes, so
    # that closer.py falls back to Python threads.  Lazy binding, in a
    # child: such a build may name functions only a free-threaded libpython
    # has, and a lane that does not refuse could crash this Python.
    path = build_lane(tmp_path, '-DPy_GIL_DISABLED')
    stdout, stderr = load_in_child(FALLBACK_NAME, path)
    assert stdout == (
        'ImportError: _closelane needs the GIL, and this Python runs '
        'without\n'), stderr


@needs_shim
@pytest.mark.parametrize('build', ['built', 'fallback'])
@pytest.mark.parametrize(
    'call',
    ["lane.submit(spare, b'spare')", 'lane.wait()', 'lane.stop()'],
    ids=['submit', 'wait', 'stop'],
)
def test_ctrl_c_stops_a_call_stuck_behind_a_hung_close(
        tmp_path, request, call, build):
    # the lane's only thread is in a close that takes ten minutes (a
    # hard-mounted NFS server gone away) and the lane has room for one:
    # submit waits for room, wait and stop for that close.  Ctrl-C must
    # still get through, and an interrupted submit must have handed nothing
    # over.  The child leaves with os._exit, as anything else would wait
    # for the close; the timeout only keeps a lane deaf to the signal from
    # hanging the suite, the child needs a second or two.  The fallback
    # build times its waits for room and for closes on the wall clock.
    path = request.getfixturevalue('fallback_lane') if build == 'fallback' \
        else None
    out = run_with_shim(
        '''
        import importlib.util, os, signal, sys, threading, time
        path = %r
        if path is None:
            from hgext3rd.backgroundclose.engine import _closelane
        else:
            spec = importlib.util.spec_from_file_location(%r, path)
            _closelane = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(_closelane)
        def is_open(fd):
            try:
                os.fstat(fd)
                return True
            except OSError:
                return False
        flags = os.O_WRONLY | os.O_CREAT
        hung = os.open(%r, flags)
        spare = os.open(%r, flags)
        owned = {hung, spare}
        names = {}
        lane = _closelane.Lane(1, 1, owned=owned, names=names)
        lane.start(1)
        lane.submit(hung, b'hung')
        def call():
            %s
        main = threading.get_ident()
        def interrupt():
            # a signal that came before the call would prove nothing
            while sys._current_frames()[main].f_code.co_name != 'call':
                time.sleep(0.01)
            time.sleep(0.2)
            os.kill(os.getpid(), signal.SIGINT)
        threading.Thread(target=interrupt, daemon=True).start()
        try:
            call()
            print('returned')
        except KeyboardInterrupt as exc:
            tb = exc.__traceback__
            while tb.tb_next is not None:
                tb = tb.tb_next
            print('KeyboardInterrupt in', tb.tb_frame.f_code.co_name)
        print('spare owned:', spare in owned, 'open:', is_open(spare))
        print('names:', sorted(names))
        print('pending:', lane.pending, 'queued:', lane.queued,
              'threads:', lane.threads)
        sys.stdout.flush()
        os._exit(0)
        '''
        % (path, FALLBACK_NAME, str(tmp_path / 'hung'),
           str(tmp_path / 'spare'), call),
        600 * 1000000,
        timeout=60,
    )
    assert out.splitlines() == [
        'KeyboardInterrupt in call',
        'spare owned: True open: True',
        "names: [b'hung']",
        'pending: 1 queued: 0 threads: 1',
    ]


@needs_shim
def test_forked_children_refuse_every_getter_and_method(tmp_path):
    # 50 forks while closes are in flight: a lane thread may hold the
    # lane's mutex just then, and in the child no thread will ever release
    # it, so a child must not lock it at all: every getter and method
    # refuses with RuntimeError (closer.py already meets that from submit,
    # wait and stop there), and letting the lane go touches nothing either.
    # The parent polls for its children with a deadline: a child stuck on
    # the mutex fails the test instead of hanging the suite.
    out = run_with_shim(
        '''
        import os, resource, signal, sys, time, warnings
        from hgext3rd.backgroundclose.engine import _closelane
        # forking while threads run is the point
        warnings.simplefilter('ignore', DeprecationWarning)
        GETTERS = ('pending', 'queued', 'threads', 'peak', 'closed',
                   'failed', 'lasttoken', 'seconds', 'maxseconds')
        CALLS = (('start', (1,)), ('submit', (0,)), ('wait', ()),
                 ('wait', (0,)), ('stop', ()), ('failures', ()))
        owned = set()
        lane = _closelane.Lane(4096, 2, 1, owned=owned, names={})
        lane.start(2)

        def child():
            global lane
            answered = []
            for getter in GETTERS:
                try:
                    answered.append(f'{getter}={getattr(lane, getter)!r}')
                except RuntimeError:
                    pass
            for method, args in CALLS:
                try:
                    answered.append(f'{method}{args} -> '
                                    f'{getattr(lane, method)(*args)!r}')
                except RuntimeError:
                    pass
            del lane
            if answered:
                os.write(2, f'{os.getpid()}: {answered}\\n'.encode())
            os._exit(1 if answered else 0)

        # each round: two written files (slow closes) keep both threads
        # busy while a burst of fast closes (dups of /dev/null, no regular
        # file) queues up behind them; the fork comes as the first slow
        # close ends, while the threads race through the burst, taking and
        # dropping the mutex all the time
        burst = min(2000, resource.getrlimit(resource.RLIMIT_NOFILE)[0] // 4)
        devnull = os.open(os.devnull, os.O_RDONLY)
        children = []
        for i in range(50):
            for name in (f'a{i}', f'b{i}'):
                fd = os.open(os.path.join(%r, name), os.O_WRONLY | os.O_CREAT)
                owned.add(fd)
                lane.submit(fd, name.encode())
            for _ in range(burst):
                fd = os.dup(devnull)
                owned.add(fd)
                lane.submit(fd)
            closed = lane.closed
            while lane.closed == closed and lane.pending:
                pass
            pid = os.fork()
            if pid == 0:
                child()
            children.append(pid)

        statuses = {}
        deadline = time.monotonic() + 60
        while len(statuses) < len(children) and time.monotonic() < deadline:
            for pid in children:
                if pid not in statuses:
                    done, status = os.waitpid(pid, os.WNOHANG)
                    if done:
                        statuses[pid] = status
            time.sleep(0.01)
        hung = [pid for pid in children if pid not in statuses]
        for pid in hung:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        refused = sum(os.WIFEXITED(s) and os.WEXITSTATUS(s) == 0
                      for s in statuses.values())
        lane.stop()
        os.close(devnull)
        print('children:', len(children), 'refused all:', refused,
              'hung:', len(hung))
        print('closed:', lane.closed == 50 * (2 + burst),
              'failed:', lane.failed, 'owned:', len(owned))
        '''
        % str(tmp_path),
        20000,
    )
    assert out.splitlines() == [
        'children: 50 refused all: 50 hung: 0',
        'closed: True failed: 0 owned: 0',
    ]


def test_a_hand_over_while_stop_waits_is_refused_to_its_submitter():
    # one of core's writer threads hands a descriptor over while the
    # applying thread's stop() waits for a close that hangs: the lane
    # refuses it (its submitter closes it), where queued after the wait's
    # last token it would be closed in the join that follows, which no
    # Ctrl-C can cut short
    lane, rfd = a_lane_held_on_a_full_pipe(2)
    stopped = []
    stopper = threading.Thread(target=lambda: stopped.append(lane.stop()))
    stopper.start()
    rfd2, wfd2 = os.pipe()
    try:
        assert true_by(time.monotonic() + 10, lambda: lane.queued == 0
                       and stopper.is_alive())
        time.sleep(0.05)  # the stop is waiting by now
        with pytest.raises(RuntimeError):
            lane.submit(wfd2, b'second', b'y' * (1 << 20))
        assert is_open(wfd2)  # still its submitter's
    finally:
        drain(rfd)
        stopper.join(30)
        os.close(wfd2)
        os.close(rfd2)
    assert not stopper.is_alive() and stopped == [True]
    assert lane.joinerrors == 0


@pytest.mark.skipif(not os.path.isdir('/proc/self/task'),
                    reason='counts threads in /proc/self/task (Linux)')
def test_stop_and_abandon_on_two_threads_at_once():
    # abandon() while another thread's stop() waits for a hung close: the
    # stop does not join the threads abandon() detached; both return, and
    # the threads exit once the close returns
    gc.collect()
    before = os_threads()
    lane, rfd = a_lane_held_on_a_full_pipe(3)
    stopped = []
    stopper = threading.Thread(target=lambda: stopped.append(lane.stop()))
    stopper.start()
    time.sleep(0.05)
    lane.abandon()
    drain(rfd)
    stopper.join(30)
    assert not stopper.is_alive()
    assert true_by(time.monotonic() + 10, lambda: lane.running == 0)
    assert stopped in ([True], [False])
    assert lane.stop() is True
    # no thread abandon() detached was joined (undefined behaviour)
    assert lane.joinerrors == 0
    del lane
    assert true_by(time.monotonic() + 10, lambda: os_threads() <= before)
