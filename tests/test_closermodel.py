# test_closermodel.py - a model of the closer, checked after every step
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""hypothesis drives a ``Closer`` (engine/closer.py) through sequences of
what a seam does to it: open a descriptor into the owned set, hand it
over (with data or without), a close or a write that fails, an interrupt
at any point where a signal can raise (after each call, at each entry) of
a hand-over, and a second one in what the first set off, a hand-over from
one of core's writer threads, a fork, ``finish()`` (on the C lane also
while closes hang and a writer thread waits for room) and the session's
release of what it still owns.  Both pools run it.

After every step it checks what the ownership rule (docs/design.rst)
promises:

- each descriptor is open while its submitter owns it, and once given
  away, closed exactly once: a number closed twice, or closed by one who
  did not own it, closes a file opened since under the same number, which
  the check sees as a file of its own no longer open;
- a file handed over with data has all of it once closed;
- after ``finish()`` no thread of the closer is left;
- ``finish()`` waits only for what was handed over before it began: from
  then on the C lane takes nothing (a writer thread's file is refused,
  and the writer closes it), so that no close hangs in its join, which no
  Ctrl-C cuts short;
- a failure is raised at most once, on the thread that made the closer,
  by ``close()`` or ``finish()``, and one at least by the time
  ``finish()`` returns (the others known then end the command with it);
- after the release, nothing is open.

``make test`` runs a bounded number of examples; ``make soak`` many more
(MODEL_EXAMPLES).
"""

import os
import select
import sys
import threading
import time

import pytest
from hypothesis import (
    HealthCheck,
    Phase,
    event,
    settings,
    strategies as st,
)
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))

from hgext3rd.backgroundclose.engine import (  # noqa: E402
    closer as closermod,
    descriptors,
    handovers,
    inline,
    native,
    pools,
)
from test_pools import (  # noqa: E402
    RearmedPool,
    interrupting_tracer,
    rearming,
)
from waiting import true_by  # noqa: E402

EXAMPLES = int(os.environ.get('MODEL_EXAMPLES') or 40)
STEPS = int(os.environ.get('MODEL_STEPS') or 30)

WRITE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC

# more than a pipe holds (64 KiB on Linux): written into one nobody reads
# yet, the write, and so the close, hangs until it is drained, as a close
# on a dead mount does
HUNG = b'h' * (1 << 20)
# a lane refuses a hand-over that waits for room as its stop() begins; one
# that has not refused it after this long is given room (a close that
# hangs returns), to show whether it takes the file
REFUSAL = 0.5
# once the closes handed over before finish() began returned, it waits for
# nothing that hangs: past this, the watchdog lets the rest return
WATCHDOG = 5.0

# where the first interrupt of a hand-over may land, and the second
HANDING = {
    closermod.Closer.close.__code__,
    closermod.Closer._submit.__code__,
    handovers.HandOvers.hand_over.__code__,
    pools.PythonPool.submit.__code__,
    pools.PythonPool._enqueue_locked.__code__,
    descriptors.queue_handed_over.__code__,
    inline.InlineCloses.untimed.__code__,
    inline.InlineCloses.sampled.__code__,
    descriptors.close_owned.__code__,
    # the close a submitter's closer makes (one code for every closure)
    descriptors.owned_closer(descriptors.close_target, set()).__code__,
}
TAKING_BACK = {
    pools.PythonPool.submit.__code__,
    pools.PythonPool._taken_back_locked.__code__,
    descriptors.take_back_handed.__code__,
    descriptors.give_back.__code__,
    closermod.Closer.close.__code__,
}


def closer_threads():
    return [t for t in threading.enumerate()
            if t.name.startswith('backgroundclose-') and t.is_alive()]


class SubmitWatch:
    """a profile function (sys.setprofile, for the thread that sets it):
    whether the thread called ``lane.submit``, and whether that call
    returned or raised.  A submit waiting for room runs no Python code
    that a test could see otherwise."""

    def __init__(self, lane):
        self.lane = lane
        self.called = threading.Event()
        self.returned = threading.Event()

    def __call__(self, frame, event, arg):
        if (
            event.startswith('c_')
            and getattr(arg, '__self__', None) is self.lane
            and arg.__name__ == 'submit'
        ):
            (self.called if event == 'c_call' else self.returned).set()


class CloserModel(RuleBasedStateMachine):
    """one closer and the descriptors of one small session"""

    pool = 'python'

    def __init__(self):
        super().__init__()
        self.dir = None

    @initialize(policy=st.sampled_from(['background', 'adaptive']),
                maxqueue=st.integers(1, 6))
    def make(self, policy, maxqueue):
        import tempfile

        self.dir = tempfile.mkdtemp(prefix='closermodel-')
        self.threadsbefore = len(closer_threads())
        # the pool's closes of these files fail (by inode: numbers come
        # back); the Python pool only, as the lane closes without Python.
        # The closer itself closes with the default close, the only one a
        # seam uses: forgetting and closing in one step
        # inode -> name; a failure counts once it happened (a file the
        # closer closes itself does not fail)
        self.failclose = {}
        failclose = self.failclose

        def closefn(target):
            failing = None
            if type(target) is int and failclose:
                try:
                    failing = failclose.get(os.fstat(target).st_ino)
                except OSError:
                    pass
            descriptors.close_target(target)
            if failing is not None:
                self.injected.add(failing)
                raise OSError(5, 'Input/output error (injected)')

        class FailingPool(RearmedPool):
            def __init__(self, maxqueue, maxthreads, batch, _closefn, *args,
                         **kwargs):
                super().__init__(maxqueue, maxthreads, batch, closefn,
                                 *args, **kwargs)

        self.owned = set()
        # the Python pool made is one that lets a test trace the take-back
        # an interrupt sets off (test_pools.RearmedPool)
        made = pools.PythonPool
        pools.PythonPool = FailingPool
        try:
            self.closer = closermod.Closer(
                policy=policy, threads=1, maxthreads=3, maxqueue=maxqueue,
                minfilecount=0, threshold=0.0, window=1, fdroom=None,
                native=self.pool == 'lane', owned=self.owned,
            )
        finally:
            pools.PythonPool = made
        self.count = 0
        # (fd, inode, name, data expected) of each file given away (a
        # number may come back: the inode tells its files apart)
        self.given = []
        # fd -> inode of each file the submitter owns
        self.mine = {}
        self.injected = set()  # names whose write or close failed
        # name -> read end of each pipe made (open_pipe) not drained yet,
        # and the bytes read from each drained
        self.reads = {}
        self.drained = {}
        self.raised = []  # names of the FileErrors raised
        self.finished = False
        self.failing = True
        self.released = False

    def teardown(self):
        if self.dir is None:
            return
        try:
            # first: a write still hanging in one of them would hang
            # finish()
            for rfd in self.reads.values():
                os.close(rfd)
            if not self.finished:
                self.catch(lambda: self.closer.finish(failing=True))
            for fd in list(self.owned):
                descriptors.close_quietly(
                    fd, lambda fd: descriptors.close_owned(fd, self.owned))
        finally:
            import shutil

            shutil.rmtree(self.dir, ignore_errors=True)

    # helpers ----------------------------------------------------------

    def open_one(self, owned=None):
        name = 'f%d' % self.count
        self.count += 1
        fd = descriptors.open_owned(
            os.path.join(self.dir, name), WRITE,
            self.owned if owned is None else owned,
        )
        if owned is None:
            self.mine[fd] = os.fstat(fd).st_ino
        return fd, name

    def open_pipe(self, owned=None):
        """a pipe, its write end opened as open_one() opens a file; the
        read end is the model's: until drain() reads it, a write of more
        than the pipe holds hangs"""
        rfd, fd = os.pipe()
        (self.owned if owned is None else owned).add(fd)
        name = 'pipe%d' % self.count
        self.count += 1
        self.reads[name] = rfd
        if owned is None:
            self.mine[fd] = os.fstat(fd).st_ino
        return fd, name

    def drain(self, name, deadline):
        """read the pipe ``name`` until its write end is closed, then
        close it, recording the bytes read; at ``deadline`` (of
        time.monotonic()) close it all the same, which ends a write that
        still hangs (EPIPE)"""
        rfd = self.reads.pop(name)
        count = 0
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([rfd], [], [], left)[0]:
                    break
                chunk = os.read(rfd, 1 << 16)
                if not chunk:
                    break
                count += len(chunk)
        finally:
            os.close(rfd)
            self.drained[name] = count

    def catch(self, call):
        """``call()``, the name of a FileError it raised recorded"""
        try:
            call()
        except descriptors.FileError as exc:
            self.raised.append(exc.name)

    def give(self, fd, name, data, fails):
        self.given.append((fd, self.mine.pop(fd), name, data))
        if fails:
            self.injected.add(name)

    # rules ------------------------------------------------------------

    @precondition(lambda self: not self.finished)
    @rule(data=st.sampled_from([None, b'', b'x' * 10, b'y' * 5000]),
          fails=st.sampled_from([None, 'close', 'write']))
    def hand_over(self, data, fails):
        if fails == 'close' and self.pool != 'python':
            fails = None
        if fails == 'write':
            # a pipe nobody reads: the write fails (EPIPE)
            fd, name = self.open_pipe()
            os.close(self.reads.pop(name))
            data = b'z' * 10
        else:
            fd, name = self.open_one()
        if fails == 'close':
            self.failclose[os.fstat(fd).st_ino] = name
        self.give(fd, name, None if fails == 'write' else data,
                  fails == 'write')
        self.catch(lambda: self.closer.close(fd, name, data))

    @precondition(lambda self: not self.finished)
    @rule(first=st.integers(1, 40), second=st.integers(0, 12))
    def hand_over_interrupted(self, first, second):
        """one interrupt at the ``first``-th point where a signal can
        raise in the hand-over, and if ``second``, another at the
        ``second``-th of what the first set off"""
        fd, name = self.open_one()
        pool = self.closer._pool
        tracer2, _raised2 = interrupting_tracer(TAKING_BACK, second or 1 << 30,
                                                lambda: 0)
        rearm = rearming(tracer2)

        def armed():
            if second and isinstance(pool, RearmedPool):
                pool.rearm = rearm

        tracer, raised = interrupting_tracer(HANDING, first, armed)
        try:
            try:
                sys.settrace(tracer)
                self.closer.close(fd, name)
            finally:
                sys.settrace(None)
                if isinstance(pool, RearmedPool):
                    pool.rearm = None
        except KeyboardInterrupt:
            pass
        except descriptors.FileError as exc:
            self.raised.append(exc.name)
        event('interrupts: %d' % (len(raised) + len(_raised2)))
        if fd not in self.owned:
            # given (else interrupted before it was: the submitter's)
            self.given.append((fd, self.mine.pop(fd), name, None))

    def start_writer(self, count, open_file=None, data=b'w' * 100):
        """one of core's writer threads, started: it hands ``count`` files
        over from a set of its own (closer.owning), as stream v2's
        parallel apply does, each opened by ``open_file(owned)`` (by
        default a file of the model's) and with ``data``; the event is
        set once it has opened its first file (or ended)"""
        open_file = open_file or self.open_one
        mine = set()
        made = []
        started = threading.Event()

        def write():
            try:
                with self.closer.owning(mine):
                    for _ in range(count):
                        fd, name = open_file(mine)
                        made.append((fd, os.fstat(fd).st_ino, name, data))
                        started.set()
                        try:
                            self.closer.close(fd, name, data)
                        except descriptors.FileError:
                            pass  # raised again on the owner
                        mine.discard(fd)
            finally:
                started.set()

        thread = threading.Thread(target=write)
        thread.start()
        return thread, started, mine, made

    def join_writer(self, thread, mine, made):
        """once the writer ended: it kept nothing it gave away, and what it
        gave is the closer's"""
        thread.join(30)
        assert not thread.is_alive()
        assert not mine, 'a writer thread kept a descriptor it gave away'
        self.given.extend(made)

    def finish_closer(self, failing, then=None):
        """finish() as the applying thread does, ``then()`` (if given),
        then, not failing, finish() again until no failure is left to
        raise"""
        self.catch(lambda: self.closer.finish(failing=failing))
        if then is not None:
            then()
        self.finished = True
        self.failing = failing
        if not failing:
            # each call raises the next failure not raised yet
            for _ in range(len(self.injected) + 1):
                self.catch(lambda: self.closer.finish())

    @precondition(lambda self: not self.finished)
    @rule(count=st.integers(1, 4))
    def writer_thread_hands_over(self, count):
        """one of core's writer threads hands files over"""
        thread, _started, mine, made = self.start_writer(count)
        self.join_writer(thread, mine, made)

    @precondition(lambda self: not self.finished)
    @rule(count=st.integers(1, 20), failing=st.booleans())
    def finish_while_a_writer_hands_over(self, count, failing):
        """finish() on the applying thread while one of core's writer
        threads still hands files over: each is handed over, or refused
        and closed by the writer, never both, never neither"""
        thread, started, mine, made = self.start_writer(count)
        started.wait(30)
        self.finish_closer(
            failing, then=lambda: self.join_writer(thread, mine, made)
        )

    @precondition(lambda self: hasattr(os, 'fork'))
    @rule()
    def fork(self):
        """a forked child closes its own files inline, and never waits
        for or closes what the parent handed over"""
        ended = self.closer.state
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                if self.finished and self.closer.state is not ended:
                    os._exit(4)  # an ended closer must stay so
                fd, name = self.open_one()
                self.closer.close(fd, name)
                code = 0 if fd not in self.owned else 2
                try:
                    os.fstat(fd)
                    code = 3  # left open
                except OSError:
                    pass
            except BaseException:
                import traceback

                traceback.print_exc()
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0

    @precondition(lambda self: not self.finished)
    @rule(failing=st.booleans())
    def finish(self, failing):
        self.finish_closer(failing)

    @precondition(lambda self: self.finished)
    @rule(failing=st.booleans())
    def finish_again(self, failing):
        """another frame's teardown finds it done: nothing is waited for
        or raised again"""
        self.catch(lambda: self.closer.finish(failing=failing))

    @precondition(lambda self: self.finished and not self.released)
    @rule()
    def release(self):
        """the session's cleanup: what the submitter still owns"""
        for fd in list(self.owned):
            descriptors.close_owned(fd, self.owned)
        self.mine.clear()
        self.released = True

    # invariants ---------------------------------------------------------

    def is_file(self, fd, inode):
        try:
            return os.fstat(fd).st_ino == inode
        except OSError:
            return False

    @invariant()
    def owned_files_are_open(self):
        if self.dir is None:
            return
        for fd, inode in self.mine.items():
            assert fd in self.owned, 'descriptor %d, owned, left the set' % fd
            assert self.is_file(fd, inode), (
                'descriptor %d, its submitter\'s, was closed' % fd
            )

    @invariant()
    def given_files_are_never_owned_again(self):
        if self.dir is None:
            return
        for fd, inode, name, _data in self.given:
            assert not (fd in self.owned and self.is_file(fd, inode)), (
                'descriptor %d (%s) given away and owned' % (fd, name))

    @invariant()
    def after_finish_nothing_pending_and_no_thread(self):
        if self.dir is None or not self.finished:
            return
        closer = self.closer
        assert closer.finished and not closer.abandoned
        assert closer.pending == 0
        assert len(closer_threads()) <= self.threadsbefore
        if self.pool == 'lane':
            assert closer._pool._lane.running == 0
            assert closer._pool._lane.joinerrors == 0
        for fd, inode, name, data in self.given:
            assert not self.is_file(fd, inode), (
                'descriptor %d (%s) given away, still open' % (fd, name))
            if data and name not in self.injected:
                # a pipe's: what its reader got
                size = self.drained.get(name)
                if size is None:
                    size = os.path.getsize(os.path.join(self.dir, name))
                assert size == len(data), name

    @invariant()
    def each_failure_raised_once(self):
        if self.dir is None:
            return
        assert len(self.raised) == len(set(self.raised)), self.raised
        assert set(self.raised) <= self.injected
        if self.finished and not self.failing and self.injected:
            # one failure ends the command: those known when it is raised
            # count as raised with it (failures.py)
            assert self.raised, "a failure was never raised"

    @invariant()
    def after_release_nothing_open(self):
        if self.dir is None or not self.released:
            return
        assert not self.owned
        for fd, inode in self.mine.items():
            assert not self.is_file(fd, inode)


MODEL_SETTINGS = settings(
    max_examples=EXAMPLES,
    stateful_step_count=STEPS,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    # MODEL_SHRINK=0: report the first failing sequence as found (a check
    # that a mutation fails it, without minutes of shrinking)
    phases=[phase for phase in Phase
            if phase is not Phase.shrink
            or os.environ.get('MODEL_SHRINK') != '0'],
)


class PythonPoolModel(CloserModel):
    pool = 'python'


class LanePoolModel(CloserModel):
    pool = 'lane'

    # (the rule below) the lane's last token once the closes that hang
    # filled it, and whether finish() then lasted until the watchdog
    fulltoken = None
    watchdogfired = False

    # the closer closes in the background from the first file on (else a
    # close that hangs would hang here), and the lane has room for two at
    # least: with one, the close that returns would give the writer room
    # and end stop()'s wait at once, a race, where the model gives room
    # while stop() still waits
    @precondition(lambda self: not self.finished
                  and self.closer.decisions.policy == 'background'
                  and self.closer.maxqueue > 1)
    @rule(failing=st.booleans())
    def finish_while_closes_hang_and_a_writer_waits_for_room(self, failing):
        """closes that hang (writes into pipes nobody reads yet) fill the
        lane; one of core's writer threads waits for room to hand over a
        file whose close hangs too; finish() begins, then the closes
        return.  The writer's file is refused (it closes it itself), not
        taken by the stopping lane, whose threads would close it before
        the join, which no Ctrl-C cuts short"""
        closer = self.closer
        lane = closer._pool._lane
        # threads before the first close that hangs: without, the lane
        # refuses it and it is made here, inline, and hangs the model
        closer.start()
        assert lane.threads, 'no thread to hand the closes over to'
        # the closes that hang alone fill the lane: room comes only as one
        # of them returns (a parked thread waits for a batch: kicked)
        assert true_by(time.monotonic() + 10,
                       lambda: lane.kick() or lane.pending == 0)
        hung = []
        for _ in range(closer.maxqueue):
            fd, name = self.open_pipe()
            hung.append(name)
            self.give(fd, name, HUNG, False)
            self.catch(lambda: closer.close(fd, name, HUNG))
        assert lane.pending == closer.maxqueue
        # nothing is taken from here on until one of them returns, once
        # finish() began
        self.fulltoken = lane.lasttoken
        submit = SubmitWatch(lane)

        def open_watched(owned):
            # sys.setprofile acts on the calling thread: the writer's
            sys.setprofile(submit)
            return self.open_pipe(owned)

        writer, _started, mine, made = self.start_writer(
            1, open_watched, HUNG)
        ended = threading.Event()  # finish() returned, or the rule failed
        helper = threading.Thread(target=self.let_closes_return,
                                  args=(hung, submit, ended))
        helper.start()

        def settle():
            # the helper drains what is left, the writer's pipe too
            ended.set()
            helper.join(60)
            writer.join(30)

        def then():
            settle()
            self.join_writer(writer, mine, made)

        try:
            assert submit.called.wait(10), 'the writer never handed over'
            self.finish_closer(failing, then=then)
        finally:
            settle()

    def let_closes_return(self, hung, submit, ended):
        """(the rule's helper thread) the closes that hang return: the
        first once finish() began and the writer's submit returned,
        refused (or REFUSAL passed: the lane may take it), the others once
        the submit returned, the writer's (its pipe) once finish() returned
        or at the watchdog"""
        deadline = time.monotonic() + 30
        true_by(deadline, lambda: ended.is_set()
                or self.closer.state is not closermod.OPEN)
        submit.returned.wait(REFUSAL)
        self.drain(hung[0], deadline)
        # room for one: a lane that takes the writer's file takes it now
        submit.returned.wait(REFUSAL)
        for name in hung[1:]:
            self.drain(name, deadline)
        if self.closer._pool._lane.lasttoken == self.fulltoken:
            self.watchdogfired = not ended.wait(WATCHDOG)
        # else finish() waits for the writer's close: no use waiting for
        # the watchdog (the invariant below fails).  The writer's pipe is
        # the one left (if it was made)
        for name in list(self.reads):
            self.drain(name, time.monotonic() + 10)

    @invariant()
    def finish_took_nothing_handed_over_after_it_began(self):
        # (once the rule above ran)
        if self.fulltoken is None or not self.finished:
            return
        assert not self.watchdogfired, (
            'finish() waited for a file handed over after it began, until '
            'the watchdog drained it')
        taken = self.closer._pool._lane.lasttoken - self.fulltoken
        assert taken == 0, 'the lane took %d file(s) once finish() began' % (
            taken)


TestPythonPoolModel = PythonPoolModel.TestCase
TestPythonPoolModel.settings = MODEL_SETTINGS
TestLanePoolModel = pytest.mark.skipif(
    native.lane_module is None,
    reason='the C lane is not built here (test_closelane.py says where it '
    'must be)',
)(LanePoolModel.TestCase)
TestLanePoolModel.settings = MODEL_SETTINGS
