# descriptors.py - descriptors with one owner, and FileError
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Opening, writing and closing descriptors so that each has one owner:
the ``owned`` set of its submitter, a pool, or nobody once closed.  Also
``FileError``, what every failed write or close becomes.  See
docs/design.rst."""

import errno
import os
import threading

from . import native
from .threads import block_worker_signals


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


def file_error(name, exc):
    """the FileError for a failed close of ``name``; a file object whose
    close() writes the file (deferredwrite.FileWrite) raises its own,
    which says what failed"""
    if isinstance(exc, FileError):
        return exc
    return FileError(name, exc)


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
    if native.lane_module is not None and nul not in path:
        return native.lane_module.open_owned(path, flags, mode, owned)
    fd = os.open(path, flags, mode)  # not inheritable since Python 3.4
    owned.add(fd)
    return fd


class OwnershipError(RuntimeError):
    """a descriptor was given to be closed by a caller that did not own it
    (raised where ownership is checked strictly: the tests)"""


# the numbers close_owned() was given and did not close, as their set did
# not hold them: a bug of its caller, reported once (take_unowned())
_unowned = []
# the tests raise OwnershipError instead
STRICT = bool(os.environ.get('BACKGROUNDCLOSE_STRICT_OWNERSHIP'))


def _not_owned(fd):
    """close_owned() was given ``fd``, not in its set: another owner's, or
    closed already (its number maybe reused), so it is left alone"""
    if len(_unowned) < 64:
        _unowned.append(fd)
    if STRICT:
        raise OwnershipError(
            'descriptor %d was to be closed by a caller that does not own '
            'it' % fd
        )


def take_unowned():
    """the numbers close_owned() refused since the last call (a list)"""
    taken = list(_unowned)
    del _unowned[:len(taken)]
    return taken


if native.lane_module is not None:
    native.lane_module.set_not_owned(_not_owned)


def close_owned(fd, owned):
    """drop ``fd`` from the set ``owned`` and close it, in one step where the
    C module is built; raises OSError if close() fails (``fd`` is closed and
    forgotten all the same).  A number ``owned`` does not hold is not the
    caller's to close: it is left open (see _not_owned)."""
    if native.lane_module is not None:
        native.lane_module.close_owned(fd, owned)
        return
    try:
        # forget it first: once closed, its number may be reused
        owned.remove(fd)
    except KeyError:
        _not_owned(fd)
        return
    os.close(fd)


def queue_handed_over(queue, entry, owned, fd):
    """a Python pool's hand-over of the descriptor ``fd``: ``entry``
    appended to the deque ``queue`` and ``fd`` dropped from the set
    ``owned``, in one step where the C module is built"""
    if native.lane_module is not None:
        native.lane_module.hand_over(queue, entry, owned, fd)
        return
    queue.append(entry)
    # an interrupt here leaves it queued and owned: take_back_handed()
    # undoes the hand-over all the same
    owned.discard(fd)


def take_back_handed(queue, owned, fd):
    """undo queue_handed_over(): the last entry of ``queue`` popped and
    ``fd`` the owner's again, in one step where the C module is built"""
    if native.lane_module is not None:
        native.lane_module.take_back(queue, owned, fd)
        return
    queue.pop()
    # without the C module, an interrupt here leaves it neither queued nor
    # owned: open until the process exits, never closed twice
    owned.add(fd)


def owned_open_close():
    """``(open, close)``: ``open(path, flags, mode, owned)`` opens a
    descriptor into the set ``owned``, ``close(fd, owned)`` closes it out
    of it, each as ``open_owned`` and ``close_owned`` do; the C module's
    own functions where it is built, for a loop that calls them for every
    file (a call fewer each)"""
    lane = native.lane_module
    if lane is not None:
        return lane.open_owned, lane.close_owned

    def open_into(path, flags, mode, owned):
        return open_owned(path, flags, owned, mode)

    return open_into, close_owned


def owned_closer(closefn, owned, threadsets=None):
    """``closefn`` for a submitter that keeps the descriptors it owns in
    ``owned``: a descriptor is forgotten there as it is closed, and one
    not there is left alone (see close_owned).  ``threadsets``: a dict,
    thread ident -> the set of the descriptors that thread owns instead
    (one of core's writer threads, which records its own)"""

    def close_and_forget(target):
        if type(target) is int:
            mine = owned
            if threadsets:
                mine = threadsets.get(threading.get_ident(), owned)
            if closefn is close_target:
                # forgets and closes in one step where the C module is
                # built: an interrupt in between would leave it forgotten
                # and open
                close_owned(target, mine)
                return
            # a close of its own (tests; every seam closes with
            # close_target): two steps, and an interrupt between them
            # leaves the number forgotten and open, never closed twice
            try:
                # forget it first: once closed, its number may be reused
                mine.remove(target)
            except KeyError:
                _not_owned(target)
                return
        closefn(target)

    return close_and_forget


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


def write_into(fd, name, data, closefn):
    """write ``data`` into ``fd`` on this thread; if that fails, close it
    all the same (with ``closefn``) and raise a FileError ('writing')"""
    try:
        write_all(fd, data)
    except Exception as exc:
        close_quietly(fd, closefn)
        raise FileError(name, exc, 'writing') from exc


def close_elsewhere(fds):
    """close the descriptors ``fds`` (a list, now the callee's) on a thread
    of their own, which ends once they are closed: after closes were left
    hanging, one more close on this thread could hang as well, where the
    command must end (a command server goes on).  A close that hangs keeps
    only that thread."""
    if not fds:
        return

    def close_all():
        block_worker_signals()
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
    except OwnershipError:
        raise  # a bug, not a failure of the file system: never hidden
    except Exception:
        pass


def drop(target, closefn):
    """an interrupt kept ``target`` from being closed or handed over: close
    it here.  One whose close would write it (deferredwrite.FileWrite) is
    discarded: nothing is written after an interrupt"""
    if type(target) is int or not hasattr(target, 'discard'):
        close_quietly(target, closefn)
    else:
        target.discard()


def give_back(target, owned, closefn):
    """an interrupt kept ``target`` from a pool: the submitter's again.  A
    descriptor in ``owned`` is left there, for the submitter's cleanup
    (closed here it could be closed twice, should the interrupt have
    come just after the hand-over); anything else is dropped here"""
    if type(target) is not int or owned is None:
        drop(target, closefn)
