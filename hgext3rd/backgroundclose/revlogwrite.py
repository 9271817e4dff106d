# revlogwrite.py - background closing of revlog files written by changegroups
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""The seams between the closer and changegroup application.

``hg unbundle``, ``hg pull`` and ``hg clone`` without ``--stream`` apply
changegroups: every file revlog of the changegroup is opened (``w+`` when
new, ``r+`` to append), written and closed, all on the main thread.  While
``changegroup._addchangegroupfiles`` (file revlogs) or ``_unpackmanifests``
(manifests, one revlog per directory with tree manifests) runs, a
``RevlogSession`` hands those closes to the extension's closer.

Unlike stream files, revlog files are reopened: to append again, to read
(``server.validate``), when an inline revlog grows too big and is split into
index and data, by a rollback.  So, during a session:

- a file is flushed on the main thread before its close is handed over: the
  data is in the kernel before anything else runs, whichever thread closes;
- every open through the store's vfs, and every rename or unlink through
  any vfs, first waits until no close of that path is pending; a backup the
  transaction takes (the copy before an inline split) waits for every
  pending close;
- the session ends with the function it wraps: every close is finished
  before the caller goes on (hooks, the transaction's close or abort).  On
  failure every close is finished too, even if interrupted meanwhile, so
  that a rollback truncates closed files; close errors then stay behind the
  first error.

Opening itself is core's: path audit, store encoding, fncache registration
and the transaction's journal are untouched.

Where the closer has the C lane (``closer.native``), the lane closes
descriptors, not file objects: while the store's vfs opens a revlog for
writing, ``util.posixfile`` opens the descriptor with ``os.open`` and wraps
it in a file object that does not own it (``closefd=False``), with the
path as its name.  Everything before and after (nlink checks, parent
directories, file modes) is still the vfs's.  The session keeps the set of
such descriptors not handed over yet: the lane takes a descriptor out of it
in the same step as it takes it, and whatever is left after a failure is
closed here, once.
"""

import os
import threading

from mercurial import (
    pycompat,
    transaction,
    util,
    vfs as vfsmod,
)

from . import (
    closer as closermod,
    messages,
    seams,
    settings,
    streamapply,
)

# the session in progress in this process, if any
_session = None


class RevlogSession:
    """one changegroup step (file revlogs or manifests): one closer

    When closes are cheap the closer closes inline, and what is left of
    the session's cost is the wrapping itself: a few microseconds per
    file, a few percent of an apply.  So while the closer closes inline,
    has nothing pending and measures closes well below its threshold, the
    session leaves the next ``SKIP`` opens to core untouched, then wraps
    the files of the next ``SAMPLE`` closes again to measure anew.  A
    file system that turns slow is noticed within one skip.
    """

    SAMPLE = 32
    SKIP = 1024

    def __init__(self, repo, expectedcount=-1):
        # descriptors opened for the lane and not handed over yet, and the
        # file object over each (it does not own its descriptor)
        self.rawfds = set()
        self.rawfiles = {}
        self.closer = closermod.Closer(
            expectedcount=expectedcount,
            tracknames=True,
            native=settings.native(repo.ui),
            owned=self.rawfds,
            **settings.closer_options(repo.ui)
        )
        # while the store's vfs opens a revlog for writing: its path, which
        # posixfile() then opens as a descriptor for the lane, and that
        # descriptor
        self.rawopening = None
        self.openedfd = None
        # revlogs open through repo.svfs, which encodes names and opens them
        # through the store's raw vfs: the session watches that one, and
        # names files as that vfs is given them (relative to the store)
        self.rawvfs = repo.store.rawvfs
        self._prefix = self.rawvfs.join(b'x')[:-1]
        self.thread = threading.get_ident()
        self.skipping = 0  # opens left to core before the next sample
        self.skipped = 0
        self._sampled = 0  # closes in the current sample

    def closed_one(self):
        """a file of the session was handed to the closer"""
        self._sampled += 1
        if self._sampled < self.SAMPLE:
            return
        self._sampled = 0
        closer = self.closer
        if (
            closer.mode == closermod.INLINE
            and not closer.pending
            and closer.estimate < closer.threshold / 2
        ):
            self.skipping = self.SKIP
            self.skipped += self.SKIP

    def name_of(self, joined):
        """the name of the store file at ``joined`` (as a vfs joined it),
        or None outside the store"""
        if joined and joined.startswith(self._prefix):
            return joined[len(self._prefix) :]
        return None

    def wait_for(self, joined):
        """wait until no close of the file at ``joined`` is pending"""
        closer = self.closer
        if closer.has_pending_any():
            name = self.name_of(joined)
            if name is not None:
                closer.wait_for(name)

    def discard(self, fd):
        """on a failing path: close ``fd``, but first make the file object
        over it forget what it still buffers.  Closing only the number
        would leave that file object to flush its buffer, whenever it is
        finalized, into whatever file has taken the number by then (in a
        long-lived process: any file at all)."""
        fp = self.rawfiles.get(fd)
        if fp is not None:
            # closefd=False: this marks it closed, and a closed buffered
            # file never flushes again; the descriptor stays open.  Only
            # then is it forgotten: an interrupt in between leaves it here
            closermod.close_quietly(getattr(fp, 'raw', fp))
            self.rawfiles.pop(fd, None)
        self.closer.close_quietly(fd)

    def handing_over(self, fd):
        """``fd``'s file object is flushed and closed: the closer takes
        the descriptor alone"""
        self.rawfiles.pop(fd, None)

    def finish(self, failing):
        """every close done (before a rollback, on failure), then, on
        failure, the descriptors an interrupt kept from the closer"""
        try:
            self.closer.finish(failing)
        finally:
            if failing:
                for fd in list(self.rawfds):
                    self.discard(fd)

    def debug_summary(self, ui):
        """the debug line: what the closer did, if it started threads"""
        messages.debug_summary(
            ui,
            self.closer,
            b'revlog',
            b', %d opens left to core' % self.skipped,
        )


class DeferredCloseFile(closermod.HandedOverFile):
    """a revlog file opened for writing in a session: flushed on close, then
    closed by the session's closer

    With ``fd``, ``fp`` does not own its descriptor (see the module doc):
    closing ``fp`` flushes it, and the descriptor goes to the closer."""

    def __init__(self, fp, session, path, fd=None):
        self._fp = fp
        self._session = session
        self._path = path
        self._fd = fd
        self._closed = False

    def close(self):
        if self._closed:
            return
        self._closed = True
        fp = self._fp
        closer = self._session.closer
        fd = self._fd
        if fd is None:
            closermod.flush_for_handover(fp, self._path)
            closer.close(fp, self._path)
        else:
            try:
                closermod.flush_for_handover(fp, self._path)
                fp.close()  # flushed already: only marks it closed
            except BaseException:
                # interrupted or failed while flushing: fp may still
                # hold bytes, and must never write them after fd is closed
                self._session.discard(fd)
                raise
            self._session.handing_over(fd)
            closer.close(fd, self._path)
        self._session.closed_one()

    def _close_here(self):
        super()._close_here()
        if self._fd is not None:
            # fp was closed first (flushed into fd, still its file)
            self._session.discard(self._fd)

    def __del__(self):
        # core leaves a file to the garbage collector now and then; ours
        # does not own its descriptor, so close it here, unless the session
        # did after a failure (then it is not in rawfds any more)
        fd = getattr(self, '_fd', None)  # None if __init__ did not run
        try:
            if (
                fd is not None
                and not self._closed
                and fd in self._session.rawfds
            ):
                self._close_here()
        except Exception:  # at interpreter exit, modules may be gone
            pass

    def __getattr__(self, name):
        value = getattr(self._fp, name)
        if callable(value):
            # revlogs call write, seek and tell many times: look each up
            # once (the file object behind does not change)
            setattr(self, name, value)
        return value

    def __iter__(self):
        return iter(self._fp)


def _active():
    """the session, when the calling thread may use it"""
    session = _session
    if session is None or threading.get_ident() != session.thread:
        return None
    return session


# wrappers -----------------------------------------------------------------


def step(orig, *args, **kwargs):
    """run a changegroup step (``_addchangegroupfiles``, ``_unpackmanifests``)
    in a session"""
    global _session
    if (
        _session is not None
        or streamapply.active()  # it has a closer of its own
        or threading.current_thread() is not threading.main_thread()
    ):
        return orig(*args, **kwargs)
    repo = _repo_argument(args)
    if getattr(getattr(repo, 'store', None), 'rawvfs', None) is None:
        # not a local repository with a store of its own
        return orig(*args, **kwargs)
    session = RevlogSession(repo, _expected_files(args, kwargs))
    wrappers = list(_SESSION_SEAMS)
    if session.closer.native:
        wrappers.append((util, 'posixfile', posixfile))
    _session = session
    failing = True
    try:
        try:
            with seams.installed(wrappers):
                result = orig(*args, **kwargs)
            failing = False
        finally:
            try:
                session.finish(failing)
            finally:
                _session = None
    except closermod.FileError as exc:
        # closed inline, raised on a later submission, or by finish()
        raise messages.file_abort(exc, exc.name) from exc
    session.debug_summary(repo.ui)
    return result


def _repo_argument(args):
    # _addchangegroupfiles(repo, ...); unpacker._unpackmanifests(self, repo,
    # ...)
    first = args[0]
    return first if hasattr(first, 'svfs') else args[1]


def _expected_files(args, kwargs):
    # _addchangegroupfiles(repo, source, revmap, trp, expectedfiles, ...)
    expected = kwargs.get('expectedfiles')
    if expected is None and len(args) > 4 and hasattr(args[0], 'svfs'):
        expected = args[4]
    return expected if isinstance(expected, int) else -1


def vfsopen(orig, self, path, mode=b'rb', *args, **kwargs):
    session = _session
    if session is None:
        return orig(self, path, mode, *args, **kwargs)
    if session.skipping:
        # closes are cheap and none is pending: leave it to core
        session.skipping -= 1
        return orig(self, path, mode, *args, **kwargs)
    if self is not session.rawvfs or threading.get_ident() != session.thread:
        return orig(self, path, mode, *args, **kwargs)
    closer = session.closer
    closer.wait_for(path)
    if (
        mode in (b'r', b'rb')
        or kwargs.get('atomictemp')  # its close renames: keep it here
        or (args and args[0])  # atomictemp passed by position
    ):
        return orig(self, path, mode, *args, **kwargs)
    if not closer.native or kwargs.get('checkambig'):
        # checkambig: core's wrapper stats the file by name as it closes
        return DeferredCloseFile(
            orig(self, path, mode, *args, **kwargs), session, path
        )
    # only this path: the vfs may open others meanwhile (the temporary
    # copy that breaks a hardlink, through util.mktempcopy), and their
    # file objects must own their descriptors
    session.rawopening = self.join(path)
    try:
        fp = orig(self, path, mode, *args, **kwargs)
    finally:
        session.rawopening = None
    fd = session.openedfd  # None: core opened it (a mode posixfile skips)
    session.openedfd = None
    return DeferredCloseFile(fp, session, path, fd)


# what posixfile() opens for the lane: the flags of Python's open() modes
_RAW_FLAGS = {
    b'w': os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
    b'w+': os.O_RDWR | os.O_CREAT | os.O_TRUNC,
    b'a': os.O_WRONLY | os.O_CREAT | os.O_APPEND,
    b'a+': os.O_RDWR | os.O_CREAT | os.O_APPEND,
    b'r+': os.O_RDWR,
}


def posixfile(orig, name, mode=b'r', buffering=-1, *args, **kwargs):
    """during vfsopen() of a revlog for writing: a file object over a
    descriptor the session's closer will close"""
    session = _session
    if (
        session is None
        or name != session.rawopening
        or session.openedfd is not None
        or args
        or kwargs
    ):
        return orig(name, mode, buffering, *args, **kwargs)
    flags = _RAW_FLAGS.get(mode.replace(b'b', b''))
    if flags is None:
        return orig(name, mode, buffering)
    # like open(): mode 0o666 less the umask, not inherited by children;
    # the descriptor goes into rawfds in the same step
    fd = session.closer.open_owned(name, flags)
    try:
        fp = open(fd, pycompat.sysstr(mode), buffering, closefd=False)
        # what open(name) would say; unbuffered, fp is the FileIO itself
        getattr(fp, 'raw', fp).name = name
    except BaseException:
        session.closer.close_quietly(fd)
        raise
    session.openedfd = fd
    session.rawfiles[fd] = fp
    return fp


def pathop(orig, self, path=None, *args, **kwargs):
    """unlink, tryunlink, unlinkpath: wait for a pending close first"""
    session = _active()
    if session is not None:
        session.wait_for(self.join(path))
    return orig(self, path, *args, **kwargs)


def rename(orig, self, src, dst, *args, **kwargs):
    session = _active()
    if session is not None:
        session.wait_for(self.join(src))
        session.wait_for(self.join(dst))
    return orig(self, src, dst, *args, **kwargs)


def addbackup(orig, self, *args, **kwargs):
    """the transaction copies the file without a vfs: close all first"""
    session = _active()
    if session is not None:
        session.closer.wait()
    return orig(self, *args, **kwargs)


# wrapped only while a session runs (see seams.py)
_SESSION_SEAMS = [
    (vfsmod.vfs, '__call__', vfsopen),
    (vfsmod.abstractvfs, 'unlink', pathop),
    (vfsmod.abstractvfs, 'tryunlink', pathop),
    (vfsmod.abstractvfs, 'unlinkpath', pathop),
    (vfsmod.abstractvfs, 'rename', rename),
    (transaction.transaction, 'addbackup', addbackup),
]
