# closer.py - close files on background threads, adaptively and within bounds
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""An adaptive, bounded background file closer.

This module is pure Python and imports nothing from Mercurial, so that it can
be unit tested on its own.

A ``Closer`` accepts files to close, either as integer descriptors or as
objects with a ``close()`` method, from any thread, and closes each on the
calling thread or hands it to a pool of background threads, as its
``Policy`` (policy.py: inline, background or adaptive, and how many
threads) decides from the closes it times.

At no time are more than ``maxqueue`` files handed over and not yet closed
(the bound is also clamped to what the process's descriptor limit leaves).
Every file handed over is closed exactly once, even when another close has
failed.  A close that fails on a background thread is re-raised, as a
``FileError`` naming the file, on the next submission from the thread that
made the closer or by ``finish()``; it is never lost.  Other threads that
submit (the writer threads of a parallel stream apply) can ``record()``
their own failures to be raised the same way.

Parked workers are woken once a few files wait (``BATCH``; on the C lane up
to ``LANE_BATCH``, at most a quarter of the queue), whenever a submitter
waits for closes to finish, and on the C lane when closing goes back
inline.  A closer made with ``tracknames=True`` knows which names are still
pending: ``wait_for(name)`` returns once no file handed over under that
name is open any more, for files that are reopened (revlogs); ``wait()``
waits for every file handed over so far.  Both leave the closer running.
``finish()`` is the one way to end it (leaving a ``with`` block calls it):
it closes everything, joins every thread, absorbs interrupts meanwhile
within a bound, and raises the first failure.

Where the C module ``_closelane`` is built (POSIX), a closer made with
``native=True`` hands integer descriptors to a ``_closelane.Lane`` instead:
the same policies and sizing, but the queue and the threads are C, and the
threads never take the GIL (a Python worker takes it back after every close,
which costs the writer a GIL hand-off per file).  File objects given to such
a closer are closed inline.  A submitter that keeps a set of the descriptors
it owns passes it as ``owned``: a descriptor leaves that set in the same
step as it is handed over or closed, so that cleanup after an interrupt
closes every descriptor exactly once.
"""

import atexit
import collections
import errno
import operator
import os
import signal
import sys
import threading
import time
import weakref

from . import policy as policymod

try:
    # built from _closelane.c where possible (see setup.py)
    from . import _closelane
except ImportError:
    _closelane = None
else:
    # the threads of an abandoned lane release it through the interpreter
    # once their closes return: not once it is ending
    atexit.register(_closelane.finalizing)
try:
    from . import _opstat  # likewise, from _opstat.c
except ImportError:
    _opstat = None

from .policy import (  # noqa: F401 - the closer's settings
    ADAPTIVE,
    BACKGROUND,
    INLINE,
    POLICIES,
    SAMPLE,
)

# what _submit_to_lane() did with a descriptor
_HANDED = 'handed'
_PROBE = 'probe'
_INLINE = 'inline'

# descriptors kept free for everything else the process does
_FD_RESERVE = 32

# signals a worker thread blocks, so that the kernel delivers a Ctrl-C to
# the main thread, where it interrupts whatever waits there (and never a
# close in progress on a worker)
if hasattr(signal, 'pthread_sigmask'):
    # the asynchronous ones: a fault (SIGSEGV, SIGBUS) must still reach the
    # thread that faults, and faulthandler report it
    _WORKER_BLOCKS = {
        getattr(signal, name)
        for name in ('SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGALRM',
                     'SIGUSR1', 'SIGUSR2', 'SIGCHLD', 'SIGWINCH', 'SIGPIPE')
        if hasattr(signal, name)
    }
else:  # Windows: Ctrl-C reaches the main thread's waits anyway
    _WORKER_BLOCKS = None

def _block_worker_signals():
    """called first on a thread of the closer's: a Ctrl-C then goes to the
    main thread, never to a close in progress here"""
    if _WORKER_BLOCKS is not None:
        signal.pthread_sigmask(signal.SIG_BLOCK, _WORKER_BLOCKS)


# how often finish() wakes up to let an interrupt through, in seconds
_POLL = 0.1


def _run_as_batch_thread():
    """make the calling thread a batch thread (Linux), as the C lane's
    threads make themselves: a thread woken as its close returns then does
    not preempt the writer, and keeps its fair share of the CPU.  Only from
    the default policy (one chosen with chrt stays); refused, the thread
    runs as it was made."""
    batch = getattr(os, 'SCHED_BATCH', None)
    # Linux only: elsewhere 0 may stand for the whole process.  Checked in
    # full: a thread that raised here would never reach the lock, and
    # finish() would wait for it forever
    if (
        batch is None
        or not sys.platform.startswith('linux')
        or not hasattr(os, 'sched_setscheduler')
        or not hasattr(os, 'sched_getscheduler')
    ):
        return
    try:
        # 0: the calling thread, not the process (Linux)
        if os.sched_getscheduler(0) == os.SCHED_OTHER:
            os.sched_setscheduler(0, batch, os.sched_param(0))
    except OSError:
        pass


# CPU time of the calling thread (a scan on close burns it, a wait does not)
_thread_time = time.thread_time

try:
    import resource

    _RUSAGE_THREAD = getattr(resource, 'RUSAGE_THREAD', None)
except ImportError:  # Windows
    _RUSAGE_THREAD = None


def slept(since=None):
    """the calling thread's voluntary context switches (it slept in the
    kernel: a file system round trip), or with ``since``, whether it
    slept since that count; None where the system does not tell (then
    wall less CPU time stands for waiting).  A thread that only waited for
    a core on a busy machine was switched out involuntarily: no wait of
    the file system's."""
    if _RUSAGE_THREAD is None:
        return None
    count = resource.getrusage(_RUSAGE_THREAD).ru_nvcsw
    if since is None:
        return count
    return count > since


def cpu_mark():
    """where the calling thread stands, for cpu_demand(): its CPU time and
    its voluntary context switches so far"""
    return _thread_time(), slept()


def cpu_demand(mark, wall):
    """of a step that took ``wall`` seconds since ``mark`` (cpu_mark()) on
    the calling thread, the seconds it wanted a CPU: its CPU time, or all
    of ``wall`` if it never slept meanwhile (the rest was a wait for a core
    on a busy machine, not for the file system).  Waiting to take the GIL
    back also counts as sleeping: with Python threads running, only the
    CPU time tells."""
    cpustart, sleeps = mark
    cpu = _thread_time() - cpustart
    if sleeps is not None and not slept(sleeps):
        return wall
    return cpu


# every closer of this process, so that a forked child can disown them
_live = weakref.WeakSet()


def _disown_after_fork():
    """in a forked child: the parent's threads do not exist here, and its
    locks may have been held by one of them at the fork; nothing of a
    closer the parent had may be waited for, locked or closed by the child"""
    for closer in list(_live):
        try:
            closer._disown()
        except Exception:  # one closer's failure must not spare the others
            pass


if hasattr(os, 'register_at_fork'):
    os.register_at_fork(after_in_child=_disown_after_fork)


def native_available():
    """whether descriptors can be closed on threads that never take the GIL"""
    return _closelane is not None


class FileError(Exception):
    """writing or closing (and so flushing) a file failed

    ``name`` is what the submitter called the file (may be None), ``error``
    the exception raised, ``action`` what failed: 'closing' or 'writing'.
    """

    def __init__(self, name, error, action='closing'):
        super().__init__(name, error, action)
        self.name = name
        self.error = error
        self.action = action

    @property
    def reason(self):
        strerror = getattr(self.error, 'strerror', None)
        return strerror or str(self.error) or type(self.error).__name__

    def __str__(self):
        return 'error %s %s: %s' % (self.action, self.name, self.reason)


def _file_error(name, exc):
    """the FileError for a failed close of ``name``; a file object whose
    close() writes the file (deferredwrite.FileWrite) raises its own,
    which says what failed"""
    if isinstance(exc, FileError):
        return exc
    return FileError(name, exc)


class PythonOpStat:
    """count, total and maximum duration of one kind of operation, and the
    bytes it moved (for writes); ``OpStat`` where ``_opstat.c`` is not
    built"""

    __slots__ = ('count', 'seconds', 'max', 'bytes')

    def __init__(self):
        self.count = 0
        self.seconds = 0.0
        self.max = 0.0
        self.bytes = 0

    # the arguments as the C type takes them (positional, counts whole
    # numbers), and nothing changed when one is refused.  add() is
    # add_many(1, duration, duration, nbytes) written out: it runs for
    # every timed operation where _opstat.c is not built, and a second
    # call there costs as much as the counting
    def add(self, duration, nbytes=0, /):
        seconds = self.seconds + duration
        if type(nbytes) is not int:
            nbytes = operator.index(nbytes)
        nbytes += self.bytes
        if duration > self.max:
            self.max = float(duration)
        self.seconds = seconds
        self.bytes = nbytes
        self.count += 1

    def since(self, start, nbytes=0, /):
        """one operation that began at ``start`` (a time of
        ``time.perf_counter()``, this type's clock) and ends now"""
        self.add(time.perf_counter() - start, nbytes)

    def add_many(self, count, seconds, longest=0.0, nbytes=0, /):
        """``count`` operations that took ``seconds`` in all, the longest
        ``longest``, and moved ``nbytes``"""
        count = self.count + operator.index(count)
        total = self.seconds + seconds
        nbytes = self.bytes + operator.index(nbytes)
        if longest > self.max:
            self.max = float(longest)
        self.count, self.seconds, self.bytes = count, total, nbytes

    def merge(self, other, /):
        """add another OpStat's figures (of either kind)"""
        self.add_many(other.count, other.seconds, other.max, other.bytes)

    @property
    def mean(self):
        return self.seconds / self.count if self.count else 0.0


# A report times every open, write and close: where it is built, the C
# type reads the clock and adds in one call (``since``), which costs the
# writing thread less than the clock reads and call of PythonOpStat.
# ``stat_clock`` is the clock ``since`` reads.
if _opstat is not None:
    OpStat = _opstat.OpStat
    stat_clock = _opstat.now
else:
    OpStat = PythonOpStat
    stat_clock = time.perf_counter


class StatsBook:
    """per-thread ``OpStat`` tables, merged on demand

    Each thread updates its own table without locking; ``merged()`` adds
    them up.  Read it once the threads are done for exact figures.
    """

    def __init__(self, names):
        self._names = tuple(names)
        self._local = threading.local()
        self._tables = []
        self._lock = threading.Lock()

    def mine(self):
        """the calling thread's table: operation name -> OpStat"""
        table = getattr(self._local, 'table', None)
        if table is None:
            table = {name: OpStat() for name in self._names}
            self._local.table = table
            with self._lock:
                self._tables.append(table)
        return table

    def disown(self):
        """in a forked child: a parent's thread may have held the lock"""
        self._lock = threading.Lock()

    def merged(self):
        total = {name: OpStat() for name in self._names}
        with self._lock:
            for table in self._tables:
                for name, stat in table.items():
                    total[name].merge(stat)
        return total


def descriptor_room():
    """how many more descriptors this process may open, or None if unknown"""
    try:
        import resource
    except ImportError:  # not a POSIX system
        return None
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        in_use = len(os.listdir('/proc/self/fd'))
    except OSError:
        in_use = 0
    return soft - in_use


def close_target(target):
    """close an integer descriptor or a file object"""
    if type(target) is int:
        os.close(target)
    else:
        target.close()


def flush_for_handover(fp, name):
    """flush ``fp`` on the calling thread before its close is handed over,
    so that its data is in the kernel whichever thread closes it; if that
    fails, close it here and raise a FileError ('writing')"""
    try:
        fp.flush()
    except OSError as exc:
        close_quietly(fp)
        raise FileError(name, exc, 'writing') from exc


def open_owned(path, flags, owned, mode=0o666):
    """``os.open(path, flags, mode)``, the descriptor not inheritable, added
    to the set ``owned`` in the same step where the C module is built (an
    interrupt cannot fall in between and lose it)"""
    nul = b'\0' if isinstance(path, bytes) else '\0'
    # a name with a NUL byte: os.open() raises its own ValueError
    if _closelane is not None and nul not in path:
        return _closelane.open_owned(path, flags, mode, owned)
    fd = os.open(path, flags, mode)  # not inheritable since Python 3.4
    owned.add(fd)
    return fd


def close_owned(fd, owned):
    """drop ``fd`` from the set ``owned`` and close it, in one step where the
    C module is built; raises OSError if close() fails (``fd`` is closed and
    forgotten all the same)"""
    if _closelane is not None:
        _closelane.close_owned(fd, owned)
        return
    # forget it first: once closed, its number may be reused
    owned.discard(fd)
    os.close(fd)


def write_all(fd, data):
    """write all of ``data`` (bytes or a buffer) into ``fd``: its size.  A
    regular file takes it in one call unless the disk fills, which the
    next call then raises."""
    if type(data) is not bytes:
        data = memoryview(data).cast('B')
    size = len(data)
    written = os.write(fd, data)
    if written < size:
        view = memoryview(data)
        while written < size:
            more = os.write(fd, view[written:])
            if not more:
                # takes a byte or raises, for a regular file: never spin
                raise OSError(errno.EIO, os.strerror(errno.EIO))
            written += more
    return size


def close_elsewhere(fds):
    """close the descriptors ``fds`` (a list, now the callee's) on a thread
    of their own, which ends once they are closed: after closes were left
    hanging, one more close on this thread could hang as well, where the
    command must end (a command server goes on).  A close that hangs keeps
    only that thread."""
    if not fds:
        return

    def close_all():
        _block_worker_signals()
        while fds:
            try:
                os.close(fds.pop())
            except OSError:
                pass

    thread = threading.Thread(target=close_all,
                              name='backgroundclose-release', daemon=True)
    try:
        thread.start()
    except (RuntimeError, MemoryError):
        # no thread can be started: left open (closed here, one could
        # hang the command)
        pass


def close_quietly(target, closefn=close_target):
    """close on a path that is already failing: an error of the close must
    not hide the first one"""
    try:
        closefn(target)
    except Exception:
        pass


class Closer:
    """Close files inline or on background threads.  See the module doc."""

    # files queued before a parked worker is woken up
    BATCH = 4
    # the same for a parked C lane thread, at most a quarter of the queue
    # (a small one would fill first): a wake-up costs the submitter a
    # system call and its thread a switch, where a thread that finds work
    # as its close returns costs nothing.  With 4, slow closes had the
    # threads parked and woken for one file in two (README, "A quicker
    # switch, and fewer wake-ups").  The files waiting meanwhile are open
    # descriptors, within ``maxqueue``.
    LANE_BATCH = 32
    # finish(): after an interrupt, the most seconds it still waits for
    # closes that hang
    GRACE = 5.0
    # how long a thread whose start() was interrupted may take to run before
    # it is taken for one that never will (see _settle_starts_locked)
    START_GRACE = 1.0

    def __init__(
        self,
        policy=ADAPTIVE,
        threads=4,
        maxthreads=64,
        maxqueue=384,
        threshold=30e-6,
        window=16,
        minfilecount=2048,
        expectedcount=-1,
        clock=stat_clock,
        closefn=close_target,
        fdroom=descriptor_room,
        tracknames=False,
        native=False,
        owned=None,
        sample=1,
        timeall=False,
    ):
        if maxqueue < 1:
            raise ValueError('maxqueue must be positive')
        # what to do, and when: no thread, lock or file in there (others
        # may read it as ``decisions``, and change nothing)
        self._policy = self.decisions = policymod.Policy(
            policy,
            threads,
            maxthreads,
            threshold,
            window,
            minfilecount,
            expectedcount,
            clock,
            sample=sample,
        )
        # inline closes left before the next timed one, and how many were
        # not timed, and of hand-overs to the lane made without asking
        # (owner thread only)
        self._untimed = 0
        self._untimedcount = 0
        # a report shows every close's time: the inline closes the policy
        # does not sample are timed all the same, for the stats book only
        # (the policy decides as it would without a report)
        self._timeall = timeall
        # the owner thread's 'close' entry of the stats book, once looked
        # up: a report times every close, and the lookup costs as much as
        # the timing
        self._ownclose = None
        # whether the closer's clock is the stats' own: then a report's
        # close is timed by OpStat.since, one call
        self._statclock = clock is stat_clock
        # hand-overs to the C lane that need no decision of the policy, left
        # before the next one that does, and how many were granted: those
        # go straight to the lane, untimed, and are counted by the next
        # file that asks (owner thread only; none once another thread
        # submitted too, which also ends a run granted before).  Granted
        # while a report times every file as well: such a hand-over never
        # waits for room (the one before it left some, and no other thread
        # submits), so what it costs the writer is one C call, and the
        # waits the report shows are all timed by the files that ask (a
        # full lane ends the run)
        self._routine = 0
        self._routinegranted = 0
        # the last run ended early, on a full lane: the next file's wait
        # for room stands for itself alone
        self._routinecut = False
        # a thread other than the owner submitted: every file asks
        self._shared = False
        room = fdroom() if callable(fdroom) else fdroom
        if room is not None:
            # half of what is left: the submitters open files too
            maxqueue = max(1, min(maxqueue, (room - _FD_RESERVE) // 2))
        self.maxqueue = maxqueue
        self._clock = clock
        # the submitter's descriptors not handed over yet (see close())
        self.owned = owned
        if owned is not None:
            self._closefn = self._owned_closer(closefn, owned)
        else:
            self._closefn = closefn

        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)  # workers wait for items
        self._room = threading.Condition(self._lock)  # submitters wait for room
        self._items = collections.deque()
        # worker thread's ident -> the file it took and has not closed yet;
        # with what is queued, all that is pending (kept by the workers
        # alone, so that a signal in the submitter can never leave it wrong)
        self._closing = {}
        self._idle = 0  # workers waiting for an item
        self._roomwaiters = 0
        self._stopping = False
        # threads listed before their start(); an interrupt in it may have
        # left one that never ran, until _settle_starts_locked()
        self._workers = []
        # how many of them returned from _worker(); finish() waits for all,
        # then joins them (counted by the threads alone: no signal in the
        # owner can leave it wrong)
        self._returned = 0
        self._exited = threading.Condition(self._lock)
        self._errors = []
        self._raised = 0  # how many of _errors were already raised
        self._owner = threading.get_ident()  # pending errors are raised here
        # name -> files of that name handed over and not closed yet, for
        # wait_for(); kept only when asked (revlog files are reopened, stream
        # files are not)
        self._queuednames = {} if tracknames else None
        # native: the C lane, and for wait_for() each name's latest token
        # (the lane records it as it takes the descriptor)
        self._lane = None
        self._latesttokens = None
        self._lanefailures = 0  # how many of the lane's failures are known
        self._laneused = False  # whether any descriptor was handed to it
        self._lanethreads = 0  # most lane threads running at once
        if native and _closelane is not None:
            self._latesttokens = {} if tracknames else None
            self._lane = _closelane.Lane(
                maxqueue,
                self._policy.maxthreads,
                max(1, min(self.LANE_BATCH, maxqueue // 4)),
                owned,
                self._latesttokens,
            )

        # finish() left closes that hang to the threads
        self.abandoned = False
        self._peakpending = 0

        self._book = StatsBook(('close', 'close-background'))
        _live.add(self)
        # the threads of a closer that closes in the background from the
        # outset start at start() or the first close(), never in here: an
        # interrupt as the constructor returns would leave threads running
        # that no owner ever finishes
        self._startpending = self._policy.background

    @staticmethod
    def _owned_closer(closefn, owned):
        def close_and_forget(target):
            if type(target) is int:
                if closefn is close_target:
                    # forgets and closes in one step where the C module is
                    # built: an interrupt in between would leave it
                    # forgotten and open
                    close_owned(target, owned)
                    return
                # forget it first: once closed, its number may be reused
                owned.discard(target)
            closefn(target)

        return close_and_forget

    # statistics ---------------------------------------------------------

    def stats(self):
        """merged statistics: ``close`` (time submitters spent closing or
        waiting; the inline closes not sampled, unless ``timeall``, and the
        hand-overs made without asking are counted, not timed) and
        ``close-background`` (time spent on worker threads)"""
        merged = self._book.merged()
        merged['close'].count += self._untimedcount
        merged['close'].count += self._routinegranted - self._routine
        lane = self._lane
        if lane is not None and lane.closed:
            native = merged['close-background']
            native.count += lane.closed
            native.seconds += lane.seconds
            native.max = max(native.max, lane.maxseconds)
        return merged

    @property
    def native(self):
        """whether descriptors are closed on threads without the GIL"""
        return self._lane is not None

    # what the policy decided so far
    requested = property(lambda self: self._policy.requested)
    reason = property(lambda self: self._policy.reason)
    policy = property(lambda self: self._policy.policy)
    threshold = property(lambda self: self._policy.threshold)
    maxthreads = property(lambda self: self._policy.maxthreads)
    estimate = property(lambda self: self._policy.estimate)
    switches = property(lambda self: self._policy.switches)
    background = property(lambda self: self._policy.background)
    burning = property(lambda self: self._policy.burning)

    @property
    def closes_cheap(self):
        """closing inline, nothing pending, closes measured cheap: a seam
        may leave the next files to core (session.py)"""
        return self._policy.closes_cheap() and not self.pending

    @property
    def mode(self):
        """what the closer is doing now: 'inline' or 'background'"""
        return self._policy.mode

    @property
    def threadcount(self):
        """how many background threads were started"""
        return max(len(self._workers), self._lanethreads)

    def _running(self):
        lane = self._lane
        return len(self._workers) if lane is None else lane.threads

    def _queued(self):
        lane = self._lane
        return len(self._items) if lane is None else lane.queued

    @property
    def pending(self):
        """how many files were handed over and are not closed yet"""
        lane = self._lane
        return self._pending_count() if lane is None else lane.pending

    @property
    def peakpending(self):
        """the most files handed over and not closed at once"""
        lane = self._lane
        return self._peakpending if lane is None else lane.peak

    @property
    def errors(self):
        self._collect_lane_failures()
        return list(self._errors)

    # submission ---------------------------------------------------------

    def close(self, target, name=None, data=None):
        """close ``target`` (a descriptor or a file object) now or later

        ``data`` (bytes, with a descriptor only) is written into it first:
        by the C lane's thread if the lane takes the descriptor, else here.
        ``name`` is used in the error if the write or close fails.  The
        file must not be used by the caller after this call, even when it
        raises: the file
        is always closed or handed over first, then an earlier background
        failure is raised (on the owner thread only).  The one exception:
        an interrupt while a descriptor waits for room on the C lane leaves
        it open and in ``owned``, the submitter's to clean up.
        """
        if (
            self._routine
            and type(target) is int
            and not self._stopping
            and not self._shared
            and threading.get_ident() == self._owner
        ):
            # most descriptors handed to the C lane: nothing to decide, so
            # none of the policy's calls, lock or clock (see _submit_to_lane)
            try:
                # queues fd and drops it from owned in one step, or raises
                # having done neither
                full = self._lane.submit(target, name, data)
            except RuntimeError:
                # the lane stopped meanwhile (finish() on another thread):
                # the long way below closes it here
                self._end_routine()
            else:
                # counted once handed over: one that raised was not
                self._routine -= 1
                if full:
                    # full: the next file goes the long way, which grows
                    # the pool
                    self._end_routine(cut=True)
                # the check at the end of close(), inline here: this path
                # is the one most files take (the lane is in use)
                if (
                    self._lane.failed != self._lanefailures
                    or self._raised < len(self._errors)
                ):
                    self.raise_failure()
                return
        if self._startpending:
            try:
                self.start()
            except BaseException:
                # interrupted while a thread started: the file is still ours
                self._drop(target)
                raise
        if self._policy.background:
            self._submit(target, name, data)
        elif (
            data is None
            and self._untimed > 0
            and threading.get_ident() == self._owner
        ):
            # inline and not sampled: the path most files of a fast file
            # system take, so the shortest one
            self._untimed -= 1
            stat = None
            if self._timeall:
                # not sampled by the policy, timed for a report
                stat = self._ownclose
                if stat is None:
                    stat = self._ownclose = self._book.mine()['close']
                start = self._clock()
            else:
                self._untimedcount += 1
            try:
                self._closefn(target)
            except FileError:
                raise  # a FileWrite's own, which says what failed
            except Exception as exc:
                raise FileError(name, exc) from exc
            finally:
                # a failed or interrupted close is timed too
                if stat is not None:
                    if self._statclock:
                        stat.since(start)  # one call (OpStat in C)
                    else:  # a closer given its own clock (tests)
                        stat.add(self._clock() - start)
        else:
            if data is not None:
                self._write_here(target, name, data)
            self._close_inline(target, name, self._clock(), False)
            self._untimed = self._policy.sample_every - 1
        if (
            self._laneused and self._lane.failed != self._lanefailures
        ) or self._raised < len(self._errors):
            self.raise_failure()

    def start(self):
        """start the threads a closer that closes in the background from
        the outset begins with (``close()`` does, if not done yet): for an
        owner that wants to know now whether any thread starts"""
        with self._lock:
            if self._startpending and not self._stopping:
                # those missing: a start interrupted half-way is tried again
                self._start_workers(
                    max(0, self._policy.threads - self._running())
                )
            # only once it returned: interrupted, the next close tries again
            self._startpending = False

    def _submit(self, target, name, data=None):
        if data is not None and self._lane is None:
            # Python threads only close: written here, before queueing
            self._write_here(target, name, data)
            data = None
        clock = self._clock
        policy = self._policy
        start = clock()
        probing = False
        # after finish() nobody is left to close it later: close it here
        if (
            policy.background
            and not self._stopping
            and self._lane is not None
        ):
            # a file object is closed inline: the lane closes descriptors
            if type(target) is int:
                outcome = self._submit_to_lane(target, name, data, start)
                if outcome is _HANDED:
                    return
                probing = outcome is _PROBE
        elif policy.background and not self._stopping:
            handed = False
            try:
                with self._lock:
                    try:
                        if (
                            not policy.background
                            or self._stopping
                            or not self._workers
                        ):
                            # read unlocked above: meanwhile no thread
                            # could be started, or the closer stopped;
                            # closed here, below
                            pass
                        elif policy.take_probe():
                            probing = True
                        else:
                            handed = self._enqueue_locked(target, name)
                    except BaseException:
                        # a signal raised after the file was queued (starting
                        # a worker waits, and so can be interrupted): take
                        # it back; no worker can have taken it, we still
                        # hold the lock
                        if (
                            not handed
                            and self._items
                            and self._items[-1][0] is target
                        ):
                            self._items.pop()
                            self._taken_back_locked(target, name)
                        raise
            except BaseException:
                # interrupted while queueing: the file is still ours
                if not handed and not probing:
                    self._drop(target)
                raise
            if handed:
                self._handed(clock() - start)
                return
        if data is not None:
            self._write_here(target, name, data)
        self._close_inline(target, name, start, probing)

    def _write_here(self, fd, name, data):
        """write ``data`` into ``fd`` on this thread before it is closed
        here; if that fails, close it all the same and raise"""
        try:
            write_all(fd, data)
        except Exception as exc:
            close_quietly(fd, self._closefn)
            raise FileError(name, exc, 'writing') from exc

    def _drop(self, target):
        """an interrupt kept ``target`` from being closed or handed over:
        close it here.  One whose close would write it
        (deferredwrite.FileWrite) is dropped: nothing is written after an
        interrupt"""
        if type(target) is int or not hasattr(target, 'discard'):
            close_quietly(target, self._closefn)
        else:
            target.discard()

    def _end_routine(self, cut=False):
        """no more hand-overs without asking until the next file that asks
        grants some: those made are still counted by it (or by stats());
        ``cut``: ended by a full lane"""
        self._routinegranted -= self._routine
        self._routine = 0
        if cut:
            self._routinecut = True

    def _handed(self, duration, files=1, spent=None):
        """a file was handed over in ``duration`` seconds: what background
        closing cost the submitter.  It stands for ``files`` hand-overs,
        those made without asking since (counted, not timed).  ``spent``,
        if given, is what the stats book records instead: the whole of
        close(), where ``duration`` is only the part the policy weighs."""
        self._book.mine()['close'].add(duration if spent is None else spent)
        if self._policy.policy == ADAPTIVE:
            # unlocked: a race between two submitters only blurs it
            self._policy.learn_handover(duration, files)

    def _close_timed(self, target, name, stat, start):
        """close ``target`` on this thread, its time from ``start`` added
        to ``stat`` whether it fails or not: when it ended"""
        try:
            self._closefn(target)
        except Exception as exc:
            stat.add(self._clock() - start)
            if isinstance(exc, FileError):
                raise  # a FileWrite's own, which says what failed
            raise FileError(name, exc) from exc
        end = self._clock()
        stat.add(end - start)
        return end

    def _close_inline(self, target, name, start, probing):
        """close ``target`` on this thread, timed from ``start``; a probe
        tells the policy what it measured"""
        clock = self._clock
        policy = self._policy
        stat = self._book.mine()['close']
        # closes worth sizing a pool for: is their time the closing
        # thread's CPU (a scan on close) or a wait (a network round trip)?
        # Not asked of cheap closes: it costs a system call each time
        mark = None
        if policy.wants_cpu_time(probing):
            mark = cpu_mark()
        # what the policy learns from is the close alone: with the system
        # call above in it, cheap closes on a busy machine would measure
        # slow enough to switch on their own
        closestart = clock()
        duration = self._close_timed(target, name, stat, start) - closestart
        if mark is not None:
            policy.learn_cpu(duration, cpu_demand(mark, duration))
        if probing:
            with self._lock:
                policy.learn_probe(duration)
                if not policy.background and self._lane is not None:
                    # back inline: no more descriptors may come to wake
                    # the parked threads for those queued
                    self._lane.kick()
        elif policy.policy == ADAPTIVE and not self._stopping:
            self._learn_inline(duration)

    def _submit_to_lane(self, fd, name, data, start):
        """hand ``fd`` to the C lane, unless it is to be closed inline:
        _HANDED, _PROBE (time it inline for a probe) or _INLINE.  If this
        raises, ``fd`` was either handed over or is still the caller's (and
        in ``owned``): never closed twice.  ``start``: when close() began."""
        owner = threading.get_ident() == self._owner
        with self._lock:
            policy = self._policy
            routine = 0
            if owner:
                # the hand-overs made without asking since the last file
                # that asked came before this one: counted first
                routine = max(0, self._routinegranted - self._routine)
                self._routinegranted = self._routine = 0
                self._untimedcount += routine
            else:
                # another thread submits too: from now on every file asks,
                # so that the policy counts them in the order they come
                self._shared = True
            # what this file's hand-over time stands for in the estimate
            stands = 1 if self._routinecut else routine + 1
            self._routinecut = False
            if policy.take_probe():
                if routine:
                    self._account_locked(routine)
                return _PROBE
            self._account_locked(routine + 1)
            granted = 0
            if owner and not self._shared:
                granted = policy.routine_handovers()
        # from here on, the lane may hold failures to raise
        self._laneused = True
        lane = self._lane
        if lane.pending >= self.maxqueue and lane.threads < self.maxthreads:
            # the pool is too small for this latency: grow it now
            self._start_workers(1)
        began = self._clock()
        try:
            # waits for room without the GIL; queues and drops fd from
            # owned in one step, or raises having done neither
            full = lane.submit(fd, name, data)
        except RuntimeError:
            # the lane stopped meanwhile (finish() on another thread)
            return _INLINE
        # a file that stands for a run of hand-overs is timed around the
        # submit alone for the policy: the window's sizing above may start
        # a thread, which would weigh as much as the whole run.  One on
        # its own is timed from the start of close(), as every file is
        # when each asks.  The stats (a report) get the whole of close().
        end = self._clock()
        self._handed(
            end - (began if stands > 1 else start), stands, end - start
        )
        if granted and not full:
            # the count first: an interrupt in between grants nothing (the
            # fast path also refuses once the closer is stopping)
            self._routinegranted = granted
            self._routine = granted
        return _HANDED

    def _enqueue_locked(self, target, name):
        """queue ``target``: True, or False if no thread is left to close
        it (the closer stopped while this waited for room, or every
        thread's start was cut short): the caller closes it"""
        grown = False
        while self._pending_count() >= self.maxqueue:
            if not grown and len(self._workers) < self.maxthreads:
                # the pool is too small for this latency: grow it now, by
                # one thread a file (waits time out: closes that hang must
                # not start a thread each time)
                self._start_workers(1)
                grown = True
            if not self._wait_for_a_close_locked():
                return False
        if self._stopping:
            return False
        # the hand-over: one step.  An interrupt after it (in any step
        # below) is taken back by _submit(), the lock still held
        self._items.append((target, name))
        if self.owned is not None and type(target) is int:
            # the pool's from here on, as on the C lane: whoever cleans up
            # after a failure (even once hung closes were left to their
            # threads) must not close it too
            self.owned.discard(target)
        queuednames = self._queuednames
        if queuednames is not None and name is not None:
            queuednames[name] = queuednames.get(name, 0) + 1
        pending = self._pending_count()
        if pending > self._peakpending:
            self._peakpending = pending
        # wake a parked worker only when the busy ones have more than one
        # file each waiting, and at least BATCH files wait: a worker that
        # finds work when it finishes a close costs fewer GIL hand-offs
        # than one woken up.  Whoever waits for closes wakes them all.
        if (
            self._idle
            and len(self._items) >= self.BATCH
            and len(self._items) > len(self._workers) - self._idle
        ):
            self._work.notify()
        self._account_locked()
        return True

    def _taken_back_locked(self, target, name):
        """``target``, just taken out of the queue unclosed, is its
        submitter's again: back in ``owned`` right away (one bytecode
        after it left the queue), so that a second interrupt before it is
        closed leaves it owned, for the cleanup"""
        if self.owned is not None and type(target) is int:
            self.owned.add(target)
        self._forget_name_locked(name)

    def _pending_count(self):
        """Python threads: files queued or being closed"""
        return len(self._items) + len(self._closing)

    def holds(self, target):
        """whether ``target`` was handed over and is not closed yet: queued,
        or being closed by a thread.  Where the lock cannot be had (held
        for good by an interrupt at the wrong bytecode, before Python
        3.10), it says so, and the caller leaves the file alone."""
        if not self._lock.acquire(timeout=_POLL * 10):
            return True
        try:
            return any(
                taken is target for taken in self._closing.values()
            ) or any(queued is target for queued, _name in self._items)
        finally:
            self._lock.release()

    def _forget_name_locked(self, name):
        """one file handed over under ``name`` is closed, or was taken
        back: wait_for(name) must not wait for it any more"""
        queuednames = self._queuednames
        if queuednames is not None and name is not None:
            # not counted yet if an interrupt fell right after the hand-over
            left = queuednames.get(name, 0) - 1
            if left > 0:
                queuednames[name] = left
            else:
                queuednames.pop(name, None)

    def _account_locked(self, count=1):
        """count ``count`` submissions: size the pool at every window, and
        count down to the next probe"""
        interval = self._policy.account(count)
        if interval is not None:
            self._grow_locked(interval)

    def _wait_for_a_close_locked(self):
        """with the lock held: wake the workers (parked ones wait for a
        batch otherwise) and wait until one of them finishes a close, or a
        while: True, or False if no thread is left to wait for (every
        listed thread's start was cut short, or the closer stopped)"""
        self._settle_starts_locked()
        if not self._workers or self._stopping:
            return False
        self._work.notify_all()
        self._roomwaiters += 1
        try:
            # timed: a start cut short is settled, a stop noticed
            self._room.wait(_POLL)
        finally:
            self._roomwaiters -= 1
        return True

    def _learn_inline(self, duration):
        # called by whichever thread closed inline; a race between two
        # writer threads here only blurs the estimate a little (or counts
        # one close of the other's in a run of slow closes)
        policy = self._policy
        if not policy.learn_inline(duration):
            return
        with self._lock:
            if policy.background or policy.threadless:
                return
            # threads first: other submitters read ``background`` unlocked
            # and must find a pool behind it
            running = self._running()
            if running < policy.threads:
                self._start_workers(policy.threads - running)
            if self._running():  # else none could be started
                policy.switch_to_background(duration)

    def _grow_locked(self, interval):
        """start the threads the policy wants for one submission every
        ``interval`` seconds"""
        running = self._running()
        backlog = self._queued() > self.maxqueue // 2
        need = self._policy.threads_needed(interval, running, backlog)
        if need > running:
            self._start_workers(need - running)

    # workers ------------------------------------------------------------

    def _start_workers(self, count):
        """start ``count`` more threads, within ``maxthreads``

        A thread the system refuses to start (a process limit in a
        container, little address space) caps the pool at what runs; with
        no thread at all the closer closes inline from then on, and the
        apply goes on.
        """
        policy = self._policy
        if policy.threadless:
            return
        cap = policy.thread_cap()
        lane = self._lane
        if lane is not None:
            wanted = min(lane.threads + count, cap)
            if wanted <= lane.threads:
                return
            try:
                running = lane.start(wanted)
            except OSError:  # not one thread could be started
                running = 0
            self._lanethreads = max(self._lanethreads, running)
            if running < wanted and not self._stopping:
                self._refused(running)
            return
        for _ in range(count):
            if len(self._workers) >= cap:
                return
            worker = threading.Thread(
                target=self._worker,
                name='backgroundclose-%d' % len(self._workers),
            )
            worker.daemon = True
            try:
                # listed before start(): a thread that runs must be known
                # to finish(); one that finds itself unlisted leaves at
                # once (see _worker)
                self._workers.append(worker)
                worker.start()
            except (RuntimeError, MemoryError):  # "can't start new thread"
                # no thread exists: forget it
                self._unlist_locked(worker)
                self._refused(len(self._workers))
                return
            except BaseException:
                # an interrupt cut start() short: the thread may run, or
                # never will
                self._settle_starts_locked()
                raise

    def _unlist_locked(self, worker):
        if worker in self._workers:
            self._workers.remove(worker)

    def _settle_starts_locked(self, deadline=None):
        """forget the listed threads that never ran

        A thread has an ident from the moment it runs; one still without
        one had its start() cut short by an interrupt, either before the
        system made it or while start() waited for it to run.  Which of
        the two is not known from outside, so it gets START_GRACE seconds
        (or until ``deadline``) to show up; one that shows up later finds
        itself unlisted and returns without touching a file.
        """
        end = None
        interrupted = None
        for worker in list(self._workers):
            while worker.ident is None:
                # bounded, so interrupts wait until it is done: cut short,
                # it would leave a thread listed that never runs, and
                # whoever waits for closes would wait for it
                try:
                    now = time.monotonic()
                    if end is None:
                        end = now + self.START_GRACE
                        if deadline is not None:
                            end = min(end, deadline)
                    if now >= end:
                        self._unlist_locked(worker)
                        break
                    # with the lock held: the thread needs only the GIL
                    time.sleep(0.001)
                except (KeyboardInterrupt, SystemExit) as exc:
                    if interrupted is None:
                        interrupted = exc
        if interrupted is not None:
            raise interrupted

    def _refused(self, running):
        """the system started only ``running`` threads of those asked"""
        self._policy.refused(running)

    def _worker(self):
        _block_worker_signals()  # first: the owner thread gets Ctrl-C
        _run_as_batch_thread()
        lock = self._lock
        lock.acquire()
        if threading.current_thread() not in self._workers:
            # its start() was cut short and _settle_starts_locked() gave up
            # on it: nobody will wait for it, so it touches nothing
            lock.release()
            return
        try:
            clock = self._clock
            closefn = self._closefn
            items = self._items
            closing = self._closing
            me = threading.get_ident()
            # one critical section per close: account for the last close
            # and take the next item together, so that a busy worker needs
            # the GIL once per close
            stat = self._book.mine()['close-background']
            while True:
                while not items:
                    if self._stopping:
                        return
                    self._idle += 1
                    self._work.wait()
                    self._idle -= 1
                target, name = items.popleft()
                closing[me] = target
                lock.release()
                error = None
                start = clock()
                try:
                    closefn(target)
                except BaseException as exc:  # re-raised on the owner
                    error = _file_error(name, exc)
                duration = clock() - start
                stat.add(duration)
                lock.acquire()
                del closing[me]
                self._forget_name_locked(name)
                if error is not None:
                    self._errors.append(error)
                if self._roomwaiters:
                    self._room.notify_all()
        finally:
            self._returned += 1
            self._exited.notify_all()
            lock.release()

    # completion ---------------------------------------------------------

    def record(self, error):
        """keep ``error`` (a FileError) to be raised on the owner thread"""
        with self._lock:
            self._errors.append(error)

    def open_owned(self, path, flags, mode=0o666):
        """``os.open(path, flags, mode)``, the descriptor not inheritable,
        added to ``owned`` in the same step where the C lane is built"""
        return open_owned(path, flags, self.owned, mode)

    def close_quietly(self, target):
        """close ``target`` here, on a path that is already failing (and
        drop it from ``owned``)"""
        close_quietly(target, self._closefn)

    def _collect_lane_failures(self):
        """turn the closes the lane saw fail into errors to raise"""
        lane = self._lane
        if lane is None or lane.failed == self._lanefailures:
            return
        with self._lock:
            for name, code, writing in lane.failures(self._lanefailures):
                exc = OSError(code, os.strerror(code))
                self._errors.append(
                    FileError(name, exc, 'writing' if writing else 'closing')
                )
                self._lanefailures += 1

    def failed(self):
        """whether any close failed, or any failure was recorded, so far"""
        self._collect_lane_failures()
        return bool(self._errors)

    def raise_failure(self):
        """on the owner thread: raise the first failure not raised yet, if
        any (a thread that writes but never submits, the main thread of a
        parallel apply, asks here)"""
        self._collect_lane_failures()
        if (
            self._raised < len(self._errors)
            and threading.get_ident() == self._owner
        ):
            self._raise_pending()

    def _raise_pending(self):
        error = self._errors[self._raised]
        self._raised = len(self._errors)
        raise error

    def wait(self):
        """wait until every file handed over so far is closed; the closer
        goes on (finish() ends it)"""
        lane = self._lane
        if lane is not None:
            # closes handed to the lane (interruptible) and objects closed
            # inline: nothing else is pending
            lane.wait()
            self._collect_lane_failures()
            return
        with self._lock:
            while self._pending_count():
                if not self._wait_for_a_close_locked():
                    return  # what is left queued, finish() drops

    def wait_for(self, name):
        """wait until no file handed over under ``name`` is still open

        Only for a closer made with ``tracknames=True``; the caller is the
        thread that hands files of that name over, so none can be added
        while it waits.
        """
        latest = self._latesttokens
        if latest is not None:
            token = latest.get(name)
            if token is None:
                return
            # every descriptor handed over up to the name's latest: a few
            # more than needed at most, as the lane's queue is a FIFO
            self._lane.wait(token)
            if latest.get(name) == token:
                del latest[name]
            return
        queuednames = self._queuednames
        if not queuednames or name not in queuednames:
            return
        with self._lock:
            while name in queuednames:
                if not self._wait_for_a_close_locked():
                    return  # what is left queued, finish() drops

    def has_pending_any(self):
        """whether any file handed over under a name may not be closed yet"""
        lane = self._lane
        if lane is not None:
            return bool(self._latesttokens) and lane.pending > 0
        return bool(self._queuednames)

    def finish(self, failing=False, on_interrupt=None, interrupted=False):
        """the one way to finish: close everything handed over, join every
        thread, then, unless ``failing``, raise the first failure not
        raised yet (a FileError naming the file)

        Interrupts while it waits are absorbed, and the first is raised
        once it is done: whoever cleans up next (a transaction rolling
        back) must find every file handed over closed.  After an interrupt
        it waits at most ``GRACE`` seconds more: closes that still hang
        then (a hard-mounted NFS server gone away) are left to their
        threads, which alone close those files, whenever their closes
        return.  Files submitted later are closed inline; calling it again
        only raises what failed since.  ``on_interrupt`` is called at the
        first interrupt it absorbs (a closer whose closes write files is
        told to write no more).  ``interrupted``: an interrupt was caught
        elsewhere already (finishing another closer): bounded too.
        """
        absorbed = None
        deadline = None
        if interrupted or isinstance(
            sys.exc_info()[1], (KeyboardInterrupt, SystemExit)
        ):
            # finishing because of an interrupt caught elsewhere (a
            # submitter waiting for room in a full queue): bounded too
            deadline = time.monotonic() + self.GRACE
        while not self.abandoned:  # once left to hung closes, never again
            try:
                if not self._stop(deadline):
                    self._abandon()
                break
            except (KeyboardInterrupt, SystemExit) as exc:
                # only interrupts are absorbed: anything else would come
                # back at every try
                if absorbed is None:
                    absorbed = exc
                    deadline = time.monotonic() + self.GRACE
                    if on_interrupt is not None:
                        on_interrupt()
        self._collect_lane_failures()
        if absorbed is not None:
            raise absorbed
        if not failing and self._raised < len(self._errors):
            self._raise_pending()

    def _stop(self, deadline):
        """stop taking files, wait until every file handed over is closed
        and join the threads: True, or False once ``deadline`` (of
        time.monotonic()) has passed, if any"""
        with self._lock:
            self._stopping = True
            self._end_routine()
            self._work.notify_all()
            # submitters waiting for room close their files themselves now
            self._room.notify_all()
            # a double interrupt can leave a start unsettled
            self._settle_starts_locked(deadline)
            # every listed thread has returned from _worker()
            while self._returned < len(self._workers):
                # timed: a wait without one may not notice a signal the
                # kernel delivered to another thread
                left = _POLL
                if deadline is not None:
                    left = min(left, deadline - time.monotonic())
                    if left <= 0:
                        return False
                self._exited.wait(left)
        for worker in self._workers:
            worker.join()  # returned from _worker() already
        # queued for threads that never ran (each start cut short by an
        # interrupt, so the command is failing): taken back and dropped
        # here as by any interrupt
        items = self._items
        while items:
            with self._lock:
                target, name = items.popleft()
                self._taken_back_locked(target, name)
            self._drop(target)
        lane = self._lane
        if lane is not None:
            left = -1.0
            if deadline is not None:
                left = max(0.0, deadline - time.monotonic())
            if not lane.stop(left):
                return False
        return True

    def _abandon(self):
        """closes hang past the grace period: leave them, and the files
        still queued behind them, to the threads"""
        if self._lane is not None:
            # first: once ``abandoned`` is set, nothing calls this again.
            # The lane takes nothing more; its threads, detached, exit
            # once their closes return, and the last one releases it
            self._lane.abandon()
        self.abandoned = True
        self._policy.reason = (
            'closes still hanging were left to their threads'
        )

    def _disown(self):
        """forget every thread, lock and queued file: this process is a
        forked child of the one that made the closer (see
        _disown_after_fork); whatever the child still closes, it closes
        inline"""
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)
        self._room = threading.Condition(self._lock)
        self._exited = threading.Condition(self._lock)
        self._book.disown()
        # the parent's queued files stay referenced, never finalized here:
        # a file object's finalizer would flush its buffer into the file
        # the child shares with the parent
        self._parentitems = self._items
        self._items = collections.deque()
        self._closing = {}
        self._idle = 0
        self._roomwaiters = 0
        self._workers = []
        self._returned = 0
        # the parent's failures are the parent's to raise
        self._raised = len(self._errors)
        self._stopping = True
        self._policy.disown()
        self._owner = threading.get_ident()
        self._ownclose = None
        if self._queuednames is not None:
            self._queuednames = {}
        # the lane's threads and mutex are the parent's too
        self._lane = None
        self._laneused = False
        self._latesttokens = None
        self._end_routine()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, exc_tb):
        self.finish(failing=exc_type is not None)
        return False
