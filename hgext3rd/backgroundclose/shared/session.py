# session.py - what the three seams share while they write files
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""One closer session: a stream apply, a changegroup step or a working-copy
update writing files.

The three seams (stream/apply.py, changegroup/revlogs.py,
checkout/filecloser.py) differ in
which files they take and how they undo a failure.  What they share is
here, so that each keeps the same rules:

- one closer, made from the ``[worker]`` settings, and the file objects and
  descriptors opened for it and not handed over yet (``files``);
- the thread that writes: the main thread, or no thread at all (core only
  closes in the background on the main thread);
- one way to end, ``finish(failing)``: every close done and every thread
  joined, even if interrupted meanwhile; on failure, then, what an
  interrupt kept from the closer is closed (``take_back``); the first
  failure is raised.  Each step runs once, whoever calls first;
- a failed write or close becomes an ``abort:`` naming the file as the user
  knows it (``describe``);
- the ``--debug`` line, printed only by a closer that started threads,
  and the ``ui.log`` line after every session.
"""

import enum
import threading

from mercurial import util

from .. import engine
from ..engine import policy as policymod
from . import (
    handover,
    messages,
    seams,
    settings,
)


class State(enum.Enum):
    """where a session is in its life (docs/design.rst, "States")"""

    # its wrappers act: files are taken, opened and handed over
    RUNNING = 'running'
    # finish() began: every wrapper leaves the files to core; the closers
    # finish (each closer's own state says whether it did)
    CLOSING = 'closing'
    # the closers finished, nothing failed: nothing left to do
    CLOSED = 'closed'
    # it failed: the closers finished, then what an interrupt kept from
    # them was closed and what the apply wrote removed (take_back())
    TAKEN_BACK = 'taken back'


RUNNING, CLOSING, CLOSED, TAKEN_BACK = State


class Session:
    """the closer of one seam's writes, and how to end it

    While closes are cheap, the session leaves whole runs of files to
    core (``leave_to_core()``), when its ``SkipSchedule`` (engine/policy.py)
    says so and ``may_skip()`` agrees: untouched, or for stream v2 from
    Mercurial 7.0 on, written untimed by the session as core would.

    A session given an ``openseam``, the wrapper its own files open
    through (``vfs.__call__``), puts it in place itself (``wrap()``) and
    takes it away for the length of a skip: the files left to core then
    open through core alone.  The seam's session ends the skip with
    ``skip_ends()``: once it counted them on a call core makes once a
    file, or once it wrote them itself (stream v2 from 7.0 on).  Taking a
    wrapper away rebuilds the chain of any wrapper another extension put
    on top of it since
    (``extensions.unwrapfunction``), twice a skip.
    """

    # names the files in the --debug line, and the session in ui.log
    what = b'file'
    label = b'files'
    # what the ui.log line counts: each file is closed once
    unit = b'files'

    def __init__(self, ui, expectedcount=-1, tracknames=False,
                 openseam=None, timeall=False):
        self.ui = ui
        self.started = util.timer()
        self.closer = engine.Closer(
            expectedcount=expectedcount,
            tracknames=tracknames,
            native=settings.native(ui),
            # descriptors opened and not handed over yet: what an interrupt
            # at the wrong moment could leak, closed when the session fails
            owned=set(),
            sample=engine.SAMPLE,
            timeall=timeall,
            **settings.closer_options(ui)
        )
        self.files = handover.OwnedFiles(self.closer)
        # the thread whose files are the session's (None: none)
        self.thread = self.applying_thread()
        # the one record of where the session is (State); ``running``
        # says whether it is RUNNING, as an attribute of its own for the
        # wrappers that ask for every file (_enter sets both)
        self._enter(RUNNING)
        # files left to core before the next sample, and in all: stream
        # files as core opens or writes them, revlogs as a changegroup
        # reaches them
        self.skipping = 0
        self.skipped = 0
        self.schedule = policymod.SkipSchedule()
        # whether the closes of a skip's files became slow
        self.watch = policymod.SkipWatch(self.closer.decisions.threshold)
        # the open wrapper taken away during skips, and whether it is away
        self._openseam = (
            None if openseam is None
            else seams.installed(seams.bound(self, [openseam]))
        )
        self.leaving = False

    def applying_thread(self):
        """the thread the session writes for, recorded as it is made: the
        main thread, and only if it is made there, since core closes in
        the background only on the main thread (a seam that takes files
        on another thread says so)"""
        if threading.current_thread() is threading.main_thread():
            return threading.get_ident()
        return None

    def usable(self):
        """whether the calling thread may use the session now"""
        return self.running and threading.get_ident() == self.thread

    def closed_one(self):
        """a file of the session was handed to the closer"""
        schedule = self.schedule
        if not schedule.sampled_one():
            return
        self.skipping = schedule.next_skip(
            self.closer.closes_cheap and self.may_skip(),
            self.watches_skips(),
        )
        if self.skipping:
            self.skip_begins()

    def skip_begins(self):
        """the next ``skipping`` files are left to core: the session takes
        away what they do not need"""
        # nothing is opened for the lane while files are left to core:
        # the posixfile wrapper would only cost each of them a call (the
        # next open for the lane, open_through(), puts it back)
        self.files.unwrap_between_opens()
        if self._openseam is not None and not self.leaving:
            self.leaving = True
            self._openseam.remove()

    def skip_ends(self):
        """the next file is the session's again"""
        if self.leaving and self.running:
            self.leaving = False
            self._openseam.install()

    def wrap(self):
        """put in place the wrappers the session takes away and puts back
        by itself (its other wrappers are in place for its whole length)"""
        if self._openseam is not None:
            self._openseam.install()

    def unwrap(self):
        """take away every wrapper ``wrap()`` or a skip put in place"""
        try:
            self.files.unwrap()
        finally:
            if self._openseam is not None:
                self._openseam.remove()

    def may_skip(self):
        """whether the seam may leave files to core while closes are
        cheap"""
        return True

    def watches_skips(self):
        """whether the seam times some of the closes of the files it
        leaves to core (SkipWatch); if not, its skips are short"""
        return False

    def leave_to_core(self):
        """whether to leave the file about to be opened to core"""
        if self.skipping:
            self.skipping -= 1
            self.skipped += 1
            return True
        return False

    def finish_closers(self, failing):
        """finish every closer of the session (a stream apply has two)"""
        self.closer.finish(failing)

    @property
    def taken_back(self):
        """the teardown's second step ran to its end (see finish())"""
        return self.state is TAKEN_BACK

    def _enter(self, state):
        """the session is in ``state`` from now on"""
        self.state = state
        # a wrapper of the session that another extension's chain still
        # holds does nothing once it is not running
        self.running = state is RUNNING

    def finish(self, failing):
        """the session's teardown, the one way to end it: every close done
        and every thread joined (a close hung on a dead mount is left to
        its thread after an interrupt); then, on failure, ``take_back()``.
        Raises the first failure, or an interrupt the take-back absorbed.

        Whichever frame calls first runs it: the seam's closer context as
        it is left, the transaction's abort, and, last, ``run()``, the
        outermost frame, which finds it done and returns.  A step an
        interrupt cut short leaves the state where it was, and the next
        call does that step again (docs/design.rst, "States")."""
        if self.state is RUNNING:
            self._enter(CLOSING)
        try:
            if not self.closers_finished():
                self.finish_closers(failing)
        finally:
            if failing and self.state is not TAKEN_BACK:
                interrupted = self.take_back()
                self._enter(TAKEN_BACK)
                if interrupted is not None:
                    # raised in place of a closer's failure, if any (its
                    # context): the user asked the command to stop
                    raise interrupted
        if self.state is CLOSING:
            self._enter(CLOSED)

    def closers(self):
        """the session's closers, once made"""
        return (self.closer,)

    def closers_finished(self):
        """whether every closer of the session is finished (its threads
        joined): the teardown's first step is done"""
        return all(
            closer.finished for closer in self.closers() if closer is not None
        )

    def take_back(self):
        """after a failure, once every close handed over is done: close
        what an interrupt or an error kept from the closer.  Returns an
        interrupt it absorbed to finish, or None."""
        self.files.release()
        return None

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
                        self.wrap()
                        result = function(*args, **kwargs)
                    finally:
                        self.unwrap()
                failing = False
            finally:
                # also when installing the seams was interrupted: a seam
                # left in place (or in another extension's chain) does
                # nothing once the session is not running
                try:
                    self.finish(failing)
                finally:
                    # again, should an interrupt have cut the first short
                    self.unwrap()
        except engine.FileError as exc:
            # closed inline, raised on a later submission, or by finish()
            raise self.abort(exc) from exc
        return result

    def describe(self, name):
        """the name of a file in messages"""
        return name

    def abort(self, exc):
        """the error.Abort that stands for a FileError"""
        return messages.file_abort(exc, self.describe(exc.name))

    def summarize(self, extra=b''):
        """once the closer is done: the --debug line, if it started
        threads, and the ``ui.log`` line"""
        messages.summarize(
            self.ui, self.closer, self.what, self.label, self.unit,
            util.timer() - self.started, extra,
        )
