# session.py - what the three seams share while they write files
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""One closer session: a stream apply, a changegroup step or a working-copy
update writing files.

The three seams (streamapply.py, revlogwrite.py, workingcopy.py) differ in
which files they take and how they undo a failure.  What they share is
here, so that each keeps the same rules:

- one closer, made from the ``[worker]`` settings, and the file objects and
  descriptors opened for it and not handed over yet (``files``);
- the thread that writes: the main thread, or no thread at all (core only
  closes in the background on the main thread);
- one way to end, ``finish(failing)``: every close done and every thread
  joined, even if interrupted meanwhile; on failure, then, what an
  interrupt kept from the closer is closed; the first failure is raised;
- a failed write or close becomes an ``abort:`` naming the file as the user
  knows it (``describe``);
- the ``--debug`` line, printed only by a closer that started threads.
"""

import threading

from . import (
    closer as closermod,
    handover,
    messages,
    seams,
    settings,
)


class Session:
    """the closer of one seam's writes, and how to end it"""

    # names the files in the --debug line
    what = b'file'

    def __init__(self, ui, expectedcount=-1, sample=closermod.SAMPLE,
                 tracknames=False):
        self.ui = ui
        self.closer = closermod.Closer(
            expectedcount=expectedcount,
            tracknames=tracknames,
            native=settings.native(ui),
            # descriptors opened and not handed over yet: what an interrupt
            # at the wrong moment could leak, closed when the session fails
            owned=set(),
            sample=sample,
            **settings.closer_options(ui)
        )
        self.files = handover.OwnedFiles(self.closer)
        # the files the main thread opens are the session's: core closes
        # in the background only there (None: made on another thread)
        self.thread = (
            threading.get_ident()
            if threading.current_thread() is threading.main_thread()
            else None
        )
        # False once the session ended: a wrapper of the session that
        # another extension's chain still holds then does nothing
        self.running = True

    def usable(self):
        """whether the calling thread may use the session now"""
        return self.running and threading.get_ident() == self.thread

    def finish_closers(self, failing):
        """finish every closer of the session (a stream apply has two)"""
        self.closer.finish(failing)

    def finish(self, failing):
        """the one way to end a session: every close done and every thread
        joined (a close hung on a dead mount is left to its thread after
        an interrupt), then, on failure, close what an interrupt or an
        error kept from the closer.  Raises the first failure."""
        self.running = False
        try:
            self.finish_closers(failing)
        finally:
            if failing:
                self.files.release()

    def run(self, storevfs, wrappers, function, args, kwargs):
        """``function(*args, **kwargs)`` with the session's ``wrappers``
        in place and the session marked as writing into ``storevfs``; the
        session finished whichever way it returns.  A FileError comes out
        as an ``abort:``."""
        failing = True
        try:
            try:
                with seams.attached(storevfs, self), seams.installed(
                    seams.bound(self, wrappers)
                ):
                    try:
                        result = function(*args, **kwargs)
                    finally:
                        self.files.unwrap()
                failing = False
            finally:
                # also when installing the seams was interrupted: a seam
                # left in place (or in another extension's chain) does
                # nothing once the session is not running
                self.finish(failing)
        except closermod.FileError as exc:
            # closed inline, raised on a later submission, or by finish()
            raise self.abort(exc) from exc
        return result

    def describe(self, name):
        """the name of a file in messages"""
        return name

    def abort(self, exc):
        """the error.Abort that stands for a FileError"""
        return messages.file_abort(exc, self.describe(exc.name))

    def debug_summary(self, extra=b''):
        """the --debug line, if the closer started threads"""
        messages.debug_summary(self.ui, self.closer, self.what, extra)
