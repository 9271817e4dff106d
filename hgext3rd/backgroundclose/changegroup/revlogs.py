# revlogs.py - background closing of revlog files written by changegroups
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
  pending close.  While whole revlogs are left to core no close is pending
  (a skip begins only then), and the open wrapper is not in place at all;
  renames, unlinks and backups still check;
- the session ends with the function it wraps: every close is finished
  before the caller goes on (hooks, the transaction's close or abort).  On
  failure every close is finished too, even if interrupted meanwhile, so
  that a rollback truncates closed files; close errors then stay behind the
  first error.

Where the store is on a network file system (or with
``worker.backgroundclosewrites`` true), the file revlogs step is
filelogs.py's instead: its threads apply each revlog whole, and close
their own files.

Opening itself is core's: path audit, store encoding, fncache registration
and the transaction's journal are untouched.  One open is not made at all:
a new revlog's index, just found missing by a read, is opened ``r+``
before ``w+``; while the store is locked that open can only fail again,
and a stat says so for less (measured in the section "A changegroup's
revlog files" of README.rst before 0.1.0, in git history).

Where the closer has the C lane (``closer.native``), the lane closes the
descriptors of revlogs opened for writing, under file objects that do not
own them (handover.py); nlink checks, parent directories and file modes
are still the vfs's.
"""

import os
import threading

from mercurial import (
    changegroup,
    transaction,
    vfs as vfsmod,
)

from . import filelogs
from ..shared import (
    handedfiles,
    seams,
    session as sessionmod,
)


class RevlogSession(sessionmod.Session):
    """one changegroup step (file revlogs or manifests) reading the
    changegroup ``source`` (its unpacker): one closer; while closes are
    cheap, whole revlog groups are left to core (session.py), each one
    close left to core however often the revlog is opened"""

    what = b'revlog'
    # a revlog opened three times is closed three times
    unit = b'closes'

    def __init__(self, repo, expectedcount=-1, source=None,
                 label=b'changegroup revlogs'):
        # a new file revlog is opened three times (to read, to append, to
        # create): while it leaves files to core the session takes its
        # vfs.__call__ wrapper away and counts revlog groups instead, one
        # call a file (revloggroup)
        super().__init__(repo.ui, expectedcount, tracknames=True,
                         openseam=_OPEN_SEAM)
        self.source = source
        self.label = label
        # revlogs open through repo.svfs, which encodes names and opens them
        # through the store's raw vfs: the session watches that one, and
        # names files as that vfs is given them (relative to the store)
        self.rawvfs = repo.store.rawvfs
        self._prefix = self.files.prefix(self.rawvfs)
        # the store file whose read open just failed (see vfsopen)
        self.missing = None

    def may_skip(self):
        # only where revloggroup() counts the groups, so that the skip ends
        return (
            self.source is not None
            and getattr(type(self.source), 'filelogheader', None)
            is changegroup.cg1unpacker.filelogheader
        )

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


# wrappers -----------------------------------------------------------------


def step(orig, *args, **kwargs):
    """run a changegroup step (``_addchangegroupfiles``, ``_unpackmanifests``)
    in a session"""
    if threading.current_thread() is not threading.main_thread():
        return orig(*args, **kwargs)
    repo, source, label = _step_arguments(args, kwargs)
    storevfs = getattr(getattr(repo, 'store', None), 'rawvfs', None)
    if storevfs is None or seams.writing(storevfs) is not None:
        # not a local repository with a store of its own; or a step inside
        # a stream apply (it has a closer of its own) or inside a step
        return orig(*args, **kwargs)
    if source is not None and hasattr(args[0], 'svfs'):
        arguments = filelogs.arguments(orig, args, kwargs)
        if arguments is not None and filelogs.applies(
                repo, orig, arguments[3], arguments[6]):
            # the file revlogs on threads, each closing its own files
            positional, extras = arguments[:6], arguments[6]
            return filelogs.apply_files(orig, *positional, **extras)
    session = RevlogSession(
        repo, _expected_files(args, kwargs), source, label
    )
    result = session.run(storevfs, _SESSION_SEAMS, orig, args, kwargs)
    session.summarize(b', %d revlogs left to core' % session.skipped)
    return result


def _step_arguments(args, kwargs):
    """``(repo, source, label)`` of a step: _addchangegroupfiles(repo,
    source, ...); unpacker._unpackmanifests(self, repo, ...)"""
    first = args[0]
    if hasattr(first, 'svfs'):
        source = args[1] if len(args) > 1 else kwargs.get('source')
        return first, source, b'changegroup files'
    return args[1], first, b'changegroup manifests'


def _expected_files(args, kwargs):
    # _addchangegroupfiles(repo, source, revmap, trp, expectedfiles, ...)
    expected = kwargs.get('expectedfiles')
    if expected is None and len(args) > 4 and hasattr(args[0], 'svfs'):
        expected = args[4]
    return expected if isinstance(expected, int) else -1


# what a revlog passes to the 'r+' open of its index
_R_PLUS_KWARGS = frozenset(['checkambig'])


def vfsopen(session, orig, self, path, mode=b'rb', *args, **kwargs):
    if self is not session.rawvfs or not session.usable():
        return orig(self, path, mode, *args, **kwargs)
    closer = session.closer
    closer.wait_for(path)
    if mode in (b'r', b'rb'):
        try:
            return orig(self, path, mode, *args, **kwargs)
        except FileNotFoundError:
            # a new revlog: its index is read first, then opened 'r+',
            # which fails as well, then 'w+'
            session.missing = path
            raise
    missing, session.missing = session.missing, None
    if (
        path == missing
        and mode[:2] == b'r+'
        and not args
        and _R_PLUS_KWARGS.issuperset(kwargs)
    ):
        # a new revlog: core's 'r+' open of the index just found missing
        # would fail again, after two failing opens, a mkdir and their
        # exceptions; a stat tells the same at a tenth of the cost (the
        # store is locked: nothing else makes the file meanwhile).  Its
        # 'w+' open, next, is core's, which audits the path and makes the
        # parent directories as it always does
        # raises what core's open raises, naming the path the vfs joined
        os.lstat(session.files.join(self, path))
    if kwargs.get('atomictemp') or (args and args[0]):
        # atomictemp (by name or position): its close renames, keep it here
        return orig(self, path, mode, *args, **kwargs)
    if (
        kwargs.get('checkambig')
        or args
        or (path == missing and mode[:2] == b'r+')
    ):
        # checkambig: core's wrapper stats the file by name as it closes.
        # A file just found missing, and there now (made meanwhile), or
        # opened with other arguments than the stat above answers for:
        # through core alone, the file object closed here, as a
        # checkambig one is
        fp, fd = orig(self, path, mode, *args, **kwargs), None
    else:
        fp, fd = session.files.open_through(
            orig, self, path, mode, kwargs,
            handing=(path, session.closed_one),
        )
        if handedfiles.hands_itself_over(fp):
            return fp
    return handedfiles.HandedOverFile(
        fp, closer, path, fd, session.files, onclose=session.closed_one
    )


def revloggroup(session, orig, self):
    """the header of the session's next revlog group (one file, or one
    directory's manifest), read before the revlog is opened: while the
    session leaves files to core, one more left to core, or the skip ends
    before this one.  The empty header that ends the groups counts for
    nothing."""
    header = orig(self)
    if (
        session.leaving
        and header
        and self is session.source
        and session.usable()
        and not session.leave_to_core()
    ):
        session.skip_ends()
    return header


def pathop(session, orig, self, path=None, *args, **kwargs):
    """unlink, tryunlink, unlinkpath: wait for a pending close first"""
    if session.usable():
        session.wait_for(self.join(path))
    return orig(self, path, *args, **kwargs)


def rename(session, orig, self, src, dst, *args, **kwargs):
    if session.usable():
        session.wait_for(self.join(src))
        session.wait_for(self.join(dst))
    return orig(self, src, dst, *args, **kwargs)


def addbackup(session, orig, self, *args, **kwargs):
    """the transaction copies the file without a vfs: close all first"""
    if session.usable():
        session.closer.wait()
    return orig(self, *args, **kwargs)


# wrapped only while a session runs, bound to it (see seams.py)
_OPEN_SEAM = (vfsmod.vfs, '__call__', vfsopen)
_SESSION_SEAMS = [
    # in place for the whole session: a step takes the bound method once,
    # for all its groups (iter(source.filelogheader, {}))
    (changegroup.cg1unpacker, 'filelogheader', revloggroup),
    (vfsmod.abstractvfs, 'unlink', pathop),
    (vfsmod.abstractvfs, 'tryunlink', pathop),
    (vfsmod.abstractvfs, 'unlinkpath', pathop),
    (vfsmod.abstractvfs, 'rename', rename),
    (transaction.transaction, 'addbackup', addbackup),
]
