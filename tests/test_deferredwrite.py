# whole files written by writer threads (shared/deferredwrite.py), and when
# a stream apply starts them (engine/writepolicy.py): no Mercurial
# repository, no sleeps
import os
import sys
import threading

import pytest

from hgext3rd.backgroundclose import engine as closermod
from hgext3rd.backgroundclose.shared import deferredwrite
from waiting import interrupted_after
from hgext3rd.backgroundclose.engine import policy as policymod  # noqa: E402
from hgext3rd.backgroundclose.engine import (  # noqa: E402
    writepolicy as writepolicymod,
)

US = 1e-6


# -- WritePolicy -------------------------------------------------------


def drive(writepolicy, wall, cpu, opens):
    """time ``opens`` opens the way the session does; True once writers
    would start"""
    for _ in range(opens):
        how = writepolicy.time_next()
        if how is None:
            continue
        if writepolicy.learn(wall, cpu if how == 'cpu' else None):
            return True
    return False


def test_waiting_opens_start_writers_after_a_few():
    wp = writepolicymod.WritePolicy(threshold=100 * US, sample=8)
    assert drive(wp, wall=1500 * US, cpu=40 * US, opens=12)
    assert wp.deferring
    assert wp.timed == writepolicymod.WritePolicy.FIRST


def test_cheap_opens_never_start_writers_and_are_sampled():
    wp = writepolicymod.WritePolicy(threshold=100 * US, sample=8)
    timed = 0
    for _ in range(800):
        how = wp.time_next()
        if how is not None:
            timed += 1
            assert how == 'wall'  # no CPU time asked of cheap opens
            assert not wp.learn(15 * US)
    assert not wp.deferring
    assert timed == 100  # one in eight


def test_burning_opens_are_no_wait():
    # a scan on open: as slow as a network round trip, all of it CPU
    wp = writepolicymod.WritePolicy(threshold=100 * US, sample=8)
    assert not drive(wp, wall=1500 * US, cpu=1450 * US, opens=2000)
    assert not wp.deferring


def test_one_preempted_open_does_not_start_writers():
    wp = writepolicymod.WritePolicy(threshold=100 * US, sample=8)
    assert wp.time_next() == 'wall'
    wp.learn(900 * US)
    assert wp.time_next() == 'cpu'
    assert not wp.learn(900 * US, 10 * US)  # preempted, or one slow mkdir
    assert not drive(wp, wall=20 * US, cpu=15 * US, opens=2000)
    assert not wp.deferring


def test_a_slow_open_timed_by_wall_only_is_not_counted():
    wp = writepolicymod.WritePolicy(threshold=100 * US, sample=8)
    assert wp.time_next() == 'wall'
    assert not wp.learn(900 * US)
    assert wp.timed == 0
    # the next open is timed, in CPU time too
    assert wp.time_next() == 'cpu'
    assert not wp.learn(20 * US, 15 * US)  # cheap after all
    # then one in eight again, in wall time alone (no system call)
    timed = [wp.time_next() for _ in range(16)]
    assert timed.count('wall') == 2 and timed.count(None) == 14


def time_opens(wp, opens, wall, cpu, blocked=None):
    """``opens`` opens the way the session times them, each taking
    ``wall`` seconds, ``cpu`` of them on the CPU: what time_next() said
    for each, and whether opens_cheap() held after each"""
    hows, cheap = [], []
    for _ in range(opens):
        how = wp.time_next()
        hows.append(how)
        if how == 'cpu':
            assert not wp.learn(wall, cpu, blocked)
        elif how == 'wall':
            assert not wp.learn(wall)
        cheap.append(wp.opens_cheap())
    return hows, cheap


@pytest.mark.parametrize('cpu,blocked', [(40 * US, None), (10 * US, False)],
                         ids=['all-cpu', 'cpu-and-preempted'])
def test_opens_that_only_burn_cpu_near_a_quarter_stay_sampled(cpu, blocked):
    # on a local disk, an open that makes directories takes tens of us, all
    # of it CPU, or CPU and waiting for a core on a busy machine (the
    # thread never slept in the kernel): by wall time a quarter of the way
    # to the threshold, but no wait.  Timed in CPU time once the wall time
    # says a decision may be near, they show none, and most opens go
    # untimed again; files may be left to core (opens_cheap) most of the
    # time
    wp = writepolicymod.WritePolicy(threshold=100 * US, sample=8)
    hows, cheap = time_opens(wp, 800, 40 * US, cpu, blocked)
    assert 'cpu' in hows
    assert hows.count(None) > 400
    assert sum(cheap[400:]) > 200
    assert not wp.deferring


def test_opens_that_wait_near_a_quarter_are_timed_in_wall_time_alone():
    # a network file system answering an open in 40 us: a decision may be
    # near, so every open is timed, but once one timed in CPU time showed
    # waiting, wall time alone tells (no system call)
    wp = writepolicymod.WritePolicy(threshold=100 * US, sample=8)
    hows, cheap = time_opens(wp, 800, 40 * US, 3 * US)
    assert 0 < hows.count('cpu') <= 2
    assert hows[400:].count('wall') == 400
    assert not any(cheap[400:])
    assert not wp.deferring


def test_opens_that_turn_slow_after_burning_cpu_start_writers_soon():
    wp = writepolicymod.WritePolicy(threshold=100 * US, sample=8)
    time_opens(wp, 800, 40 * US, 40 * US)
    assert drive(wp, wall=1500 * US, cpu=40 * US, opens=24)


def test_forced_modes():
    on = writepolicymod.WritePolicy(policymod.BACKGROUND)
    assert on.deferring and on.time_next() is None
    off = writepolicymod.WritePolicy(policymod.INLINE)
    assert not drive(off, wall=5000 * US, cpu=0, opens=100)
    assert not off.deferring


def test_unknown_mode_refused():
    with pytest.raises(ValueError):
        writepolicymod.WritePolicy('sometimes')


# -- WriteBudget -------------------------------------------------------


def test_budget_bounds_what_is_held():
    budget = deferredwrite.WriteBudget(most=100)
    assert budget.take(60)
    assert not budget.take(41)  # refused: nothing held for it
    assert budget.held == 60
    assert budget.take(40)
    budget.give(60)
    budget.give(40)
    assert budget.held == 0
    assert budget.peak == 100


# -- DeferredFile ------------------------------------------------------


class OpenNow:
    """what the session opens on the reading thread"""

    def __init__(self):
        self.data = []
        self.closed = False
        self.exited = False

    def write(self, data):
        self.data.append(data)
        return len(data)

    def close(self):
        self.closed = True

    def __exit__(self, *exc):
        self.exited = True


class Session:
    def __init__(self):
        self.handed = []
        self.opened = []

    def write_later(self, deferred, chunks, size):
        self.handed.append((deferred.name, chunks, size))

    def open_now(self, deferred):
        fp = OpenNow()
        self.opened.append(fp)
        return fp


def test_data_held_until_close_hands_it_over():
    session, budget = Session(), deferredwrite.WriteBudget(most=1000)
    with deferredwrite.DeferredFile(session, b'/r/a', budget) as fp:
        fp.write(b'abc')
        fp.write(memoryview(b'de'))  # copied: core may reuse a buffer
        assert budget.held == 5
        assert session.handed == []
    assert session.handed == [(b'/r/a', [b'abc', b'de'], 5)]
    assert type(session.handed[0][1][1]) is bytes
    # still held: the writer gives it back once written
    assert budget.held == 5
    fp.close()  # once only
    assert len(session.handed) == 1


def test_over_budget_opens_now_and_keeps_the_order():
    session, budget = Session(), deferredwrite.WriteBudget(most=10)
    fp = deferredwrite.DeferredFile(session, b'/r/big', budget)
    fp.write(b'12345')
    fp.write(b'678901')  # does not fit: opened here
    fp.write(b'xyz')
    fp.close()
    assert session.handed == []
    [now] = session.opened
    assert now.data == [b'12345', b'678901', b'xyz']
    assert now.closed
    assert budget.held == 0


def test_failing_with_block_writes_nothing():
    session, budget = Session(), deferredwrite.WriteBudget(most=100)
    with pytest.raises(KeyboardInterrupt):
        with deferredwrite.DeferredFile(session, b'/r/a', budget) as fp:
            fp.write(b'abc')
            raise KeyboardInterrupt
    assert session.handed == []
    assert budget.held == 0


def test_forgotten_file_gives_memory_back():
    session, budget = Session(), deferredwrite.WriteBudget(most=100)
    fp = deferredwrite.DeferredFile(session, b'/r/a', budget)
    fp.write(b'abc')
    del fp
    assert budget.held == 0
    assert session.handed == []


def test_a_ctrl_c_in_its_finalizer_is_raised_after_it(monkeypatch):
    # a signal's handler runs at whatever bytecode the main thread is at,
    # a finalizer's too, which can raise nothing: the Ctrl-C is delivered
    # again while the apply's closer runs, not lost
    session, budget = Session(), deferredwrite.WriteBudget(most=100)
    made = [deferredwrite.DeferredFile(session, b'/r/a', budget)]
    made[0].write(b'abc')

    def interrupted(self):
        raise KeyboardInterrupt

    monkeypatch.setattr(deferredwrite.DeferredFile, 'discard', interrupted)
    with closermod.Closer(policy='background', threads=1):
        assert interrupted_after(made.clear)


# -- FileWrite ---------------------------------------------------------


def file_write(tmp_path, chunks, opener=None, cancelled=None,
               prepare=None):
    name = bytes(tmp_path / 'sub' / 'f.i')
    budget = deferredwrite.WriteBudget()
    size = sum(len(c) for c in chunks)
    assert budget.take(size)
    made = []

    def default_prepare():
        os.makedirs(os.path.dirname(name), exist_ok=True)
        made.append(True)

    write = deferredwrite.FileWrite(
        name,
        prepare or default_prepare,
        opener or (lambda: open(name, 'wb')),
        list(chunks),
        size,
        budget,
        closermod.StatsBook(('open', 'write', 'mkdir', 'close-written')),
        cancelled or threading.Event(),
        True,
    )
    return write, name, budget, made


def test_written_whole_on_close(tmp_path):
    write, name, budget, made = file_write(tmp_path, [b'ab', b'cd'])
    write.close()
    with open(name, 'rb') as fp:
        assert fp.read() == b'abcd'
    assert made == [True]
    assert budget.held == 0
    write.close()  # nothing twice
    assert made == [True]


def test_open_failure_names_the_file(tmp_path):
    def refuse():
        raise PermissionError(13, 'Permission denied')

    write, name, budget, _made = file_write(tmp_path, [b'x'], opener=refuse)
    with pytest.raises(closermod.FileError) as info:
        write.close()
    assert info.value.action == 'opening'
    assert info.value.name == name
    assert budget.held == 0


def test_write_failure_closes_the_file(tmp_path):
    opened = []

    class Full:
        closed = False

        def write(self, data):
            raise OSError(28, 'No space left on device')

        def close(self):
            self.closed = True

    def opener():
        opened.append(Full())
        return opened[-1]

    write, _name, budget, _made = file_write(tmp_path, [b'x'], opener=opener)
    with pytest.raises(closermod.FileError) as info:
        write.close()
    assert info.value.action == 'writing'
    assert opened[0].closed
    assert budget.held == 0


def test_cancelled_writes_nothing(tmp_path):
    cancelled = threading.Event()
    cancelled.set()
    write, name, budget, made = file_write(
        tmp_path, [b'x'], cancelled=cancelled)
    write.close()
    assert not os.path.exists(name)
    assert budget.held == 0


def test_cancelled_while_writing_takes_the_file_back(tmp_path):
    cancelled = threading.Event()
    name = bytes(tmp_path / 'sub' / 'f.i')

    def opener():
        fp = open(name, 'wb')
        cancelled.set()  # the apply fails while this file is written
        return fp

    write, name, budget, _made = file_write(
        tmp_path, [b'x'], opener=opener, cancelled=cancelled)
    write.close()
    assert not os.path.exists(name)
    assert budget.held == 0


def test_closer_keeps_a_file_write_error_as_it_is(tmp_path):
    # on a writer thread, the closer must not wrap the FileWrite's own
    # error (which says "opening") in one that says "closing"
    def refuse():
        raise PermissionError(13, 'Permission denied')

    write, name, _budget, _made = file_write(tmp_path, [b'x'], opener=refuse)
    closer = closermod.Closer(policy=closermod.BACKGROUND, threads=1,
                              minfilecount=0)
    closer.close(write, name)
    with pytest.raises(closermod.FileError) as info:
        closer.finish()
    assert info.value.action == 'opening'


def full_disk():
    """a file whose writes fail as on a full disk (no space left)"""
    return open('/dev/full', 'wb', buffering=0)


def refused():
    raise PermissionError(13, 'Permission denied')


@pytest.mark.skipif(not os.path.exists('/dev/full'),
                    reason='no /dev/full on this system')
@pytest.mark.parametrize('failing', ['opening', 'writing'])
def test_a_failed_file_write_s_error_keeps_none_of_its_data(
    tmp_path, failing
):
    # the closer keeps a writer's failure, traceback and all, until the
    # apply ends: the data of the failed file (up to the whole budget) must
    # not stay reachable through the frames it went through
    chunk = b'one of a kind ' * 1000
    unheld = sys.getrefcount(chunk)
    write, name, _budget, _made = file_write(
        tmp_path, [chunk],
        opener=refused if failing == 'opening' else full_disk)
    closer = closermod.Closer(policy=closermod.BACKGROUND, threads=1,
                              minfilecount=0)
    closer.close(write, name)
    del write
    with pytest.raises(closermod.FileError) as info:
        closer.finish()
    assert info.value.action == failing
    assert closer.errors == [info.value]
    assert sys.getrefcount(chunk) == unheld


def test_discarded_write_writes_nothing(tmp_path):
    # what the closer does with a FileWrite it could not take (an
    # interrupt while waiting for room): no file, the memory back
    write, name, budget, made = file_write(tmp_path, [b'x'])
    write.discard()
    assert budget.held == 0
    write.close()
    assert not os.path.exists(name)
    assert made == []


def test_preempted_opens_on_a_busy_machine_are_no_wait():
    # wall time far above CPU time, but the thread never slept in the
    # kernel: it waited for a core (2 cores, a parallel test run)
    wp = writepolicymod.WritePolicy(threshold=100 * US, sample=8)
    for _ in range(2000):
        how = wp.time_next()
        if how == 'cpu':
            assert not wp.learn(1500 * US, 40 * US, blocked=False)
        elif how == 'wall':
            assert not wp.learn(1500 * US)
    assert not wp.deferring
    # the same opens, sleeping in the kernel (a round trip): writers
    assert drive_blocked(wp)


def drive_blocked(wp):
    for _ in range(20):
        how = wp.time_next()
        if how is not None and wp.learn(1500 * US, 40 * US, blocked=True):
            return True
    return False
