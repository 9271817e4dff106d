# interrupt.py - run one hg command in this process and signal it midway
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""usage: interrupt.py SIGNAL WATCHDIR COUNT -- HG-ARGS...

(SIGNAL NONE: no signal, for the same checks after a command that ran to
its end.)

Runs ``hg HG-ARGS`` through Mercurial's dispatcher in this very process, so
that what the command leaves behind in the process can be checked: once
WATCHDIR holds COUNT files (the apply is under way), the process sends
itself SIGNAL (INT or TERM).  Then it prints one line per property:

- the exit status,
- whether the command was still running when the signal came (a signal
  after the end proves nothing),
- whether it stopped writing at the signal: it creates fewer than
  STOPPED_WITHIN files after the signal (the ones in flight; an apply that
  went on would create hundreds, while a rollback only truncates or removes
  files),
- whether as many threads run as before the command,
- whether as many descriptors are open as before the command.
"""

import gc
import os
import signal
import sys
import threading
import time

from mercurial import dispatch, pycompat, util

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

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR


def count_files(root):
    total = 0
    for _dirpath, _dirnames, filenames in os.walk(root):
        total += len(filenames)
    return total


def descriptors():
    return sorted(os.listdir('/proc/self/fd'))


def main(argv):
    signame, watchdir, count, sep = argv[:4]
    assert sep == '--', 'usage: see the module docstring'
    hgargs = [pycompat.fsencode(a) for a in argv[4:]]
    signum = None if signame == 'NONE' else getattr(signal, 'SIG' + signame)
    count = int(count)
    sent = []
    finished = threading.Event()

    def watch():
        # poll for the command's progress; give up once it finished
        while signum is not None and not finished.is_set():
            if os.path.isdir(watchdir) and count_files(watchdir) >= count:
                sent.append(time.monotonic())
                os.kill(os.getpid(), signum)
                return
            time.sleep(0.005)

    # files created, before and after the signal: through the vfs
    # (util.posixfile) and through os.open (stream v2's writer since
    # Mercurial 7.0, and this extension's)
    created = {False: 0, True: 0}
    realposixfile = util.posixfile
    realosopen = os.open

    def countingposixfile(name, mode=b'r', *args, **kwargs):
        if set(pycompat.sysstr(mode)) & set('wax+'):
            if not os.path.lexists(name):
                created[bool(sent)] += 1
        return realposixfile(name, mode, *args, **kwargs)

    def countingosopen(path, flags, *args, **kwargs):
        if flags & WRITE_FLAGS and not os.path.lexists(path):
            created[bool(sent)] += 1
        return realosopen(path, flags, *args, **kwargs)

    util.posixfile = countingposixfile
    os.open = countingosopen
    threads_before = threading.active_count()
    fds_before = descriptors()
    watcher = threading.Thread(target=watch, name='interrupt-watcher')
    watcher.start()
    try:
        status = dispatch.dispatch(request(hgargs))
    except KeyboardInterrupt:
        status = 'KeyboardInterrupt escaped'
    ended = time.monotonic()
    finished.set()
    watcher.join()
    sys.stdout.flush()
    # file objects kept alive by the traceback's reference cycles are closed
    # by the collector; a descriptor from os.open() would stay open
    gc.collect()
    fds_after = descriptors()
    print('exit %s' % (status if isinstance(status, str) else status & 255))
    if signum is not None:
        print('signalled while running: %s' % bool(sent))
    if sent:
        stopped = created[True] < STOPPED_WITHIN
        print('stopped writing at the signal: %s' % stopped)
        if not stopped:
            print(
                '  (created %d files before the signal, %d after, %.2f s)'
                % (created[False], created[True], ended - sent[0])
            )
    print('threads as before: %s' % (threading.active_count() == threads_before))
    print('descriptors as before: %s' % (fds_after == fds_before))
    if fds_after != fds_before:
        for fd in sorted(set(fds_after) - set(fds_before), key=int):
            try:
                print('  open: %s' % os.readlink('/proc/self/fd/' + fd))
            except OSError as exc:
                print('  open: %s (%s)' % (fd, exc))
        for fd in sorted(set(fds_before) - set(fds_after), key=int):
            print('  closed: %s' % fd)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
