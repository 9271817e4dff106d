# apply.py - background closing and timing for stream clone consumers
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""The seam between the closer and Mercurial's stream clone consumers
(``streamclone.consumev1``, ``consumev2``, ``consumev3``): each runs inside
an ``ApplySession``, one closer and one set of timings for the whole
apply.  How a file flows through it, the skips that leave files to core,
and the teardown: docs/design.rst.

The session's parts, each in a module of its own:

- opens.py: files opened through ``vfs.__call__`` (stream v1, v3,
  and v2 before Mercurial 7.0);
- v2.py: files ``streamclone._write_files`` is given (stream v2
  from 7.0 on);
- shared/deferredwrite.py: whole files written by writer threads once
  opens wait;
- journal.py: the files registered with the transaction
  (``worker.backgroundclosejournal``), and the take-back of a failed
  apply;
- wrappers.py: what ``vfs.backgroundclosing()`` enters while it runs
  (``SessionCloser``), and the wrappers in place meanwhile.

Here: the session itself, the files left to core while closes are cheap,
and the consumers' wrappers.
"""

import os
import threading

from mercurial.i18n import _
from mercurial import (
    error,
    util,
    vfs as vfsmod,
)
from mercurial.utils import stringutil

from .. import engine
from ..engine import policy as policymod
from ..engine import writepolicy as writepolicymod
from ..shared import (
    compat,
    deferredwrite,
    directories,
    handedfiles,
    messages,
    report as reportmod,
    seams,
    session as sessionmod,
    settings,
)
from . import (
    journal as journalmod,
    malformed,
    opens as streamopen,
    v2 as streamv2,
    wrappers as streamwrappers,
)

# one close of a skip's files in so many is timed (SkipWatch)
_WINDOW_MASK = policymod.SkipWatch.MASK

class ApplySession(sessionmod.Session):
    """one stream apply: its closer, its timings, how to name its files"""

    def __init__(self, repo, fmt, expectedcount=-1, expectedbytes=None):
        ui = repo.ui
        self._repo = repo
        self.format = fmt
        self.expectedcount = expectedcount
        self.expectedbytes = expectedbytes
        # whether each file is opened through the vfs and copied with
        # util.filechunkiter: all but stream v2 from Mercurial 7.0 on,
        # whose files _write_files writes (v2.py)
        self.opens_through_vfs = fmt != b'v2' or not compat.HAS_WRITE_FILES
        self.reportstyle = settings.report(ui)
        # a debugapplystreamclonebundle running: it shows the reports
        self._collector = reportmod.collector(repo)
        # whether to time each open and mkdir, for the report: only if it
        # is shown (they cost every file a little)
        self.timed = (
            self.reportstyle != settings.REPORT_OFF
            or self._collector is not None
        )
        super().__init__(
            ui, expectedcount,
            openseam=(
                streamwrappers.OPEN_SEAM if self.opens_through_vfs else None
            ),
            timeall=self.timed,
        )
        # set once the apply failed: writer threads write nothing more
        self.cancelled = threading.Event()
        # files are named relative to the store, or to .hg for the rest
        self._roots = tuple(
            (os.path.normpath(root) + b'/', prefix)
            for root, prefix in (
                (repo.svfs.join(b''), b''),
                (repo.vfs.join(b''), b'.hg/'),
            )
        )
        self.journal = journalmod.ApplyJournal(
            repo, self.describe, self.cancelled
        )
        # stream v2 from 7.0 on, not journaled: the prepare wrapper has
        # work only while the apply's files are written elsewhere than on
        # the thread that reads the stream (core's writer threads, or the
        # session's once opens wait), so it is put in place only then, not
        # to cost every file a call (journaled, it is in place for the
        # whole apply: see session_seams)
        self._prepareseam = None
        self._parallelwriters = False
        if (
            not self.opens_through_vfs
            and not self.journal.journaled
            and streamv2.PREPARE_SEAM is not None
        ):
            self._prepareseam = seams.installed(
                seams.bound(self, [streamv2.PREPARE_SEAM])
            )
            self._parallelwriters = compat.parallel_stream_v2(ui)
        self.inmakedirs = False  # see streamv2.makedirs()
        # the stream the consumer reads, and how many of its files it
        # began to copy (filechunkiter; stream v2 from 7.0 on, the files
        # write_files was given, those of its skips too)
        self.stream = None
        self.streamfiles = 0
        # the files left to core while closes are cheap: their bytes,
        # whether the file core opened last will be closed through the
        # session (stream v1), whether the file opened last was core's
        self.corebytes = 0
        self._coreclose = False
        self.lastcore = False
        # once the stream is written, what fails is no file of it
        self._streamdone = False
        self.book = engine.StatsBook(
            reportmod.OPERATIONS + reportmod.WRITER_OPERATIONS
        )
        # what the main thread wrote
        self.writes = self.book.mine()['write']
        self.opens = self.book.mine()['open']  # timed for the report
        self.directories = directories.Directories(self.timed)
        # whole files written by writer threads where opens wait: started
        # then.  Opens are sampled whether the report is shown or not: the
        # report times them itself, and the policy's CPU time costs
        # system calls
        self.writepolicy = writepolicymod.WritePolicy(
            settings.writes(ui), sample=engine.SAMPLE
        )
        self.wholefiles = deferredwrite.WriterThreads(
            self.writepolicy, settings.closer_options(ui), self.book,
            self.timed, self.cancelled, self.want_prepare,
        )
        # see hold_limit(): the closer's queue length is fixed
        self.lanehold = (
            handedfiles.hold_limit(self.closer.maxqueue)
            if self.closer.native
            else 0
        )
        self.opener = streamopen.StreamOpener(self)
        self.v2 = streamv2.StreamV2Writer(self)

    def applying_thread(self):
        """the thread that applies the stream, whichever it is: Mercurial
        used as a library may clone on any thread (backgroundclosing())"""
        return threading.get_ident()

    def describe(self, path):
        """the name of a file in messages: store path, or .hg/ path"""
        if not path:
            return b'?'
        path = os.path.normpath(path)
        for root, prefix in self._roots:
            if path.startswith(root):
                return prefix + path[len(root) :]
        return path

    def hold_limit(self):
        """the largest file the lane's thread writes (handedfiles.hold_limit),
        or 0: where the lane takes descriptors (``OwnedFiles.
        takes_descriptors``), and no writer threads hold files' data
        meanwhile (their budget is the memory allowed).  Asked once a
        file: streamv2 reads the same attributes inline."""
        if self.wholefiles.closer is None and self.closer.decisions.background:
            return self.lanehold
        return 0

    # the teardown (Session.finish) ---------------------------------------

    def finish_closers(self, failing):
        """finish the writers' closer, then the session's: both always;
        then raise the first failure or interrupt"""
        if failing:
            self.cancelled.set()  # queued files: nothing more to write
            # writers waiting for a directory made ahead make their own,
            # which an interrupt may have left half-wanted
            self.directories.stop_ahead()
        first = None
        for closer in (self.wholefiles.closer, self.closer):
            if closer is None:
                continue
            try:
                # an interrupt while writers finish: queued files are
                # dropped, not written, and the next closer's wait bounded
                closer.finish(
                    failing,
                    on_interrupt=self.cancelled.set,
                    interrupted=isinstance(
                        first, (KeyboardInterrupt, SystemExit)
                    ),
                )
            except BaseException as exc:
                if first is None:
                    first = exc
        # the directories made ahead, once no writer waits for one
        interrupted = self.directories.finish_ahead(
            interrupted=isinstance(first, (KeyboardInterrupt, SystemExit)))
        if first is None:
            first = interrupted
        if first is not None:
            raise first

    def closers(self):
        return (self.wholefiles.closer, self.closer)

    def closers_finished(self):
        return (super().closers_finished()
                and self.directories.ahead_finished)

    def finish(self, failing):
        try:
            super().finish(failing)
        finally:
            # nothing is registered once the closers are finished (the
            # writers' last files registered); the transaction may outlive
            # the session (an outer one), which must not keep it, nor the
            # stream
            if self.closers_finished():
                self.journal.end()
                self.stream = None

    def take_back(self):
        """after a failure, once the closers are finished: stop core's
        writer threads, close what an interrupt kept from the closer,
        remove what was written (journal.ApplyJournal.undo).  Returns the
        interrupt one of these absorbed, or None."""
        interrupted = self.v2.stop_core_writers()
        self.files.release()
        undone = self.journal.undo()
        return undone if interrupted is None else interrupted

    def finish_on_abort(self, tr):
        """the transaction's abort callback: the teardown, as a failure,
        never raising, so that core's rollback runs and the error that
        made the transaction abort is the one shown.  An interrupt the
        take-back absorbed is dropped (the command fails already); one
        that cut it short is named in a warning."""
        try:
            self.finish(True)
        except BaseException as exc:
            if self.taken_back:
                return
            try:
                self.ui.warn(
                    _(b'warning: taking back the failed stream apply '
                      b'stopped (%s): some of its files are left in the '
                      b'store\n')
                    % (stringutil.forcebytestr(exc)
                       or type(exc).__name__.encode())
                )
            except BaseException:  # a closed stderr, another Ctrl-C
                pass

    def watch_transaction(self):
        """take the apply back if the transaction around it aborts

        The stream may be written without a failure and its transaction
        fail to close afterwards (writing the fncache, say), after the
        consumer returned: the abort callback takes the files back then.
        """
        self.journal.watch(
            self._repo.currenttransaction(), self.finish_on_abort
        )

    def check_complete(self):
        """abort if the files hold fewer or more bytes than the stream
        declared: a stream cut short inside its last file otherwise
        leaves that file short and the apply "succeeds" (core does not
        check for v1; v2 reads what is left without checking)"""
        if self.expectedbytes is None:
            return
        written = self.book.merged()['write'].bytes + self.corebytes
        if written != self.expectedbytes:
            raise malformed.abort(
                _(b'%d bytes of file data, the header declares %d')
                % (written, self.expectedbytes)
            )

    def streamed(self):
        """every file of the stream is written and closed"""
        self._streamdone = True

    # files left to core --------------------------------------------------

    def may_ever_skip(self):
        """whether files may ever be left to core (see leaves_files).
        Never stream v1's where the session opens files itself
        (``StreamOpener._open_direct``): core opens each with
        ``backgroundclose=True``, through its delayclosedfile, and closes
        it through the session's closer (close_core_file), which costs
        more than the session's own path (the section "What a report,
        v1's skips and v2's prepare wrapper cost" of README.rst before
        0.1.0, in git history)."""
        if self.timed or self.closer.decisions.policy != policymod.ADAPTIVE:
            return False
        return self.format != b'v1' or self.files.corecall is None

    def may_skip(self):
        """whether files may be left to core (``leaves_files``), and,
        where they open through the vfs, a skip would end:
        ``filechunkiter``, which counts the files left to core, was seen
        copying one.  Stream v2 from Mercurial 7.0 on writes a skip's
        files itself (StreamV2Writer._write_skip), and needs nothing
        more."""
        if not self.leaves_files():
            return False
        if self.opens_through_vfs:
            return self.streamfiles > 0
        return True

    def watches_skips(self):
        """the closes of a skip's files are the session's to time where it
        writes them (stream v2 from Mercurial 7.0 on) or where core hands
        them back (v1, opened with backgroundclose=True); stream v3 and v2
        before 7.0 close them in core"""
        return not self.opens_through_vfs or self.format == b'v1'

    def leaves_files(self):
        """files are left to core only where the session has nothing else
        to do with them: no report to time them for, no writer threads
        started or about to be, and a closer that measured closes cheap
        (one told to close inline measures nothing)"""
        return self.may_ever_skip() and self.writepolicy.opens_cheap()

    def core_opened(self, chunks, size):
        """core just opened the stream's next file, left to it, and copies
        it from ``chunks`` (util.filechunkiter, ``size`` bytes): one file
        fewer to leave to core, and the last one of a skip ends it.  The
        chunks to copy."""
        # leave_to_core(), inline: this runs for every file left to core
        self.skipping -= 1
        self.skipped += 1
        if not self.skipping:
            self.skip_ends()
        self.lastcore = True
        if self.format == b'v1':
            # opened with backgroundclose=True: its close comes back to
            # the session, which counts its bytes (close_core_file)
            self._coreclose = True
        elif self.expectedbytes is not None:
            if type(size) is int and self.streamfiles < self.expectedcount:
                # a file the stream goes on after holds what it declared
                self.corebytes += size
            else:
                # the stream may end inside its last file, which is then
                # copied short without an error: counted as copied
                return self._counted(chunks)
        return chunks

    def _counted(self, chunks):
        for chunk in chunks:
            self.corebytes += len(chunk)
            yield chunk

    def closes_core_file(self):
        """whether the file core closes now is one left to it"""
        return self._coreclose

    def close_core_file(self, fh, name):
        """close a file left to core, here, counting its bytes; the closer
        measures closes again with the next sample"""
        self._coreclose = False
        # one in a window is timed (SkipWatch); none once the skip ended
        timed = self.skipping and not self.skipping & _WINDOW_MASK
        try:
            nbytes = fh.tell()  # opened empty, written in one pass
            if timed:
                start = util.timer()
            fh.close()
        except Exception as exc:
            raise engine.FileError(name, exc) from exc
        self.corebytes += nbytes
        if timed and self.watch.timed(util.timer() - start):
            # closes are slow now: the next file is the session's
            self.skipping = 0
            self.skip_ends()

    def core_file_abort(self, exc):
        """the abort that names the file core was opening or writing when
        ``exc`` was raised, as the session's own files do; None if ``exc``
        does not come from there, or the file cannot be told.  No wrapper
        saw the file open: an open names its file in the error; a write
        or close is the consumer's, into its open file
        (streamopen.written_by_consumer), once a file left to core was
        copied.  (Stream v2 from Mercurial 7.0 on leaves no file to core:
        its skips' files are written by the session, and name
        themselves.)"""
        if self._streamdone or not (self.leaving or self.lastcore):
            return None
        if not isinstance(exc, OSError) or isinstance(
            exc, error.StdioError  # the terminal or a pipe, not the file
        ):
            return None
        if isinstance(exc.filename, (str, bytes)):
            joined = os.path.normpath(os.fsencode(exc.filename))
            action = 'opening'
        elif exc.filename is None and self.lastcore:
            joined = streamopen.written_by_consumer(exc)
            action = 'writing'
        else:
            return None
        if joined is None or not joined.startswith(
            self.journal.written_roots
        ):
            return None
        return self.abort(engine.FileError(joined, exc, action))

    # the report ----------------------------------------------------------

    def deliver_report(self):
        """build the report, then print it or hand it to a collector"""
        stats = self.book.merged()
        stats['mkdir'].merge(self.directories.stat)
        stats.update(self.closer.stats())
        closer = self.closer
        writers = self.wholefiles.closer
        info = {
            b'policy': closer.decisions.requested.encode('ascii'),
            b'reason': (closer.decisions.reason or '').encode('ascii'),
            b'mode': closer.mode.encode('ascii'),
            b'threads': closer.threadcount,
            b'lowered': closer.lowered,
            b'max-queued': closer.maxqueue,
            b'peak-queued': closer.peakpending,
            b'switches': closer.decisions.switches,
            b'dirs-made': self.directories.created,
            b'dirs-existing': self.directories.existing,
            b'dirs-ahead': self.directories.ahead[0],
            b'dir-threads': self.directories.ahead[1],
            b'writers': writers.threadcount if writers is not None else 0,
            b'written-by-writers': stats['close-written'].count,
            b'peak-held': self.wholefiles.budget.peak,
        }
        result = reportmod.ApplyReport(
            self.format, util.timer() - self.started, stats, info
        )
        messages.summarize_stream(
            self.ui,
            self.format,
            # what the stream declared, now written: files left to core
            # are counted in runs, not one by one
            self.expectedcount if self.expectedcount >= 0 else result.files,
            result.seconds,
            closer,
            stats,
            info[b'writers'],
            self.watch,
            info[b'dir-threads'],
        )
        if self._collector is not None:
            self._collector.append(result)
        elif self.reportstyle != settings.REPORT_OFF:
            reportmod.show_after_apply(self.ui, result, self.reportstyle)

    # wrappers the session puts in place and takes away -------------------

    def wrap(self):
        super().wrap()
        if self._parallelwriters:
            self.want_prepare()

    def unwrap(self):
        try:
            super().unwrap()
        finally:
            if self._prepareseam is not None:
                self._prepareseam.remove()

    def want_prepare(self):
        """stream v2 from 7.0 on: the prepare wrapper in place from now on,
        if it is not (main thread only: it alone wraps and unwraps), and
        never once the session has ended (nothing would take it away)"""
        seam = self._prepareseam
        if seam is not None and self.running and not seam.in_place():
            seam.install()


# wrappers -----------------------------------------------------------------


def consumer(fmt):
    """a wrapper for streamclone.consumevN that runs it in a session"""

    def wrapper(orig, repo, fp, *args, **kwargs):
        if seams.writing(repo.store.rawvfs) is not None:
            return orig(repo, fp, *args, **kwargs)
        # consumev1 and consumev2 are told the file and byte counts; v3 is
        # not
        expectedcount, expectedbytes = -1, None
        if fmt != b'v3' and len(args) >= 2:
            expectedcount, expectedbytes = args[0], args[1]
        # the store's lock from before the snapshot of what exists until
        # after a failed apply is taken back (consumev1 releases its own
        # lock on the way out): no other process writes meanwhile, and
        # nothing another one wrote is taken back
        with repo.lock():
            session = ApplySession(repo, fmt, expectedcount, expectedbytes)
            return _apply(session, orig, repo, fp, args, kwargs)

    return wrapper


def session_seams(session, repo):
    """the wrappers in place while ``session`` applies a stream to
    ``repo``"""
    wrappers = list(streamwrappers.SESSION_SEAMS)
    journaled = session.journal.journaled
    if journaled and not session.opens_through_vfs:
        # stream v2 from 7.0 on: in place for the whole apply, to register
        # each file
        wrappers.append(streamv2.PREPARE_SEAM)
    if session.opens_through_vfs and session.may_ever_skip():
        wrappers.append(streamwrappers.FILECHUNKITER_SEAM)
    if journaled and type(repo.svfs) is not vfsmod.vfs:
        # the store's vfs class, which encodes names (see storeopen)
        wrappers.append(
            (type(repo.svfs), '__call__', streamwrappers.storeopen)
        )
    if (
        session.timed
        and session.format == b'v2'
        and compat.HAS_PREPARE_STREAMED_FILE
    ):
        # core makes the directories of stream v2 files there: time them
        wrappers.append(streamv2.MKDIR_SEAM)
    return wrappers


def _apply(session, orig, repo, fp, args, kwargs):
    """run the consumer in ``session``; take back what it wrote if it
    fails"""
    session.stream = fp
    wrappers = session_seams(session, repo)
    try:
        result = session.run(
            repo.store.rawvfs, wrappers, orig, (repo, fp) + args, kwargs
        )
    except BaseException as exc:
        # the session's teardown ran (run() finished it), and took back
        # what the failed apply wrote
        abort = session.core_file_abort(exc)
        if abort is not None:
            raise abort from exc
        if isinstance(exc, (ValueError, TypeError)):
            # a NUL byte in a name, found by core's own file calls; or
            # damage in the bundle2 container that Mercurial 6.5 chokes on
            # (a negative payload chunk size: TypeError formatting its own
            # message).  --traceback shows the original.
            raise malformed.abort(stringutil.forcebytestr(exc)) from exc
        raise
    session.deliver_report()
    return result
