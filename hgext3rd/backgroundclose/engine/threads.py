# threads.py - the engine's threads: signals, scheduling, CPU measures
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Helpers for the engine's threads: the signals they block, the scheduling
they ask for, and how a close's time splits into CPU and waiting.
See docs/design.rst."""

import _thread
import os
import signal
import sys
import threading
import time

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


# what the calling thread is, recorded as it starts (never inferred from
# which thread it is): a Python pool's thread sets ``pool``
_role = threading.local()


def take_pool_role():
    """called first on a Python pool's thread: it is one from now on"""
    _role.pool = True


def on_pool_thread():
    """whether the calling thread recorded that it is a Python pool's
    (a file object's close() may run there or, where a closer closes
    inline, on the thread that submitted it)"""
    return getattr(_role, 'pool', False)


def block_worker_signals():
    """called first on a thread of the closer's: a Ctrl-C then goes to the
    main thread, never to a close in progress here"""
    if _WORKER_BLOCKS is not None:
        signal.pthread_sigmask(signal.SIG_BLOCK, _WORKER_BLOCKS)


def deliver_again(exc, wanted):
    """called by a finalizer (``__del__``), through closer.interrupt_again,
    with what it caught: a finalizer can raise nothing, and a signal's
    handler runs at whatever bytecode the main thread is at, a
    finalizer's too.  A Ctrl-C (or Mercurial's SIGTERM) that landed there
    would be lost, and the command it should end would go on (waiting
    for a close that hangs, say).  The signal is sent to the main thread
    again instead, from a thread of its own once the finalizer has let
    go of the interpreter, if ``wanted()`` still says so then: never
    into the next command of a command server."""
    try:
        signum = _signal_of(exc)
        if signum is not None and wanted():
            # not from here: the handler would run at one of the
            # finalizer's next bytecodes and be lost again; nor with
            # threading's start(), which waits for the thread
            _thread.start_new_thread(
                _signal_main_soon, (signum, wanted, threading.main_thread())
            )
    except BaseException:  # noqa: B902
        # at interpreter exit what it uses may be gone; a second Ctrl-C
        # here ends in the finalizer's except, as core's would
        pass


def _signal_of(exc):
    """the signal whose Python handler raised ``exc``, if one still has
    a Python handler: Python's for SIGINT raises KeyboardInterrupt
    itself, Mercurial's for SIGTERM and SIGHUP a subclass of it"""
    if not isinstance(exc, KeyboardInterrupt):
        return None
    name = 'SIGINT' if type(exc) is KeyboardInterrupt else 'SIGTERM'
    signum = getattr(signal, name, signal.SIGINT)
    if not callable(signal.getsignal(signum)):
        return None  # ignored or default by now: as a late signal would be
    return signum


def _signal_main_soon(signum, wanted, main):
    """the signal again, for the main thread: a real one where it can be
    sent to a thread, which also wakes a wait no Python code polls"""
    block_worker_signals()
    time.sleep(0.001)
    try:
        if not wanted() or not callable(signal.getsignal(signum)):
            return
        if hasattr(signal, 'pthread_kill'):
            signal.pthread_kill(main.ident, signum)
        else:
            _thread.interrupt_main()
    except Exception:  # noqa: B902
        pass  # the main thread is gone: nothing left to interrupt


def run_as_batch_thread():
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


# nice steps the close threads drop to when closes burn CPU: the writer,
# which everything else waits on, then gets a core first (CFS gives a
# thread 5 steps lower about a third of the weight)
LOWER_BY = 5


def lower_own_priority(steps):
    """run the calling thread ``steps`` nice steps lower, as the C lane's
    threads do (lower_own_priority in _closelane.c).  Linux only: there a
    nice value is the thread's own, where elsewhere it would be the whole
    process's, writer included.  Refused, the thread runs as it was."""
    if not sys.platform.startswith('linux') or not hasattr(
        os, 'setpriority'
    ):
        return
    try:
        tid = threading.get_native_id()
        nice = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, min(19, nice + steps))
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


def timed_call(how, function, *args):
    """``function(*args)`` timed as ``writepolicy.WritePolicy.time_next()``
    asks (``'wall'``, or ``'cpu'``: wall and CPU time, and whether the
    thread slept): its result, then the wall seconds, the CPU seconds and
    whether it slept (None where not asked, or not known)"""
    cpustart = sleeps = None
    if how == 'cpu':
        cpustart, sleeps = _thread_time(), slept()
    start = time.perf_counter()
    result = function(*args)
    wall = time.perf_counter() - start
    cpu = blocked = None
    if cpustart is not None:
        cpu = _thread_time() - cpustart
        blocked = slept(sleeps)
    return result, wall, cpu, blocked
