# test_pools.py - the pool interface, every case run against both pools
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""What the closer relies on from a pool (engine/pools.py), held to the
same behaviour for the Python threads and the C lane: the closer has no
branch on which one runs, so each case below runs against both."""

import dis
import os
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))

from hgext3rd.backgroundclose.engine import (  # noqa: E402
    descriptors,
    native,
    pools,
    stats,
)

WRITE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC

KINDS = [
    pytest.param('python', id='python'),
    pytest.param(
        'lane',
        id='lane',
        marks=pytest.mark.skipif(
            native.lane_module is None,
            reason='the C lane is not built here (test_closelane.py says '
            'where it must be)',
        ),
    ),
]


def is_open(fd):
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def make(kind, owned, maxqueue=16, maxthreads=4, batch=1, tracknames=False,
         closefn=None):
    if closefn is None:
        # what was handed over is the pool's, out of ``owned``: closed as
        # it is (the closer gives its pool the same)
        closefn = descriptors.close_target
    cls = pools.PythonPool if kind == 'python' else pools.LanePool
    return cls(maxqueue, maxthreads, batch, closefn, owned, tracknames)


@pytest.fixture(params=KINDS)
def kind(request):
    return request.param


@pytest.fixture
def owned():
    return set()


@pytest.fixture
def files(tmp_path, owned):
    """open(name): a new descriptor in ``owned``, as a seam opens one"""
    made = []

    def open_one(name='f'):
        path = str(tmp_path / ('%s%d' % (name, len(made))))
        fd = descriptors.open_owned(path, WRITE, owned)
        made.append((fd, path))
        return fd

    open_one.made = made
    yield open_one
    # what is still owned, once each: a number a pool closed may have been
    # reused by a later open, so ``made`` can list a number twice
    while owned:
        os.close(owned.pop())


def stopped(pool):
    assert pool.stop(time.monotonic() + 30)
    return pool


def test_every_file_handed_over_is_closed_once_and_leaves_owned(
        kind, owned, files):
    pool = make(kind, owned)
    assert pool.start(2) == 2
    fds = [files() for _ in range(50)]
    for fd in fds:
        pool.submit(fd, 'f')
        assert fd not in owned  # the pool's from the step that queued it
    stopped(pool)
    assert not [fd for fd in fds if is_open(fd)]
    assert pool.failed == 0 and pool.pending == 0
    stat = stats.OpStat()
    pool.add_background_stats(stat)
    assert stat.count == 50


def test_data_handed_over_is_written_before_the_close(kind, owned, files):
    # only a pool whose threads write takes data; for the other the closer
    # writes it on the calling thread, before the hand-over
    pool = make(kind, owned)
    pool.start(1)
    fd = files()
    path = files.made[-1][1]
    if not pool.writes_on_threads:
        with pytest.raises(ValueError):
            pool.submit(fd, 'data/a.i', b'abc')
        assert fd in owned and is_open(fd)  # refused: still the caller's
        stopped(pool)
        return
    pool.submit(fd, 'data/a.i', b'abc' * 1000)
    stopped(pool)
    with open(path, 'rb') as fp:
        assert fp.read() == b'abc' * 1000


@pytest.mark.skipif(os.name != 'posix', reason='needs dup2 to a chosen '
                    'number and EBADF from close()')
def test_a_failed_close_is_a_failure_naming_the_file(kind, owned, files):
    pool = make(kind, owned)
    pool.start(1)
    # a number far above those the process uses, closed already: closing
    # it again fails with EBADF, and no other open can take the number
    # meanwhile (the lowest free one is always taken first)
    import resource

    fd = files()
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    unused = os.dup2(fd, min(900, soft - 1))
    os.close(unused)
    pool.submit(unused, 'data/gone.i')
    stopped(pool)
    assert pool.failed == 1
    [failure] = pool.failures()
    assert isinstance(failure, descriptors.FileError)
    assert (failure.name, failure.action) == ('data/gone.i', 'closing')
    assert pool.failures(1) == []


def test_a_failed_write_is_a_failure_and_the_file_is_closed(
        kind, owned, tmp_path):
    pool = make(kind, owned)
    if not pool.writes_on_threads:
        pytest.skip('this pool takes no data: tests/test_closer.py has the '
                    'closer write it')
    pool.start(1)
    fd = descriptors.open_owned(os.devnull, os.O_RDONLY, owned)
    pool.submit(fd, 'data/ro.i', b'x')
    stopped(pool)
    [failure] = pool.failures()
    assert (failure.name, failure.action) == ('data/ro.i', 'writing')
    assert not is_open(fd) and fd not in owned


def test_a_pool_without_threads_or_stopped_takes_nothing(kind, owned, files):
    pool = make(kind, owned)
    fd = files()
    with pytest.raises(RuntimeError):
        pool.submit(fd, 'f')  # no thread started
    pool.start(1)
    stopped(pool)
    with pytest.raises(RuntimeError):
        pool.submit(fd, 'f')
    # refused: still the caller's, open and owned
    assert fd in owned and is_open(fd)


def test_wait_and_wait_for_return_once_the_files_are_closed(
        kind, owned, files):
    pool = make(kind, owned, tracknames=True, batch=8)
    pool.start(2)
    first = [files() for _ in range(3)]
    for fd in first:
        pool.submit(fd, 'data/a.i')
    pool.wait_for('data/a.i')
    assert not [fd for fd in first if is_open(fd)]
    pool.wait_for('never-handed-over')
    second = [files() for _ in range(3)]
    for fd in second:
        pool.submit(fd, 'data/b.i')
    pool.wait()
    assert not [fd for fd in second if is_open(fd)]
    assert not pool.has_pending_any()
    stopped(pool)


def test_threads_started_are_capped_and_counted(kind, owned):
    pool = make(kind, owned, maxthreads=3)
    assert pool.start(2) == 2
    assert pool.start(10) == 3
    assert pool.threads == 3 and pool.started == 3
    stopped(pool)
    assert pool.threads == 0 and pool.started == 3


def _nice(tid):
    return os.getpriority(os.PRIO_PROCESS, tid)


@pytest.mark.skipif(
    not (sys.platform.startswith('linux') and os.path.isdir('/proc/self/task')),
    reason='a nice value of its own per thread, and /proc/self/task: Linux',
)
def test_lowered_threads_run_lower_from_the_next_file_they_take(
        kind, owned, files):
    me = threading.get_native_id()
    began = _nice(me)
    if began > 19 - 5:
        pytest.skip('the tests run at nice %d: no room 5 steps lower' % began)
    before = set(os.listdir('/proc/self/task'))
    # one thread: the files below are all its own
    pool = make(kind, owned, maxthreads=1)
    assert pool.start(1) == 1
    (thread,) = {int(t) for t in os.listdir('/proc/self/task')} - {
        int(t) for t in before
    }
    pool.submit(files(), 'f')
    pool.wait()
    assert _nice(thread) == began  # not asked yet
    pool.lower_priority(5)
    pool.submit(files(), 'f')
    pool.wait()
    lowered = _nice(thread)
    pool.lower_priority(5)  # the same again: no further
    pool.submit(files(), 'f')
    pool.wait()
    again = _nice(thread)
    stopped(pool)
    assert (lowered, again) == (began + 5, began + 5)
    assert _nice(me) == began  # the submitter keeps its own


def test_a_kick_closes_what_waits_for_a_batch(kind, owned, files):
    # a batch of 8 wakes a parked thread; fewer wait until someone waits,
    # or until a kick says no more may come
    pool = make(kind, owned, batch=8)
    pool.start(1)
    deadline = time.monotonic() + 10
    while not parked(pool) and time.monotonic() < deadline:
        time.sleep(0.001)
    assert parked(pool)
    fds = [files() for _ in range(2)]
    for fd in fds:
        pool.submit(fd, 'f')
    assert pool.pending == 2  # waiting for a batch
    pool.kick()
    while pool.pending and time.monotonic() < deadline:
        time.sleep(0.001)
    assert pool.pending == 0
    assert not [fd for fd in fds if is_open(fd)]
    stopped(pool)


def parked(pool):
    """whether the pool's one thread waits for work"""
    if isinstance(pool, pools.LanePool):
        return pool._lane.parked == 1
    return pool._idle == 1


def test_full_once_as_many_are_pending_as_there_is_room_for(
        kind, owned, files):
    # the closer grows the pool, and ends a run of hand-overs made without
    # asking, when a submit says the pool is full
    pool = make(kind, owned, maxqueue=4, batch=8)
    pool.start(1)
    deadline = time.monotonic() + 10
    while not parked(pool) and time.monotonic() < deadline:
        time.sleep(0.001)
    answers = [pool.submit(files(), 'f') for _ in range(4)]
    assert answers == [False, False, False, True]
    assert pool.peak == 4
    stopped(pool)


@pytest.mark.skipif(not hasattr(os, 'fork'), reason='needs os.fork')
def test_a_forked_child_s_pool_holds_nothing_of_the_parent(
        kind, owned, files):
    pool = make(kind, owned)
    pool.start(2)
    pool.submit(files(), 'f')
    child = pool.disowned()
    assert not child.accepts(0) and child.threads == 0
    with pytest.raises(RuntimeError):
        child.submit(files(), 'f')
    assert child.failures() == [] and child.stop(None)
    stopped(pool)


def test_python_pool_takes_file_objects_the_lane_descriptors_only(kind):
    pool = make(kind, set())
    with open(os.devnull, 'rb') as fp:
        assert pool.accepts(fp) == (kind == 'python')
    assert pool.accepts(3)
    stopped(pool)


def test_stop_with_a_deadline_returns_false_and_can_be_called_again(
        kind, owned, files, tmp_path):
    # a close that does not return before the deadline: stop() says so and
    # stops nothing; once the close returns, a second stop() joins
    if kind == 'lane':
        pytest.skip('a lane close cannot be held from Python: '
                    'test_closelane.py holds one with the shim')
    release = threading.Event()

    def held(fd):
        release.wait(10)
        os.close(fd)  # the pool's, out of ``owned`` since its hand-over

    pool = make(kind, owned, closefn=held)
    pool.start(1)
    pool.submit(files(), 'f')
    assert not pool.stop(time.monotonic() + 0.05)
    release.set()
    assert pool.stop(time.monotonic() + 30)


def test_a_second_interrupt_as_a_submit_is_taken_back_loses_nothing(
        owned, files):
    # Python threads only (the lane queues in one C call): an interrupt
    # right after the file was queued makes submit() take it back; a second
    # one as the take-back begins must leave the descriptor queued (closed
    # by a thread) or owned (closed by the seam's cleanup), never neither
    pool = make('python', owned, batch=1)
    pool.start(1)
    deadline = time.monotonic() + 10
    while not parked(pool) and time.monotonic() < deadline:
        time.sleep(0.001)
    assert parked(pool)
    fd = files()

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    # the first: waking the parked thread, after the file was queued; the
    # second: as the take-back begins
    pool._work.notify = interrupted
    pool._taken_back_locked = interrupted
    with pytest.raises(KeyboardInterrupt):
        pool.submit(fd, 'f')
    del pool._work.notify, pool._taken_back_locked
    stopped(pool)
    if fd in owned:
        owned.discard(fd)  # the seam's cleanup
        os.close(fd)
    assert not is_open(fd)


class RearmedPool(pools.PythonPool):
    """a Python pool that calls ``rearm(frame)`` once, the first time its
    queue is looked at after ``rearm`` was set, with the frame that looks
    (on the thread that set it): a test's way back into tracing after the
    first interrupt it raised from a tracer, which Python unsets"""

    rearm = None

    @property
    def _items(self):
        rearm = self.rearm
        if rearm is not None and threading.get_ident() == rearm.thread:
            self.rearm = None
            rearm(sys._getframe(1))
        return self.__dict__['queue_']

    @_items.setter
    def _items(self, value):
        self.__dict__['queue_'] = value


def signal_points(code):
    """the offsets in ``code`` where a signal can raise: a function's entry
    and the instruction after each call (Python handles a signal as a
    call returns; not between two other bytecodes)"""
    points = {0}
    after = False
    for instruction in dis.get_instructions(code):
        if after:
            points.add(instruction.offset)
        after = instruction.opname.startswith('CALL')
    return points


def interrupting_tracer(codes, count, then):
    """a tracer for sys.settrace() (and for a running frame's f_trace)
    that raises KeyboardInterrupt at the ``count``-th point where a signal
    can raise in frames of ``codes``, after calling ``then()``; its list
    says whether it did"""
    points = {code: signal_points(code) for code in codes}
    seen = [0]
    raised = []

    def local(frame, event, arg):
        if event != 'opcode':
            # again: Python 3.13.0 honours it set here, not as the frame
            # is entered (its first line then comes without opcodes)
            frame.f_trace_opcodes = True
            return local
        if not raised and frame.f_lasti in points[frame.f_code]:
            seen[0] += 1
            if seen[0] == count:
                raised.append(count)
                then()
                raise KeyboardInterrupt
        return local

    def tracer(frame, event, arg):
        if frame.f_code in points:
            frame.f_trace_opcodes = True
            return local
        return None

    tracer.local = local
    return tracer, raised


def rearming(tracer):
    """``rearm(frame)`` for a RearmedPool: ``tracer`` (an
    interrupting_tracer) traces from ``frame`` on, on this thread"""

    def rearm(frame):
        sys.settrace(tracer)
        frame.f_trace = tracer.local
        frame.f_trace_opcodes = True

    rearm.thread = threading.get_ident()
    return rearm


def test_two_interrupts_at_any_bytecodes_of_a_submit_leave_one_owner(owned):
    # Python threads only (the lane queues in one C call).  The first
    # interrupt at any point of the hand-over where a signal can raise,
    # the second at any of the
    # take-back that follows it (from the first look at the queue after
    # the first): after both, the descriptor has exactly one owner, the
    # submitter's ``owned`` or the pool (queued, or closed by its thread);
    # both would close it twice, neither never.  Numbers no file has: the
    # pool's close only records them.
    closed = []
    pool = RearmedPool(1 << 20, 4, 1 << 20, closed.append, owned)
    assert pool.start(1) == 1
    handing = {
        pools.PythonPool._enqueue_locked.__code__,
        descriptors.queue_handed_over.__code__,
    }
    taking_back = {
        pools.PythonPool.submit.__code__,
        pools.PythonPool._taken_back_locked.__code__,
        descriptors.take_back_handed.__code__,
    }
    fd = 1 << 20
    pairs = 0
    first = 0
    while True:
        first += 1
        second = 0
        while True:
            second += 1
            fd += 1
            owned.add(fd)
            tracer2, raised2 = interrupting_tracer(taking_back, second, lambda: 0)
            rearm = rearming(tracer2)

            def armed():
                pool.rearm = rearm

            tracer1, raised1 = interrupting_tracer(handing, first, armed)
            try:
                try:
                    sys.settrace(tracer1)
                    pool.submit(fd, 'f')
                finally:
                    sys.settrace(None)
                    pool.rearm = None
            except KeyboardInterrupt:
                pass
            with pool._lock:
                queued = any(t == fd for t, _name in pool._items)
                in_pool = queued or fd in pool._closing.values()
            in_pool = in_pool or fd in closed
            assert (fd in owned) != in_pool, (first, second)
            owned.discard(fd)
            pairs += 1
            if not raised2:
                break  # past the take-back's last bytecode
        if not raised1:
            break  # past the hand-over's last bytecode
    # the floor shows the tracer found the points (one that finds none, as
    # on 3.13.0 once, stops at one pair): 5 first points and 28 pairs here
    # on 3.9 to 3.13, fewer second points where the pool's thread took the
    # file before the take-back looked (16 pairs once, under load)
    assert first > 3 and pairs > 12, (first, pairs)
    stopped(pool)


OWNERS = [
    pytest.param('c', id='c', marks=pytest.mark.skipif(
        native.lane_module is None,
        reason='the C module is not built here (test_closelane.py says '
        'where it must be)',
    )),
    pytest.param('python', id='python'),
]


@pytest.fixture(params=OWNERS)
def owner_module(request, monkeypatch):
    """close_owned() and the hand-over done by the C module, or by the
    Python code used where it is not built"""
    if request.param == 'python':
        monkeypatch.setattr(native, 'lane_module', None)
    return request.param


def test_a_number_not_owned_is_never_closed_and_raised_in_tests(
        owner_module, tmp_path, monkeypatch):
    # its owner is another (a pool, another session), or it was closed
    # already and its number reused: closing it would close another file
    fd = os.open(str(tmp_path / 'other'), WRITE, 0o644)
    owned = {fd + 1000}
    try:
        with pytest.raises(descriptors.OwnershipError):
            descriptors.close_owned(fd, owned)
        assert is_open(fd)
        assert owned == {fd + 1000}
        # the same through the closer of a submitter keeping ``owned``
        closefn = descriptors.owned_closer(descriptors.close_target, owned)
        with pytest.raises(descriptors.OwnershipError):
            closefn(fd)
        assert is_open(fd)
        # in use: left open, and kept to be reported once
        monkeypatch.setattr(descriptors, 'STRICT', False)
        descriptors.take_unowned()
        descriptors.close_owned(fd, owned)
        closefn(fd)
        assert is_open(fd)
        assert descriptors.take_unowned() == [fd, fd]
        assert descriptors.take_unowned() == []
    finally:
        os.close(fd)


def test_a_number_owned_is_closed_once_and_forgotten(owner_module, tmp_path):
    owned = set()
    fd = descriptors.open_owned(str(tmp_path / 'mine'), WRITE, owned)
    assert fd in owned
    descriptors.close_owned(fd, owned)
    assert not is_open(fd) and fd not in owned
