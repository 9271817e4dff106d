# wrappers.py - what a stream apply puts in place of core's while it runs
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""The wrappers in place while a stream apply runs, bound to its session
(apply.py): what ``vfs.backgroundclosing()`` enters (``SessionCloser``),
the opens of the files the stream writes, ``util.filechunkiter``, which
counts the files left to core, and the abort of core's reading thread.
"""

import contextlib
import sys
import threading

from mercurial.i18n import _
from mercurial import (
    error,
    util,
    vfs as vfsmod,
)

from ..shared import compat
from . import v2 as streamv2


class SessionCloser:
    """what vfs.backgroundclosing() gets during a session

    Leaving the context waits for every close (and raises what failed), so
    that the transaction only ends once the files are complete on disk.
    """

    def __init__(self, session):
        self._session = session

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, exc_tb):
        failing = exc_type is not None
        # the session's teardown, here: every close done and every thread
        # joined, even if interrupted meanwhile, then the first failure
        # raised.  Failing, the files are taken back now, inside the
        # transaction, so that its abort runs with the disk space they
        # used; a close that fails here is taken back by that abort
        # (finish_on_abort).  Stream v2 enters one of these per vfs: the
        # second exit finds the teardown done.
        self._session.finish(failing)
        if not failing:
            self._session.check_complete()
            # what fails from here on is not a file of the stream
            self._session.streamed()
        return False

    def close(self, fh):
        session = self._session
        name = getattr(fh, 'name', None)
        if session.closes_core_file():
            session.close_core_file(fh, name)
        else:
            session.closer.close(fh, name)


def backgroundfilecloser(session, orig, ui, expectedcount=-1):
    """every ``vfs.backgroundclosing()`` inside the apply gets the
    session's closer (outermost: it wraps the one of every other caller)"""
    if not session.running:
        return orig(ui, expectedcount=expectedcount)
    session.watch_transaction()
    return SessionCloser(session)


def backgroundclosing(session, orig, self, ui, expectedcount=-1):
    """core's ``vfs.backgroundclosing()`` does nothing off the main thread;
    on the thread applying a stream (Mercurial as a library, cloning on
    another thread) it enters the session's closer as on the main thread,
    so that every close is done and every failure raised before the
    stream's transaction commits"""
    if (
        not session.usable()
        or threading.current_thread() is threading.main_thread()
    ):
        return orig(self, ui, expectedcount=expectedcount)
    return _closing_off_main(self, ui, expectedcount)


@contextlib.contextmanager
def _closing_off_main(vfs, ui, expectedcount):
    """what core's backgroundclosing() does on the main thread"""
    vfs = getattr(vfs, 'vfs', vfs)
    if getattr(vfs, '_backgroundfilecloser', None):
        raise error.Abort(_(b'can only have 1 active background file closer'))
    with vfsmod.backgroundfilecloser(ui, expectedcount=expectedcount) as bfc:
        try:
            vfs._backgroundfilecloser = bfc
            yield bfc
        finally:
            vfs._backgroundfilecloser = None


def _streamed(session, rawvfs, mode, args, kwargs):
    """whether an open through ``rawvfs`` is of a file the stream writes:
    for writing, on the session's thread, and inside backgroundclosing()
    (such a file is written once, and closed before the context, and so
    the transaction, ends)"""
    return (
        session.usable()
        and not args
        and mode in (b'w', b'wb')
        and not kwargs.get('atomictemp')
        and not kwargs.get('checkambig')
        and type(getattr(rawvfs, '_backgroundfilecloser', None))
        is SessionCloser
    )


def vfsopen(session, orig, self, path, mode=b'rb', *args, **kwargs):
    """a file the stream writes is the session's (not in place while
    files are left to core: a chain of another extension's that still
    holds this wrapper then passes the file on)"""
    if session.leaving or not _streamed(session, self, mode, args, kwargs):
        return orig(self, path, mode, *args, **kwargs)
    kwargs.pop('backgroundclose', None)
    return session.opener.open(orig, self, path, mode, kwargs)


def storeopen(session, orig, self, path, mode=b'r', *args, **kwargs):
    """a file the stream writes, opened through the store's vfs by its
    name in the store: registered with the transaction once open"""
    streamed = _streamed(session, self.vfs, mode, args, kwargs)
    if streamed:
        session.journal.check_name(self, path)
    fp = orig(self, path, mode, *args, **kwargs)
    if streamed:
        session.journal.register_opened(fp, self, path)
    return fp


def filechunkiter(session, orig, f, size=None, limit=None):
    """stream v1, v3 and v2 before Mercurial 7.0 copy each file with
    ``util.filechunkiter(stream, limit=size)`` right after opening it.
    While files are left to core (the open wrapper away), the file just
    opened is one of them (``ApplySession.core_opened``).  Only the
    consumer's thread reads its stream, so no thread check here: this
    runs for every file, hence its named arguments (no ``*args`` or
    ``**kwargs`` to pack and unpack again)."""
    if size is None:  # core's default
        chunks = orig(f, limit=limit)
    else:
        chunks = orig(f, size, limit)
    if f is session.stream:
        session.streamfiles += 1
        if session.leaving:
            return session.core_opened(chunks, limit)
    return chunks


def abort_data_queue(session, orig, queue):
    """a parallel stream v2 apply fails (a close that failed, a Ctrl-C):
    core aborts its reading thread, then joins its writers, which would
    first write every file read so far.  They are told to write nothing
    more here, wherever the failure came from (one that comes through
    the parser tells them there already: StreamV2Writer.parsed).

    Core's reading thread may also wait for room under its memory target:
    nothing reads any more, and core's abort() wakes it only for its loop
    to wait again, so that joining it would wait for ever.  Once every
    byte counts as used, it reads one more chunk, sees the abort and
    ends."""
    if session.running:  # not an apply's that ended (see seams.py)
        session.cancelled.set()
    orig(queue)
    queue.mark_used(sys.maxsize)


# stream v1, v3 and v2 before 7.0: the session's own files (taken away
# during skips), and where the files left to core are counted
OPEN_SEAM = (vfsmod.vfs, '__call__', vfsopen)
FILECHUNKITER_SEAM = (util, 'filechunkiter', filechunkiter)


# wrapped only while a stream apply runs, bound to it (see seams.py)
SESSION_SEAMS = [
    (vfsmod, 'backgroundfilecloser', backgroundfilecloser),
    (vfsmod.abstractvfs, 'backgroundclosing', backgroundclosing),
    (compat.DATA_QUEUE, 'abort', abort_data_queue)
    if compat.DATA_QUEUE is not None
    else None,
] + streamv2.SEAMS
