# workingcopy.py - the closer behind vfs.backgroundclosing() outside streams
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
"""

from . import (
    closer as closermod,
    messages,
    settings,
)


class WorkingCopyCloser:
    """what ``vfs.backgroundclosing()`` enters outside a stream apply"""

    def __init__(self, ui, expectedcount=-1):
        self.ui = ui
        self.closer = closermod.Closer(
            expectedcount=expectedcount, **settings.closer_options(ui)
        )

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, exc_tb):
        failing = exc_type is not None
        try:
            # failing: finish the closes, and let the first error win
            self.closer.finish(failing)
        except closermod.FileError as exc:
            raise messages.file_abort(exc, exc.name) from exc
        if not failing:
            messages.debug_summary(self.ui, self.closer, b'working-copy')
        return False

    def close(self, fh):
        """close ``fh`` now or on a background thread (vfs.delayclosedfile
        calls this)"""
        name = getattr(fh, 'name', None)
        try:
            closermod.flush_for_handover(fh, name)
            self.closer.close(fh, name)
        except closermod.FileError as exc:
            raise messages.file_abort(exc, exc.name) from exc


def backgroundfilecloser(orig, ui, expectedcount=-1):
    """replaces core's closer (a stream apply wraps this with its own)"""
    return WorkingCopyCloser(ui, expectedcount)
