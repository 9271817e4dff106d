# opens.py - the files a stream consumer opens through the vfs
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Stream v1, v3, and v2 before Mercurial 7.0: each file the consumer
opens through ``vfs.__call__`` comes back as a file of the session's
(docs/design.rst, "How a file flows").

Where the C module is built they are written straight into their
descriptors, which the lane closes, and opened here as core's
``vfs.__call__`` would (``StreamOpener._open_direct``): core's path
audit, the name the vfs joins (store encoding is done above, by the
store's vfs), the file there unlinked first, core's file mode.
Elsewhere, or for an open with other arguments, opening is core's own.
Once opens are measured waiting, a ``DeferredFile`` instead, written
whole by a writer thread (deferredwrite.py).
"""

import errno
import os

from mercurial import (
    streamclone,
    util,
    vfs as vfsmod,
)

from .. import engine
from ..shared import (
    compat,
    deferredwrite,
    handedfiles,
)

# errors a write into a file a consumer of core's opened may raise without
# a file name
_WRITE_ERRNOS = frozenset(
    getattr(errno, name)
    for name in ('ENOSPC', 'EDQUOT', 'EFBIG', 'EIO')
    if hasattr(errno, name)
)


class StreamOpener:
    """how the files of one ``session`` (apply.ApplySession) are
    opened through the vfs"""

    def __init__(self, session):
        self._session = session

    def open(self, orig, vfs, path, mode, kwargs):
        """open a file the stream writes, through ``vfs`` (core's open,
        ``orig``): the session's file (``_open_here``), or, once writer
        threads write whole files, a DeferredFile"""
        writepolicy = self._session.writepolicy
        if writepolicy.deferring:
            return self._defer(orig, vfs, path, mode, kwargs)
        timing = writepolicy.time_next()
        if timing is None:
            return self._open_here(orig, vfs, path, mode, kwargs)
        fp, wall, cpu, blocked = engine.timed_call(
            timing, self._open_here, orig, vfs, path, mode, kwargs
        )
        if writepolicy.learn(wall, cpu, blocked):
            self._session.wholefiles.start()
        return fp

    def _defer(self, orig, vfs, path, mode, kwargs):
        """a DeferredFile for ``path``, audited here and written whole by
        a writer thread once core closes it"""
        wholefiles = self._session.wholefiles
        if wholefiles.started() is None:
            return self._open_here(orig, vfs, path, mode, kwargs)
        if kwargs.get('auditpath', True):
            compat.audit(vfs, path, mode)
        name = vfs.join(path)
        deferred = deferredwrite.DeferredFile(self, name, wholefiles.budget)
        deferred.where = (orig, vfs, path, mode, kwargs)
        return deferred

    def open_now(self, deferred):
        """a deferred file whose data does not fit the budget: open it on
        this thread (audited already)"""
        orig, vfs, path, mode, kwargs = deferred.where
        fp = self._open_here(
            orig, vfs, path, mode, dict(kwargs, auditpath=False)
        )
        storename = getattr(deferred, 'storename', None)
        if storename is not None:
            self._session.journal.register_opened(fp, *storename)
        return fp

    def write_later(self, deferred, chunks, size):
        """hand a deferred file, whole, to the writer threads"""
        session = self._session
        orig, vfs, path, mode, kwargs = deferred.where
        dirname = path.rpartition(b'/')[0]
        directories = session.directories
        root = vfs.base
        createmode = vfs.createmode
        notindexed = kwargs.get('notindexed', False)
        openkwargs = dict(kwargs, auditpath=False, makeparentdirs=False)

        def prepare():
            if not directories.known(root, dirname):
                directories.prepare(root, dirname, createmode, notindexed)

        # made ahead of its writer, once its parent is
        directories.want(root, dirname, createmode, notindexed)

        storename = getattr(deferred, 'storename', None)
        register_opened = session.journal.register_opened

        def opener():
            fp = orig(vfs, path, mode, **openkwargs)
            if storename is not None:
                register_opened(fp, *storename)
            return fp

        session.wholefiles.hand_over(
            deferred.name, prepare, opener, chunks, size
        )

    def _open_here(self, orig, vfs, path, mode, kwargs):
        """open a file the stream writes on this thread, its writes
        counted: a DescriptorFile where the C module is built (opened by
        ``_open_direct`` unless the open has other arguments), else a
        HandedOverFile over core's file (handedfiles.py); the latter too for
        a sample while files are left to core (``_leaves_opens``) if the
        open has other arguments

        Its parent directories are made here (directories.py), each once:
        core's open is told not to."""
        session = self._session
        files = session.files
        if (
            not kwargs
            and orig is files.corecall
            and type(vfs) is vfsmod.vfs
            and path[:1] != b'/'
        ):
            return self._open_direct(vfs, path, mode)
        directories = session.directories
        dirname = path.rpartition(b'/')[0]
        ours = 'makeparentdirs' not in kwargs
        if ours:
            kwargs['makeparentdirs'] = False
            if not directories.known(vfs.base, dirname):
                self._make_parents(vfs, path, mode, dirname, kwargs)
        while True:
            try:
                if (
                    session.timed
                    or files.takes_descriptors()
                    or (files.writes_direct() and not self._leaves_opens())
                ):
                    fp, fd, writestat = self._open_through(
                        orig, vfs, path, mode, kwargs
                    )
                else:
                    # a sample while opens are left to core, or no C
                    # module: core's file, closed by the closer
                    fp = orig(vfs, path, mode, **kwargs)
                    fd, writestat = None, session.writes
                break
            except ValueError as exc:  # a NUL byte in the name
                raise engine.FileError(
                    vfs.join(path), exc, 'opening'
                ) from exc
            except FileNotFoundError:
                if not ours:
                    raise
                # a directory known to exist was removed meanwhile: make it
                # again, once
                ours = False
                directories.forget(vfs.base, dirname)
                self._make_parents(vfs, path, mode, dirname, kwargs)
        session.lastcore = False
        if type(fp) is handedfiles.DescriptorFile:
            return fp  # counts its writes, hands itself over
        name = getattr(fp, 'name', None)  # what the vfs opened
        if type(name) is not bytes:
            name = vfs.join(path)
        return handedfiles.HandedOverFile(
            fp, session.closer, name, fd, files, writestat,
            onclose=session.closed_one, timed=session.timed,
        )

    def _open_direct(self, vfs, path, mode):
        """open a file the stream writes as a DescriptorFile, where the C
        module is built, doing what core's ``vfs.__call__`` does for a
        file opened ``'w'`` with no other argument: core's audit of the
        path, its parents made (directories.py), any file already there
        unlinked (a hardlink or symlink is replaced, never written
        through), the file created, then core's ``_fixfilemode``.  The
        name is the vfs's own join.  Core's open itself, with a
        ``util.posixfile`` wrapper to take its descriptor, costs every
        file more (the section "The stream's own opens" of README.rst
        before 0.1.0, in git history).  Only for a name
        relative to the vfs, and where no other extension wraps core's
        open (``OwnedFiles.corecall``)."""
        session = self._session
        compat.audit(vfs, path, mode)
        directories = session.directories
        base = vfs.base
        dirname = path.rpartition(b'/')[0]
        if not directories.known(base, dirname):
            directories.prepare(base, dirname, vfs.createmode)
        files = session.files
        name = files.join(vfs, path)
        start = engine.stat_clock() if session.timed else None
        remade = False
        while True:
            try:
                try:
                    util.unlink(name)
                except FileNotFoundError:
                    pass
                fp = files.open_direct(name, self._descriptor_file)
                break
            except FileNotFoundError:
                if remade:
                    raise
                # a directory known to exist was removed meanwhile: make it
                # again, once
                remade = True
                directories.forget(base, dirname)
                directories.prepare(base, dirname, vfs.createmode)
            except ValueError as exc:  # a NUL byte in the name
                raise engine.FileError(name, exc, 'opening') from exc
        # should it fail, fp's finalizer, or the session's release(),
        # closes the descriptor
        vfs._fixfilemode(name)
        if start is not None:
            session.opens.since(start)
        session.lastcore = False
        return fp

    def _leaves_opens(self):
        """whether files may be left to core while posixfile is not
        wrapped: a DescriptorFile costs less than core's file, but would
        wrap posixfile until files are left to core again (Session.
        closed_one removes it then), one wrapping more each sample"""
        session = self._session
        files = session.files
        return not files.wraps_posixfile() and session.leaves_files()

    def _make_parents(self, vfs, path, mode, dirname, kwargs):
        if kwargs.get('auditpath', True):
            # core's audit of the path, before anything is made for it;
            # core's open is then told not to do it a second time
            compat.audit(vfs, path, mode)
            kwargs['auditpath'] = False
        self._session.directories.prepare(
            vfs.base, dirname, vfs.createmode, kwargs.get('notindexed', False)
        )

    def _open_through(self, orig, vfs, path, mode, kwargs):
        """open a DescriptorFile (where the C module is built), timed for
        the report (if shown): the file, its descriptor (None if core
        opened the file itself), the table its writes go to"""
        # the session opens on the main thread only: its tables are
        # session.writes and the one it belongs to
        session = self._session
        start = engine.stat_clock() if session.timed else None
        fp, fd = session.files.open_through(
            orig, vfs, path, mode, kwargs, direct=self._descriptor_file
        )
        if start is not None:
            session.opens.since(start)
        return fp, fd, session.writes

    def _descriptor_file(self, fd, name):
        """the file a vfs opens for the lane (handedfiles.DescriptorFile); a
        small one is written by the lane's thread while the lane takes
        descriptors (nothing reads a stream's files before its closes
        are done)"""
        session = self._session
        return handedfiles.DescriptorFile(
            fd, name, session.closer, session.files, session.writes,
            onclose=session.closed_one, timed=session.timed,
            hold=session.hold_limit(),
        )


def written_by_consumer(exc):
    """the file core's stream consumer was writing when it raised ``exc``,
    as it was opened; None if not from there.

    The one place the extension reads a frame of core's: while files are
    left to core the open wrapper is away (it would cost each of them a
    call), so no wrapper saw the file open, and the consumer's frame is
    the only place its name is.  The innermost Python frame ``exc`` went
    through must be a consumer's (a write or close it called, not code it
    called to read the stream), and the error one a write raises.  Every
    consumer from Mercurial 6.5 to 7.2 calls the file it writes ``ofp``;
    where that is not so, the error is shown as core shows it, unnamed."""
    tb = exc.__traceback__
    if tb is None or exc.errno not in _WRITE_ERRNOS:
        # a consumer reads the stream itself too (a failed read of it is
        # mostly raised deeper, where it reads)
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    frame = tb.tb_frame
    if frame.f_globals.get('__name__') != streamclone.__name__:
        return None
    name = getattr(frame.f_locals.get('ofp'), 'name', None)
    return os.path.normpath(name) if type(name) is bytes else None
