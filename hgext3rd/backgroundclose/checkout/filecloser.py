# filecloser.py - the closer behind vfs.backgroundclosing() outside streams
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""The closer of working-copy updates.

Core's update (``hg update``, the update after ``hg clone``) writes the
files it gets inside ``wvfs.backgroundclosing()`` and opens each with
``backgroundclose=True``; with many files it forks update workers, and each
worker runs that loop on its share.  Core's own closer is off by default
outside Windows, and costs more than closing inline when closes are cheap.

Outside a stream apply, ``vfs.backgroundfilecloser`` (what
``backgroundclosing()`` enters) returns a ``WorkingCopyCloser``: the
extension's closer, with the ``[worker]`` settings.  It is made inside the
process that writes, so a forked worker has its own closer and threads.
Each file is flushed on the writing thread before its close is handed over:
update stats the file right after writing it to record its size and mtime
in the dirstate, and must find its data there.

Where the closer has the C lane, once it closes in the background, the
files update writes with ``backgroundclose=True`` are opened for the lane
(``vfs.__call__`` is wrapped from then until the closer exits, see
handover.py): the lane closes their descriptors, in each forked worker and
in an update without workers alike.  The closer opens them itself as core's
``vfs.__call__`` would (``_open_direct``), unless the open has other
arguments.
"""

from mercurial import (
    util,
    vfs as vfsmod,
)

from .. import engine
from ..shared import (
    compat,
    handedfiles,
    seams,
    session as sessionmod,
)


class WorkingCopyCloser(sessionmod.Session):
    """what ``vfs.backgroundclosing()`` enters outside a stream apply"""

    what = b'working-copy'
    label = b'working-copy update'

    def __init__(self, ui, expectedcount=-1):
        super().__init__(ui, expectedcount)
        self._seams = None

    def __enter__(self):
        self._open_for_lane_if_background()
        return self

    def _open_for_lane_if_background(self):
        """once closes go to the C lane, open the next files for it: the
        wrappers that do it cost every vfs call a little, so they are only
        put in place then"""
        if self._seams is None and self.files.takes_descriptors():
            self._seams = seams.installed(_SEAMS).install()

    def __exit__(self, exc_type, exc_value, exc_tb):
        failing = exc_type is not None
        try:
            try:
                # failing: finish the closes, and let the first error win
                self.finish(failing)
            finally:
                self.files.unwrap()
                if self._seams is not None:
                    self._seams.remove()
        except engine.FileError as exc:
            raise self.abort(exc) from exc
        if isinstance(exc_value, engine.FileError):
            # a close handed over here, or one that failed earlier, raised
            # by a close() core called
            raise self.abort(exc_value) from exc_value
        if not failing:
            self.summarize()
        return False

    def close(self, fh):
        """close ``fh`` now or on a background thread (vfs.delayclosedfile
        calls this for the files vfsopen() leaves to core)"""
        name = getattr(fh, 'name', None)
        try:
            engine.flush_for_handover(fh, name)
            self.closer.close(fh, name)
        except engine.FileError as exc:
            raise self.abort(exc) from exc
        if self._seams is None and self.closer.decisions.background:
            self._open_for_lane_if_background()

    def open(self, orig, vfs, path, mode, kwargs):
        """open a file update writes, its descriptor for the lane"""
        if (
            orig is self.files.corecall
            and type(vfs) is vfsmod.vfs
            and _CORE_DEFAULTS.issuperset(kwargs)
            and not any(kwargs.values())
            and path[:1] != b'/'
        ):
            return self._open_direct(vfs, path, mode)
        joined = self.files.join(vfs, path)
        fp, fd = self.files.open_through(
            orig, vfs, path, mode, kwargs, joined, self._descriptor_file
        )
        if type(fp) is handedfiles.DescriptorFile:
            return fp
        return handedfiles.HandedOverFile(fp, self.closer, joined, fd, self.files)

    def _open_direct(self, vfs, path, mode):
        """what core's ``vfs.__call__`` does for a file opened ``'w'``, the
        steps in its order (core's audit, the vfs's join, the file there
        unlinked, else its parents made with ``util.makedirs``, core's
        ``_fixfilemode``), with a DescriptorFile over the new file's
        descriptor: core's open, and a ``util.posixfile`` wrapper to take
        its descriptor, cost some 8 us a file more (the section "The
        stream's own opens" of README.rst before 0.1.0, in git history)"""
        compat.audit(vfs, path, mode)
        files = self.files
        name = files.join(vfs, path)
        dirname, basename = util.split(name)
        if basename:  # else the open fails, as core's does
            try:
                util.unlink(name)
            except FileNotFoundError:
                util.makedirs(dirname, vfs.createmode)
        fp = files.open_direct(name, self._descriptor_file)
        # should it fail, fp's finalizer, or release(), closes the
        # descriptor
        vfs._fixfilemode(name)
        return fp

    def _descriptor_file(self, fd, name):
        return handedfiles.DescriptorFile(fd, name, self.closer, self.files)


def backgroundfilecloser(orig, ui, expectedcount=-1):
    """replaces core's closer (a stream apply wraps this with its own)"""
    return WorkingCopyCloser(ui, expectedcount)


def vfsopen(orig, self, path, mode=b'rb', *args, **kwargs):
    """while a WorkingCopyCloser with the C lane is entered: the files
    opened with ``backgroundclose=True`` (written once, closed before the
    closer exits) are opened for the lane"""
    target = getattr(self, '_backgroundfilecloser', None)
    if (
        type(target) is not WorkingCopyCloser
        # not for the lane now: core's file, and close() takes it
        or not target.files.takes_descriptors()
        or args
        or not kwargs.get('backgroundclose')
        or mode not in (b'w', b'wb')
        or kwargs.get('atomictemp')
        or kwargs.get('checkambig')
        or not target.usable()
    ):
        return orig(self, path, mode, *args, **kwargs)
    del kwargs['backgroundclose']
    return target.open(orig, self, path, mode, kwargs)


# the arguments update opens its files with, once vfsopen() took
# backgroundclose, each false there (any other: core's open)
_CORE_DEFAULTS = frozenset(('atomictemp', 'checkambig'))

# wrapped once a WorkingCopyCloser's closes go to the C lane (seams.py)
_SEAMS = [(vfsmod.vfs, '__call__', vfsopen)]
