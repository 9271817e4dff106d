# interrupt.py - run one hg command in this process and signal it midway
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""usage: interrupt.py SIGNAL WATCHDIR COUNT -- HG-ARGS...

(SIGNAL NONE: no signal, for the same checks after a command that ran to
its end; INTx2 or TERMx2: the signal twice, 50 ms apart or INTERRUPT_GAP
seconds, as a user who presses Ctrl-C twice.)

Runs ``hg HG-ARGS`` through Mercurial's dispatcher in this very process, so
that what the command leaves behind in the process can be checked: once
WATCHDIR holds COUNT files (the apply is under way), the process sends
itself SIGNAL (INT or TERM).  Then it prints one line per property:

- the exit status,
- whether the command was still running when the signal came (a signal
  after the end proves nothing),
- whether it stopped writing at the signal: fewer than STOPPED_WITHIN
  files appear in WATCHDIR once the command's handler of the signal ran
  (the ones in flight; an apply that went on would create hundreds, while
  a rollback only truncates or removes files).  Counted from the first
  listing after the handler began, not from the kill: until the main
  thread runs it, which a loaded machine can delay by tens of
  milliseconds, nothing can stop the writer threads.
  What appears is read off the file system, listing WATCHDIR again and
  again until the command ends, so that it counts files whoever creates
  them: core, the extension's C lane, any thread,
- whether as many threads run as before the command,
- whether as many descriptors are open as before the command: all of
  them after a command that ran to its end; after a signal, those of files
  in the directory that holds WATCHDIR (the repository's .hg when WATCHDIR
  is its store), since core's unbundle, interrupted, leaves the bundle it
  was reading to the garbage collector, with or without the extension,
  and a second signal can land between the closes of core's two journal
  files as core aborts its transaction (each takes 3 ms under the shim),
  leaving the second one to core's transaction finalizer.

A line more if a finalizer of the extension's raised (Python would print
"Exception ignored in" and go on): "exception ignored in the extension:".
Those of Mercurial's own code are not printed: when a second Ctrl-C cuts
core's abort of a transaction short, core's transaction finalizer tries the
abort again and fails, with or without the extension, at a moment that
depends on the garbage collector.  Nor is a KeyboardInterrupt raised as a
finalizer begins (where Python checks for signals), which no code can
catch.
"""

import gc
import os
import signal
import sys
import threading
import time
import traceback

from mercurial import dispatch, pycompat

try:  # Mercurial 7.1 and later
    from mercurial.main_script import request
except ImportError:
    request = dispatch.request


# A count, not a time: on a loaded machine a prompt stop can take more than a
# second (each of a rollback's truncations pays the modelled close latency
# too: with Mercurial 6.5 the changegroup rollback in test-interrupt.t opens
# about 200 revlogs for writing to truncate them), so a timed assertion
# would fail there.  The rollback creates no file.
STOPPED_WITHIN = 50

# INTx2, TERMx2: seconds between the two signals (tests/soak-interrupts.sh
# draws it at random to land the second one anywhere in the first one's
# handling)
SECOND_SIGNAL_AFTER = float(os.environ.get('INTERRUPT_GAP') or 0.05)



def list_files(root):
    found = set()
    for dirpath, _dirnames, filenames in os.walk(root):
        found.update(os.path.join(dirpath, name) for name in filenames)
    return found


def from_the_extension(unraisable):
    """whether the code that raised is the extension's"""
    where = getattr(unraisable.object, '__module__', None) or ''
    if where.startswith('hgext3rd.backgroundclose'):
        return True
    frames = traceback.extract_tb(unraisable.exc_traceback)
    return any(
        os.sep.join(('hgext3rd', 'backgroundclose', '')) in frame.filename
        for frame in frames
    )


def core_journal(target):
    """whether ``target`` is a journal file of core's transaction"""
    return os.path.basename(target).startswith('journal')


def descriptors(below=None):
    """{descriptor: what it refers to} of this process, less the one that
    lists them; only those of files below ``below`` if given, and none of
    core's journal there"""
    found = {}
    for fd in os.listdir('/proc/self/fd'):
        try:
            target = os.readlink('/proc/self/fd/' + fd)
        except OSError:  # the listing's own, closed once listed
            continue
        if below is None:
            found[fd] = target
        elif target.startswith(below + os.sep) and not core_journal(target):
            found[fd] = target
    return found


def main(argv):
    signame, watchdir, count, sep = argv[:4]
    assert sep == '--', 'usage: see the module docstring'
    hgargs = [pycompat.fsencode(a) for a in argv[4:]]
    times = 1
    if signame.endswith('x2'):
        signame, times = signame[:-2], 2
    signum = None if signame == 'NONE' else getattr(signal, 'SIG' + signame)
    count = int(count)
    sent = []
    finished = threading.Event()
    # files in WATCHDIR when the signal was sent, and files seen there
    # afterwards that were not
    atsignal = set()
    appeared = set()
    # when the command's handler of the signal began, and the files in
    # WATCHDIR then: listed by the watcher, from its first listing that
    # begins after it (listed in the handler, with the writers' threads
    # taking the interpreter in turns, the listing would itself hold the
    # apply back for tens of milliseconds, a loaded machine's)
    handled = []
    athandler = []

    def noting(handler):
        def handle_noting(num, frame):
            if num == signum and not handled:
                handled.append(time.monotonic())
            return handler(num, frame)

        return handle_noting

    # Python's handler of SIGINT is there already, Mercurial sets its own
    # for SIGTERM as it dispatches
    setsignal = signal.signal

    def setsignal_noting(num, handler):
        if num == signum and callable(handler):
            handler = noting(handler)
        return setsignal(num, handler)

    signal.signal = setsignal_noting
    if signum is not None and callable(signal.getsignal(signum)):
        setsignal_noting(signum, signal.getsignal(signum))

    def watch():
        # poll for the command's progress, signal, then keep listing until
        # the command ends
        while signum is not None and not finished.is_set():
            if os.path.isdir(watchdir):
                files = list_files(watchdir)
                if len(files) >= count:
                    sent.append(time.monotonic())
                    os.kill(os.getpid(), signum)
                    # listed after the signal was sent: what the command
                    # created while the listing above ran is not "after"
                    atsignal.update(list_files(watchdir))
                    if times == 2:
                        # lands in whatever the first one started: the
                        # closer's finishing, a rollback
                        finished.wait(SECOND_SIGNAL_AFTER)
                        if not finished.is_set():
                            os.kill(os.getpid(), signum)
                    break
            time.sleep(0.005)
        while sent and not finished.is_set():
            began = time.monotonic()
            if os.path.isdir(watchdir):
                files = list_files(watchdir)
                appeared.update(files - atsignal)
                if handled and not athandler and began > handled[0]:
                    athandler.append(files)
            time.sleep(0.002)
        if athandler:  # there before anything could stop the writers
            appeared.difference_update(athandler[0])

    ignored = []

    def unraisable(info):
        if from_the_extension(info) and not issubclass(
            info.exc_type, (KeyboardInterrupt, SystemExit)
        ):
            ignored.append(
                '%s in %r' % (info.exc_type.__name__, info.object)
            )

    sys.unraisablehook = unraisable
    threads_before = threading.active_count()
    judged = None
    if signum is not None:
        judged = os.path.dirname(os.path.abspath(watchdir))
    fds_before = descriptors(judged)
    watcher = threading.Thread(target=watch, name='interrupt-watcher')
    watcher.start()
    try:
        status = dispatch.dispatch(request(hgargs))
    except KeyboardInterrupt:
        status = 'KeyboardInterrupt escaped'
    finally:
        # whatever escaped (Python then prints it), the watcher ends, and
        # the process with it
        ended = time.monotonic()
        finished.set()
        watcher.join()
    sys.stdout.flush()
    # no garbage collection first: a descriptor that only a finalizer
    # would close counts as left open
    fds_after = descriptors(judged)
    print('exit %s' % (status if isinstance(status, str) else status & 255))
    if signum is not None:
        print('signalled while running: %s' % bool(sent))
    if sent:
        stopped = len(appeared) < STOPPED_WITHIN
        print('stopped writing at the signal: %s' % stopped)
        if not stopped:
            print(
                '  (%d files before the signal, %d as its handler ran, '
                '%d appeared after, %.2f s)'
                % (len(atsignal), len(athandler[0]) if athandler else -1,
                   len(appeared), ended - sent[0])
            )
    print('threads as before: %s' % (threading.active_count() == threads_before))
    print('descriptors as before: %s' % (fds_after == fds_before))
    if fds_after != fds_before:
        for fd, target in sorted(fds_after.items()):
            if fds_before.get(fd) != target:
                print('  open: %s' % target)
        for fd, target in sorted(fds_before.items()):
            if fds_after.get(fd) != target:
                print('  closed: %s' % target)
    gc.collect()  # finalizers left for later run now, with the hook above
    for what in ignored:
        print('exception ignored in the extension: %s' % what)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
