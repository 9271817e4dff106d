# streamapply.py - background closing and timing for stream clone consumers
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""The seams between the closer and Mercurial's stream clone code.

A stream apply (``streamclone.consumev1``, ``consumev2``, ``consumev3``) runs
inside an ``ApplySession``: one closer and one set of timings for the whole
apply.  The session reaches the places where files are written through
small wrappers, all of which do nothing when no session is active:

- ``vfs.backgroundfilecloser``: what ``vfs.backgroundclosing()`` enters.  In
  a session it is the session's closer, so that leaving the context still
  means "every file is closed" before the transaction ends, as in core.
- ``vfs.__call__``: files opened for writing inside ``backgroundclosing()``
  (stream v1; v3; v2 before Mercurial 7.0) come back as the session's own
  files, whose writes are counted (timed for a report) and whose close goes
  to the session's closer (handover.py).  Where the C module is built they
  are written straight into their descriptors, which the lane closes, and
  the session opens them itself as core's ``vfs.__call__`` would
  (``_open_direct``): core's path audit, the name the vfs joins (store
  encoding is done above, by the store's vfs), the file there unlinked
  first, core's file mode.  Elsewhere, or for an open with other
  arguments, opening is core's own.
- ``util.filechunkiter``: how those consumers copy each file, right after
  opening it; where the files left to core are counted (below).
- ``streamclone._write_files`` (Mercurial 7.0 and later, stream v2): the
  paths it receives were prepared and audited by the store's vfs
  (``prepare_streamed_file``); the replacement writes them like core does
  and hands the descriptors to the closer.

While closes and opens are measured cheap, with no report to time files
for, the session leaves most files to core and takes only a sample
through its own path (session.py).  Files opened through the vfs are
then opened and written by core alone (and closed, but for stream v1's,
whose closes come back to the session): the ``vfs.__call__`` wrapper is
taken away for the length of a skip.  Each consumer copies a
file with ``util.filechunkiter(stream, limit=size)`` right after opening
it, which the session wraps for the whole apply where it may skip: there
it counts the files left to core and ends the skip (``core_opened``).
Stream v1 skips only where the session cannot open its files itself
(``may_ever_skip``): core's path for a v1 file, opened with
``backgroundclose=True``, costs more than the session's own.  Their bytes
are counted for the check against the stream's declared total: stream v1
hands their closes back to the session, which counts them there; stream v2
declares each file's size as it asks ``filechunkiter`` for that many bytes
(the last file's chunks are counted as they are copied: the stream may end
inside it).

Stream v2 from 7.0 on hands a skip's files to core's own ``_write_files``,
which takes them one at a time from the same iterator
(``_leave_to_core``), so core prepares and writes them alone: the
``prepare_streamed_file`` wrapper is only in place once files are written
off the reading thread (``want_prepare``), and skips end before that.
Their bytes are what core's own report (``V2Report``, seen by the
``_v2_parse_files`` wrapper) counted meanwhile.  Journaled, the session
writes a skip's files itself as core would (``_write_as_core``), to
register each once it opened it, and its ``prepare_streamed_file``
wrapper is in place for the whole apply.

Parent directories of the files opened through the vfs are made by the
session, each once (directories.py), which spares core's repeated attempts
and gives the report's mkdir row.  Stream v2 from 7.0 on makes each
directory once already (``prepare_streamed_file``): there ``util.makedirs``
is timed, while the report is shown.

With ``worker.backgroundclosejournal``, each store file the stream writes
is registered with the apply's transaction once it is open and before a
byte is written, at offset 0 (``ApplySession.register``): the
transaction's abort removes it, and so does ``hg recover`` after a killed
apply, and ``hg rollback`` right after one.  It is off by default: core's
journal entry costs every file some microseconds.  The store's vfs class
is wrapped for this (``storeopen``): it is where a file still has its name
in the store, which the transaction needs.  A failed apply still takes
back what it wrote itself first (``undo``).
"""

import contextlib
import errno
import itertools
import os
import threading
import time

from mercurial.i18n import _
from mercurial import (
    error,
    streamclone,
    util,
    vfs as vfsmod,
)
from mercurial.utils import stringutil

from . import (
    compat,
    deferredwrite,
    directories,
    engine,
    handover,
    malformed,
    report as reportmod,
    seams,
    session as sessionmod,
    settings,
    takeback as takebackmod,
)
from .engine import policy as policymod

# CPU time of the calling thread: an open that burns it is no wait
_thread_time = time.thread_time
_blocked = engine.slept

_OPEN_FLAGS = os.O_WRONLY | os.O_CREAT | getattr(os, 'O_BINARY', 0)

# errors a write into a file a consumer of core's opened may raise without
# a file name (core's v2 writer from 7.0 on only writes: any errno there)
_WRITE_ERRNOS = frozenset(
    getattr(errno, name)
    for name in ('ENOSPC', 'EDQUOT', 'EFBIG', 'EIO')
    if hasattr(errno, name)
)


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
        # whose files _write_files writes (the session wraps it)
        self.opens_through_vfs = fmt != b'v2' or not compat.HAS_WRITE_FILES
        # whether to register the files with the transaction, and the
        # transaction they are registered with (see register())
        self.journaled = settings.journal(ui)
        self._tr = None
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
            openseam=_OPEN_SEAM if self.opens_through_vfs else None,
            timeall=self.timed,
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
            and not self.journaled
            and _PREPARE_SEAM is not None
        ):
            self._prepareseam = seams.installed(
                seams.bound(self, [_PREPARE_SEAM])
            )
            self._parallelwriters = compat.parallel_stream_v2(ui)
        # the last file write_files began to open, or core's writer was at
        # when it failed (a lost descriptor is found by its name)
        self._opening = None
        self.inmakedirs = False  # see makedirs()
        # stream v2 from 7.0 on: whether core's writer threads write the
        # files (worker.parallel-stream-bundle-processing), not the thread
        # that reads the stream
        self.writes_elsewhere = False
        # the stream the consumer reads, and how many of its files it
        # began to copy (filechunkiter; stream v2 from 7.0 on, the files
        # write_files was given, those it handed to core's writer too)
        self.stream = None
        self.streamfiles = 0
        # the files left to core while closes are cheap: their bytes,
        # whether the file core opened last will be closed through the
        # session (stream v1), whether the file opened last was core's
        self._corebytes = 0
        self._coreclose = False
        self._lastcore = False
        # once the stream is written, what fails is no file of it
        self._streamdone = False
        # stream v2 from Mercurial 7.0 on: where core counts the bytes of
        # every file it reads (its V2Report), the bytes of the files left
        # to its _write_files
        self.corereport = None
        self._skipbytes = 0  # its count when the current skip began
        # whole files written by writer threads where opens wait
        # (deferredwrite.py): their closer, once started.  Opens are
        # sampled whether the report is shown or not: the report times
        # them itself (_open_through), and the policy's CPU time costs
        # system calls
        self.writepolicy = policymod.WritePolicy(
            settings.writes(ui), sample=engine.SAMPLE
        )
        self.writers = None
        self._writeroptions = settings.closer_options(ui)
        self.budget = deferredwrite.WriteBudget()
        self.cancelled = threading.Event()
        # core's writer threads inside write_files() now (stream v2 from
        # 7.0 on, worker.parallel-stream-bundle-processing)
        self._corewriting = 0
        self._corewriters = threading.Condition()
        self._writersleft = False  # some outlasted the take-back's wait
        # stream v2 on 7.x, writers running: path -> the directory its
        # writer makes (see stream_directory)
        self._streamdirs = {}
        self.book = engine.StatsBook(
            reportmod.OPERATIONS + reportmod.WRITER_OPERATIONS
        )
        # what the main thread wrote
        self.writes = self.book.mine()['write']
        self.opens = self.book.mine()['open']  # timed for the report
        self.directories = directories.Directories(self.timed)
        # see _hold_limit(): the closer's queue length is fixed
        self._decisions = self.closer.decisions
        self._lanehold = (
            handover.hold_limit(self.closer.maxqueue)
            if self.closer.native
            else 0
        )
        # what the stream may write into, as it was, and how to remove
        # what it wrote
        self._takeback = takebackmod.TakeBack(
            ui,
            (
                os.path.normpath(repo.svfs.join(b'')),
                os.path.normpath(repo.cachevfs.join(b'')),
            ),
            self.describe,
        )
        # where the stream writes: an error there is of one of its files
        self._written_roots = tuple(
            root + b'/' for root in self._takeback.before
        )
        # files are named relative to the store, or to .hg for the rest
        self._roots = tuple(
            (os.path.normpath(root) + b'/', prefix)
            for root, prefix in (
                (repo.svfs.join(b''), b''),
                (repo.vfs.join(b''), b'.hg/'),
            )
        )
        self._svfs = repo.svfs
        self._registering = threading.Lock()
        # stream v2 from Mercurial 7.0 on: path -> (store vfs, name) of each
        # file prepared, until it is opened (and registered)
        self._streamnames = {}
        self.start = util.timer()

    def applying_thread(self):
        """the thread that applies the stream, whichever it is: Mercurial
        used as a library may clone on any thread (backgroundclosing())"""
        return threading.get_ident()

    def check_name(self, vfs, path):
        """before ``path`` of ``vfs`` is opened: refuse a store file name
        that registering it would turn against the transaction.  A newline
        or a NUL byte would corrupt the journal, a line per file; the lock
        and the transaction's own files at the store's root would be
        written over (no stream of Mercurial's holds them)."""
        if vfs is not self._svfs or not self.journaled:
            return
        if b'\n' in path or b'\0' in path:
            what = _(b'a file name holds a newline or a NUL byte')
        elif b'/' not in path and (
            path == b'lock' or path.startswith((b'journal', b'undo'))
        ):
            what = _(b"the transaction's own file")
        else:
            return
        raise malformed.abort(b'%s: %s' % (what, stringutil.escapestr(path)))

    def register(self, vfs, path):
        """``path`` of ``vfs`` is open for writing, as a regular file, and
        holds nothing of the stream yet: register it with the transaction,
        so that its abort removes it, as does ``hg recover`` after the
        process was killed.  Any thread may call it.

        Store files only, at offset 0, by their name in the store: the
        transaction opens them through the store's vfs, which encodes it.
        Registered once open, never before: a name the open refused (a
        directory in its place, a file in place of a parent, a path core's
        audit rejects) would make core's rollback fail for good.  Its name
        was checked before the open (check_name).  Once the apply failed
        nothing more is registered: a writer thread that was left to a
        hung open reaches here after the transaction ended, and removes its
        file itself.  Raises FileError if the journal cannot take it.
        """
        tr = self._tr
        if tr is None or vfs is not self._svfs or self.cancelled.is_set():
            return
        try:
            with self._registering:
                tr.add(path, 0)
        except OSError as exc:
            raise engine.FileError(vfs.join(path), exc, 'opening') from exc

    def prepared(self, vfs, path, real):
        """stream v2 from Mercurial 7.0 on: ``path`` of ``vfs`` will be
        written at ``real`` (by write_files): registered once opened"""
        if vfs is self._svfs and self.journaled:
            self._streamnames[real] = (vfs, path)

    def register_opened(self, fp, vfs, path):
        """register ``fp``, just opened for ``path`` of ``vfs``; close it if
        that fails.  A deferred file is registered by whoever opens it."""
        if isinstance(fp, deferredwrite.DeferredFile):
            fp.storename = (vfs, path)
            return
        try:
            self.register(vfs, path)
        except BaseException as exc:
            # the failing path's close: nothing handed over as written
            fp.__exit__(type(exc), exc, exc.__traceback__)
            raise

    def finish(self, failing):
        # nothing is registered once the apply is over; the transaction
        # may outlive the session (an outer one), which must not keep it,
        # nor the stream
        self._tr = None
        self.stream = None
        super().finish(failing)

    def take_back(self):
        """after a failure, once the closers are finished: stop core's
        writer threads, close what an interrupt kept from the closer,
        remove what was written"""
        interrupted = self._stop_core_writers()
        self.release_descriptors()
        undone = self.undo()
        if interrupted is None:
            interrupted = undone
        if interrupted is not None:
            raise interrupted

    def _stop_core_writers(self):
        """tell core's writer threads to write nothing more, and wait until
        each has left write_files(), at most the closer's grace period (a
        write that hangs on a dead mount keeps only its own thread and
        descriptor).  An interrupt meanwhile ends the wait and is returned,
        for the caller to raise once the take-back is done."""
        try:
            self.cancelled.set()
            if self._writersleft:
                return None  # waited for once already
            deadline = time.monotonic() + engine.Closer.GRACE
            with self._corewriters:
                while self._corewriting:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        # left to their writes: a take-back again (the
                        # transaction's abort) does not wait again
                        self._writersleft = True
                        break
                    self._corewriters.wait(min(left, 0.1))
        except (KeyboardInterrupt, SystemExit) as exc:
            return exc
        return None

    def release_descriptors(self):
        """close what write_files (or core's writer, given a skip) opened
        and an interrupt kept from the closer"""
        self.files.release()
        opening, self._opening = self._opening, None
        if opening is not None and not self.closer.abandoned:
            # a signal raised as os.open() returns loses the new descriptor
            # (CPython runs handlers right after a call): find it by name
            for fd in _descriptors_of(opening):
                engine.close_quietly(fd)

    def describe(self, path):
        """the name of a file in messages: store path, or .hg/ path"""
        if not path:
            return b'?'
        path = os.path.normpath(path)
        for root, prefix in self._roots:
            if path.startswith(root):
                return prefix + path[len(root) :]
        return path

    def undo(self):
        """remove what this apply wrote; call once every file is closed

        The transaction removes the store files registered with it
        (register()), but not the directories that held them nor the cache
        files, and on a full disk it cannot run at all: it needs some space
        to flush its journal.  So this runs first, while the store's lock
        and the transaction are still held: only entries that did not exist
        when the apply began are removed, and only below the store and the
        cache directory; the lock and the journal files are left to their
        owners.  The transaction's abort then finds its files gone.

        A take-back cut short would leave part of the apply behind: one
        interrupt while it runs (a second Ctrl-C) is absorbed and the walk
        done again whole, and returned for the caller to raise (None if
        none came).  Another one goes through, so that a take-back hung
        on a dead mount can still be left.

        A file the system refuses to remove (a read-only directory, a
        read-only or stale network mount) is left, and named in one
        warning; the others are removed all the same.  The changelog goes
        first: whatever is left after it reads as an empty repository with
        stray files, never as revisions whose files are missing.
        """
        return self._takeback.undo()

    def undo_on_abort(self, tr):
        """the transaction's abort callback: undo(), never raising, so that
        core's rollback runs and the error that made the transaction
        abort is the one shown.  An interrupt undo() absorbed is dropped
        (the command fails already), and so is a second one, with a
        warning that the take-back stopped."""
        try:
            self.undo()
        except BaseException as exc:
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
        tr = self._repo.currenttransaction()
        if tr is not None:
            if self.journaled:
                self._tr = tr
                compat.remove_new_files_on_abort(tr)
            # one callback per category: registering again replaces it.
            # Raised from here, anything would keep the transaction from
            # rolling back and removing its journal (undo_on_abort)
            tr.addabort(b'backgroundclose-undo', self.undo_on_abort)

    def check_complete(self):
        """abort if the files hold fewer or more bytes than the stream
        declared: a stream cut short inside its last file otherwise
        leaves that file short and the apply "succeeds" (core does not
        check for v1; v2 reads what is left without checking)"""
        if self.expectedbytes is None:
            return
        written = self.book.merged()['write'].bytes + self._corebytes
        if written != self.expectedbytes:
            raise malformed.abort(
                _(b'%d bytes of file data, the header declares %d')
                % (written, self.expectedbytes)
            )

    def may_ever_skip(self):
        """whether files may ever be left to core (see _leaves_files).
        Never stream v1's where the session opens files itself
        (``_open_direct``): core opens each with ``backgroundclose=True``,
        through its delayclosedfile, and closes it through the session's
        closer (close_core_file), which costs more than the session's own
        path (README, "What a report, v1's skips and v2's prepare wrapper
        cost")."""
        if self.timed or self.closer.decisions.policy != policymod.ADAPTIVE:
            return False
        return self.format != b'v1' or self.files.corecall is None

    def may_skip(self):
        """whether files may be left to core (``_leaves_files``), and:

        - where they open through the vfs, a skip would end:
          ``filechunkiter``, which counts the files left to core, was seen
          copying one;
        - for stream v2 from Mercurial 7.0 on, where a skip is handed to
          core's writer: core counts their bytes (its report) and the
          stream declared how many files it has.  Journaled, the session
          writes a skip's files itself (_write_as_core), to register each
          once it opened it, and needs neither."""
        if not self._leaves_files():
            return False
        if self.opens_through_vfs:
            return self.streamfiles > 0
        return self.journaled or (
            self.corereport is not None and self.expectedcount >= 0
        )

    def _leaves_files(self):
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
        self._lastcore = True
        if self.format == b'v1':
            # opened with backgroundclose=True: its close comes back to
            # the session, which counts its bytes (close_core_file)
            self._coreclose = True
        elif self.expectedbytes is not None:
            if type(size) is int and self.streamfiles < self.expectedcount:
                # a file the stream goes on after holds what it declared
                self._corebytes += size
            else:
                # the stream may end inside its last file, which is then
                # copied short without an error: counted as copied
                return self._counted(chunks)
        return chunks

    def _counted(self, chunks):
        for chunk in chunks:
            self._corebytes += len(chunk)
            yield chunk

    def skip_begins(self):
        """stream v2 from Mercurial 7.0 on: core's count of the bytes read
        before the skip's first file is read (its header, and a small
        file's data, are read before write_files sees it)"""
        super().skip_begins()
        if self.corereport is not None:
            self._skipbytes = self.corereport.byte_count

    def closes_core_file(self):
        """whether the file core closes now is one left to it"""
        return self._coreclose

    def close_core_file(self, fh, name):
        """close a file left to core, here, counting its bytes; the closer
        measures closes again with the next sample"""
        self._coreclose = False
        try:
            nbytes = fh.tell()  # opened empty, written in one pass
            fh.close()
        except Exception as exc:
            raise engine.FileError(name, exc) from exc
        self._corebytes += nbytes

    def streamed(self):
        """every file of the stream is written and closed"""
        self._streamdone = True

    def core_file_abort(self, exc):
        """the abort that names the file core was opening or writing when
        ``exc`` was raised, as the session's own files do; None if ``exc``
        does not come from there, or the file cannot be told.  No wrapper
        saw the file open: an open names its file in the error; a write
        (or close) is the consumer's, into its open file, or core's
        _write_files' (_written_by_consumer), once a file left to core
        was copied.  (A read of the stream that
        fails in C right in the consumer, as readline() of a local
        packed1 bundle, looks the same: the file left to core before it
        is named.)"""
        if self._streamdone or not (self.leaving or self._lastcore):
            return None
        if not isinstance(exc, OSError) or isinstance(
            exc, error.StdioError  # the terminal or a pipe, not the file
        ):
            return None
        if isinstance(exc.filename, (str, bytes)):
            joined = os.path.normpath(os.fsencode(exc.filename))
            action = 'opening'
        elif exc.filename is None and self._lastcore:
            joined = _written_by_consumer(exc)
            action = 'writing'
        else:
            return None
        if joined is None or not joined.startswith(self._written_roots):
            return None
        return self.abort(engine.FileError(joined, exc, action))

    def deliver_report(self):
        """build the report, then print it or hand it to a collector"""
        stats = self.book.merged()
        stats['mkdir'].merge(self.directories.stat)
        stats.update(self.closer.stats())
        closer = self.closer
        writers = self.writers
        info = {
            b'policy': closer.decisions.requested.encode('ascii'),
            b'reason': (closer.decisions.reason or '').encode('ascii'),
            b'mode': closer.mode.encode('ascii'),
            b'threads': closer.threadcount,
            b'maxqueue': closer.maxqueue,
            b'peakqueued': closer.peakpending,
            b'switches': closer.decisions.switches,
            b'dirs-created': self.directories.created,
            b'dirs-existing': self.directories.existing,
            b'writers': writers.threadcount if writers is not None else 0,
            b'written-by-writers': stats['close-written'].count,
            b'peak-held': self.budget.peak,
        }
        result = reportmod.ApplyReport(
            self.format, util.timer() - self.start, stats, info
        )
        if self._collector is not None:
            self._collector.append(result)
        elif self.reportstyle != settings.REPORT_OFF:
            reportmod.show(self.ui, [result], self.reportstyle)

    def open(self, orig, vfs, path, mode, kwargs):
        """open a file the stream writes, through ``vfs`` (core's open,
        ``orig``): the session's file (``_open_here``), or, once writer
        threads write whole files, a DeferredFile"""
        writepolicy = self.writepolicy
        if writepolicy.deferring:
            return self._defer(orig, vfs, path, mode, kwargs)
        timing = writepolicy.time_next()
        if timing is None:
            return self._open_here(orig, vfs, path, mode, kwargs)
        cpustart = blockstart = None
        if timing == 'cpu':
            cpustart, blockstart = _thread_time(), _blocked()
        start = util.timer()
        fp = self._open_here(orig, vfs, path, mode, kwargs)
        wall = util.timer() - start
        cpu = blocked = None
        if cpustart is not None:
            cpu = _thread_time() - cpustart
            blocked = _blocked(blockstart)
        if writepolicy.learn(wall, cpu, blocked):
            self._start_writers()
        return fp

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

    def _start_writers(self):
        """opens wait: whole files go to writer threads from now on"""
        options = dict(self._writeroptions)
        options.update(policy=engine.BACKGROUND, minfilecount=0)
        self.writers = engine.Closer(
            expectedcount=-1, native=False, **options
        )
        self.writers.start()
        if not self.writers.decisions.background:
            # no thread could be started: write here, as before, for good
            self.writepolicy.deferring = False
            self.writepolicy.mode = policymod.INLINE
            return
        # their directories are told apart as core prepares each file
        self.want_prepare()

    def _defer(self, orig, vfs, path, mode, kwargs):
        """a DeferredFile for ``path``, audited here and written whole by
        a writer thread once core closes it"""
        if self.writers is None:  # forced on (worker.backgroundclosewrites)
            self._start_writers()
            if not self.writepolicy.deferring:
                return self._open_here(orig, vfs, path, mode, kwargs)
        # a writer's failure stops the apply at the next file
        self.writers.raise_failure()
        if kwargs.get('auditpath', True):
            compat.audit(vfs, path, mode)
        name = vfs.join(path)
        deferred = deferredwrite.DeferredFile(self, name, self.budget)
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
            self.register_opened(fp, *storename)
        return fp

    def write_later(self, deferred, chunks, size):
        """hand a deferred file, whole, to the writer threads"""
        orig, vfs, path, mode, kwargs = deferred.where
        dirname = path.rpartition(b'/')[0]
        directories = self.directories
        root = vfs.base
        createmode = vfs.createmode
        notindexed = kwargs.get('notindexed', False)
        openkwargs = dict(kwargs, auditpath=False, makeparentdirs=False)

        def prepare():
            if not directories.known(root, dirname):
                directories.prepare(root, dirname, createmode, notindexed)

        storename = getattr(deferred, 'storename', None)

        def opener():
            fp = orig(vfs, path, mode, **openkwargs)
            if storename is not None:
                self.register_opened(fp, *storename)
            return fp

        write = deferredwrite.FileWrite(
            deferred.name, prepare, opener, chunks, size, self.budget,
            self.book, self.cancelled, self.timed,
        )
        self.writers.close(write, deferred.name)

    def finish_closers(self, failing):
        """finish the writers' closer, then the session's: both always;
        then raise the first failure or interrupt"""
        if failing:
            self.cancelled.set()  # queued files: nothing more to write
        first = None
        for closer in (self.writers, self.closer):
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
        if first is not None:
            raise first

    def _open_here(self, orig, vfs, path, mode, kwargs):
        """open a file the stream writes on this thread, its writes
        counted: a DescriptorFile where the C module is built (opened by
        ``_open_direct`` unless the open has other arguments), else a
        HandedOverFile over core's file (handover.py); the latter too for
        a sample while files are left to core (``_leaves_opens``) if the
        open has other arguments

        Its parent directories are made here (directories.py), each once:
        core's open is told not to."""
        if (
            not kwargs
            and orig is self.files.corecall
            and type(vfs) is vfsmod.vfs
            and path[:1] != b'/'
        ):
            return self._open_direct(vfs, path, mode)
        directories = self.directories
        dirname = path.rpartition(b'/')[0]
        ours = 'makeparentdirs' not in kwargs
        if ours:
            kwargs['makeparentdirs'] = False
            if not directories.known(vfs.base, dirname):
                self._make_parents(vfs, path, mode, dirname, kwargs)
        files = self.files
        while True:
            try:
                if (
                    self.timed
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
                    fd, writestat = None, self.writes
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
        self._lastcore = False
        if type(fp) is handover.DescriptorFile:
            return fp  # counts its writes, hands itself over
        name = getattr(fp, 'name', None)  # what the vfs opened
        if type(name) is not bytes:
            name = vfs.join(path)
        return handover.HandedOverFile(
            fp, self.closer, name, fd, files, writestat,
            onclose=self.closed_one, timed=self.timed,
        )

    def _open_direct(self, vfs, path, mode):
        """open a file the stream writes as a DescriptorFile, where the C
        module is built, doing what core's ``vfs.__call__`` does for a
        file opened ``'w'`` with no other argument: core's audit of the
        path, its parents made (directories.py), any file already there
        unlinked (a hardlink or symlink is replaced, never written
        through), the file created, then core's ``_fixfilemode``.  The
        name is the vfs's own join.  Core's open itself, with a
        ``util.posixfile`` wrapper to take its descriptor, cost 8 us a
        file more (README, "The stream's own opens").  Only for a name
        relative to the vfs, and where no other extension wraps core's
        open (``OwnedFiles.corecall``)."""
        compat.audit(vfs, path, mode)
        directories = self.directories
        base = vfs.base
        dirname = path.rpartition(b'/')[0]
        if not directories.known(base, dirname):
            directories.prepare(base, dirname, vfs.createmode)
        files = self.files
        name = files.join(vfs, path)
        start = engine.stat_clock() if self.timed else None
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
            self.opens.since(start)
        self._lastcore = False
        return fp

    def _leaves_opens(self):
        """whether files may be left to core while posixfile is not
        wrapped: a DescriptorFile costs less than core's file, but would
        wrap posixfile until files are left to core again (Session.
        closed_one removes it then), one wrapping more each sample"""
        return not self.files.wraps_posixfile() and self._leaves_files()

    def _make_parents(self, vfs, path, mode, dirname, kwargs):
        if kwargs.get('auditpath', True):
            # core's audit of the path, before anything is made for it;
            # core's open is then told not to do it a second time
            compat.audit(vfs, path, mode)
            kwargs['auditpath'] = False
        self.directories.prepare(
            vfs.base, dirname, vfs.createmode, kwargs.get('notindexed', False)
        )

    def _open_through(self, orig, vfs, path, mode, kwargs):
        """open a DescriptorFile (where the C module is built), timed for
        the report (if shown): the file, its descriptor (None if core
        opened the file itself), the table its writes go to"""
        # the session opens on the main thread only: its tables are
        # self.writes and the one it belongs to
        start = engine.stat_clock() if self.timed else None
        fp, fd = self.files.open_through(
            orig, vfs, path, mode, kwargs, direct=self._descriptor_file
        )
        if start is not None:
            self.opens.since(start)
        return fp, fd, self.writes

    def _descriptor_file(self, fd, name):
        """the file a vfs opens for the lane (handover.DescriptorFile); a
        small one is written by the lane's thread while the lane takes
        descriptors (nothing reads a stream's files before its closes
        are done)"""
        return handover.DescriptorFile(
            fd, name, self.closer, self.files, self.writes,
            onclose=self.closed_one, timed=self.timed,
            hold=self._hold_limit(),
        )

    def _hold_limit(self):
        """the largest file the lane's thread writes (handover.hold_limit),
        or 0: where the lane takes descriptors (``OwnedFiles.
        takes_descriptors``), and no writer threads hold files' data
        meanwhile (their budget is the memory allowed).  Asked once a
        file: write_files reads the same two attributes inline."""
        if self.writers is None and self._decisions.background:
            return self._lanehold
        return 0

    def stream_directory(self, vfs, path, known_directories):
        """stream v2 from Mercurial 7.0 on, writers running: the parent
        directory of ``path`` is made by whoever writes the file (a writer
        thread), not by core on the reading thread.  Core is told it is
        known; the file's writer is told what to make."""
        if not self.writepolicy.deferring or self.writers is None:
            return
        real = vfs.join(path)
        # recorded for every file: the writers of two files of one new
        # directory may run in either order (one made by core before the
        # writers started costs a mkdir that finds it)
        dirname = os.path.normpath(os.path.dirname(real))
        base = os.path.normpath(compat.vfs_base(vfs))
        if not dirname.startswith(base + b'/'):
            return  # not below the vfs's base: left to core
        # core's own spelling of it, which it looks up
        known_directories.add(os.path.dirname(real))
        self._streamdirs[real] = (
            base,
            dirname[len(base) + 1 :],
            vfs.createmode,
            True,  # core's notindexed on this path
        )

    def _open_streamed(self, path, mode, holdmost, owned=None):
        """open a stream v2 file as core's _write_files does (Mercurial
        7.0 on), into the owned set: (fd, the largest first chunk it may
        hold for the lane).  One that may hold its bytes is created, not
        opened: one there already (this stream wrote it before) is opened
        once every file handed over so far is written and closed, and
        holds nothing, so that its bytes land in core's order."""
        mode = 0o777 if mode is None else mode  # os.open's default
        closer = self.closer
        if owned is None:
            owned = closer.owned
        openowned = engine.open_owned  # not closer's: a call fewer
        try:
            if holdmost:
                try:
                    flags = _OPEN_FLAGS | os.O_EXCL
                    return openowned(path, flags, owned, mode), holdmost
                except FileExistsError:
                    closer.wait()
            return openowned(path, _OPEN_FLAGS, owned, mode), 0
        except (OSError, ValueError) as exc:  # ValueError: NUL byte
            raise engine.FileError(path, exc, 'opening') from exc

    def _write_streamed_later(self, path, mode, data, directory):
        """hand a stream v2 file (Mercurial 7.0 on) to the writers: None,
        or, if its data does not fit the budget, what is left to write
        here (the data read so far first)"""
        if self.writers is None:  # forced on (worker.backgroundclosewrites)
            self._start_writers()
            if not self.writepolicy.deferring:
                return data
        self.writers.raise_failure()
        budget = self.budget
        chunks = []
        size = 0
        for chunk in data:
            if type(chunk) is not bytes:
                chunk = bytes(chunk)  # core's buffer may be reused
            if not budget.take(len(chunk)):
                budget.give(size)
                chunks.append(chunk)
                return itertools.chain(chunks, data)
            chunks.append(chunk)
            size += len(chunk)
        directories = self.directories
        storename = self._streamnames.pop(path, None)

        def prepare():
            if directory is not None:
                directories.prepare(*directory)

        def opener():
            fd = os.open(path, _OPEN_FLAGS, 0o777 if mode is None else mode)
            try:
                fp = os.fdopen(fd, 'wb')
            except BaseException:
                os.close(fd)
                raise
            if storename is not None:
                self.register_opened(fp, *storename)
            return fp

        write = deferredwrite.FileWrite(
            path, prepare, opener, chunks, size, budget, self.book,
            self.cancelled, self.timed,
        )
        self.writers.close(write, path)
        return None

    def write_files(self, writefiles, info):
        """write stream v2 files from (path, mode, chunks) like core's
        _write_files, handing each descriptor to the closer; on the
        applying thread, while files are left to core, with ``writefiles``
        (core's _write_files: see _leave_to_core), or journaled, as core
        would (_write_as_core).

        On one of core's writer threads (worker.parallel-stream-bundle-
        processing) the descriptors it opened and has not handed over are
        its own, never in the session's owned set: no signal reaches a
        thread other than the main one, so its hand-overs cannot be cut
        short, and the take-back after a failure, which waits for these
        threads to leave (take_back), closes only what the applying thread
        owns.  A writer closes its own as it leaves."""
        if threading.get_ident() == self.thread:
            return self._write_streamed(writefiles, info, None)
        mine = set()
        with self._corewriters:
            self._corewriting += 1
        try:
            self.writes_elsewhere = True
            return self._write_streamed(writefiles, info, mine)
        finally:
            for fd in mine:
                engine.close_quietly(fd)
            with self._corewriters:
                self._corewriting -= 1
                self._corewriters.notify_all()

    def _write_streamed(self, writefiles, info, mine):
        """write_files() on the applying thread (``mine`` None), or on one
        of core's writer threads, whose descriptors not handed over yet are
        in ``mine``"""
        table = self.book.mine()
        openstat = table['open']
        writestat = table['write']
        closer = self.closer
        # the report's and the write policy's: the one OpStat.since reads
        clock = engine.stat_clock
        timed = self.timed
        write = engine.write_all
        # a writer thread of a parallel apply keeps its failures for the
        # applying thread, which raises them when it finishes the closer
        # (or as it prepares the next file)
        onmain = mine is None
        owned = closer.owned if onmain else mine
        cancelled = self.cancelled
        writepolicy = self.writepolicy
        streamdirs = self._streamdirs
        streamnames = self._streamnames
        decisions = self._decisions
        lanehold = self._lanehold
        # a skip hands core's writer the rest of this very iterator
        info = iter(info)

        def put(fd, path, chunk):
            """write all of ``chunk``: its size"""
            try:
                return write(fd, chunk)
            except OSError as exc:
                raise engine.FileError(path, exc, 'writing') from exc

        for path, mode, data in info:
            if onmain:
                if self.skipping and self.journaled:
                    self.leave_to_core()
                    self._write_as_core(path, mode, data, writestat, put)
                    continue
                if self.skipping:
                    self._leave_to_core(writefiles, (path, mode, data), info)
                    continue
                self.streamfiles += 1
            if not onmain and cancelled.is_set():
                # the apply is being taken back: leave at once
                return
            if not onmain and closer.failed():
                # the apply has failed: write nothing more, only keep the
                # stream in step until the main thread stops reading it
                for _chunk in data:
                    pass
                continue
            directory = streamdirs.pop(path, None)
            if onmain and writepolicy.deferring:
                data = self._write_streamed_later(path, mode, data, directory)
                if data is None:
                    continue  # handed to the writers
            if directory is not None:
                # left to us by prepare_streamed_file below
                try:
                    self.directories.prepare(*directory)
                except OSError as exc:
                    failure = engine.FileError(path, exc, 'opening')
                    if onmain:
                        raise failure from exc
                    closer.record(failure)
                    for _chunk in data:  # keep the stream in step
                        pass
                    continue
            timing = writepolicy.time_next() if onmain else None
            cpustart = blockstart = None
            if timing == 'cpu':
                cpustart, blockstart = _thread_time(), _blocked()
            if onmain:
                # a writer's descriptor is never looked for by name
                self._opening = path
            fd = None
            if timed or timing is not None:
                start = clock()
            try:
                # a small file in one chunk of bytes goes to the lane with
                # its descriptor, for its thread to write (as a
                # DescriptorFile does); on the main thread only.  What
                # _hold_limit() says, without its call: this runs for
                # every file
                fd, holdmost = self._open_streamed(
                    path, mode,
                    lanehold if onmain and self.writers is None
                    and decisions.background else 0,
                    owned,
                )
                # in the owned set now: release() finds it there, and a
                # search by name could find it queued on the closer later
                if onmain:
                    self._opening = None
                if timed:
                    openstat.since(start)
                if timing is not None:
                    cpu = blocked = None
                    if cpustart is not None:
                        cpu = _thread_time() - cpustart
                        blocked = _blocked(blockstart)
                    if writepolicy.learn(clock() - start, cpu, blocked):
                        self._start_writers()
                storename = streamnames.pop(path, None)
                if storename is not None:
                    self.register(*storename)  # before the first byte
                holding = holdmost > 0
                held = None
                for chunk in data:
                    if not onmain and cancelled.is_set():
                        # taken back meanwhile: this writer's descriptor
                        # is closed as it leaves (write_files)
                        return
                    if holding:
                        holding = False
                        if type(chunk) is bytes and len(chunk) <= holdmost:
                            held = chunk
                            if timed:  # it costs this thread nothing
                                writestat.add(0.0, len(chunk))
                            else:
                                writestat.bytes += len(chunk)
                            continue
                    if held is not None:  # more than one: written here
                        put(fd, path, held)
                        held = None
                    if timed:
                        start = clock()
                    put(fd, path, chunk)
                    if timed:
                        writestat.since(start, len(chunk))
                    else:  # counted all the same: see check_complete()
                        writestat.bytes += len(chunk)
            except engine.FileError as failure:
                if fd is not None:
                    closer.close_quietly(fd)
                    owned.discard(fd)
                if onmain:
                    raise
                closer.record(failure)
                for _chunk in data:  # keep the stream in step
                    pass
                continue
            except BaseException:
                # interrupted: fd stays in the owned set, for release() once
                # every thread is done (closing it here could hang where
                # closes do)
                raise
            try:
                closer.close(fd, path, held)
            except engine.FileError as exc:
                # closed or handed over all the same (closer.close())
                if onmain:
                    raise
                mine.discard(fd)
                closer.record(exc)
            else:
                if onmain:
                    self.closed_one()
                else:
                    # handed over or closed: no longer this writer's.  Any
                    # other error left it open and in ``mine``, which the
                    # writer closes as it leaves
                    mine.discard(fd)

    def _leave_to_core(self, writefiles, first, info):
        """closes are cheap: the skip's files go to core's own
        ``writefiles``, ``first`` (already read) and as many more as are
        left to core, taken from ``info`` one at a time, and not one more.
        Core prepared them (the session's prepare_streamed_file wrapper
        not in place) and writes them; what core's report counted meanwhile
        is their bytes.  A file
        that fails there is named by core_file_abort()."""
        # the stream's files left: never more than it declared (at least
        # the one read, should a wrapper of another extension's add more)
        count = max(
            1, min(self.skipping, self.expectedcount - self.streamfiles)
        )
        self._lastcore = True
        files = itertools.chain((first,), itertools.islice(info, count - 1))
        try:
            writefiles(files)
        except BaseException as exc:
            # core closes its file in a finally, but a signal raised as
            # os.open() returns loses the new descriptor: release()
            # finds it by name
            self._opening = _core_writer_file(exc)
            raise
        self._lastcore = False
        self._corebytes += self.corereport.byte_count - self._skipbytes
        self.streamfiles += count
        self.skipped += count
        self.skipping = 0
        self.skip_ends()


    def _write_as_core(self, path, mode, data, writestat, put):
        """write a stream v2 file (Mercurial 7.0 on) while files are left
        to core, journaled: opened, registered, written and closed here,
        as core's _write_files does, without the closer's timing and
        hand-over.  Main thread only.
        Opened by _open_streamed() and written by ``put``, as on the
        closer's path: in the owned set while it is open."""
        self._opening = path
        fd, _hold = self._open_streamed(path, mode, 0)
        self._opening = None
        try:
            storename = self._streamnames.pop(path, None)
            if storename is not None:
                self.register(*storename)  # before the first byte
            size = 0
            # core may read the stream between chunks: its failures (a
            # connection reset) are its own, not a write of this file
            for chunk in data:
                size += put(fd, path, chunk)
        except engine.FileError:
            self.closer.close_quietly(fd)
            raise
        # anything else (a failed read, an interrupt): fd stays owned, for
        # release()
        writestat.bytes += size
        try:
            engine.close_owned(fd, self.closer.owned)
        except OSError as exc:
            raise engine.FileError(path, exc) from exc


def _written_by_consumer(exc):
    """the file core's stream consumer was writing when it raised ``exc``
    (the innermost Python frame ``exc`` went through is the consumer's: a
    write or close it called, not code it called to read the stream), as
    it was opened; None if not from there.  Every consumer from Mercurial
    6.5 to 7.2 calls the file it writes ``ofp``; _write_files (7.0 on),
    which only writes, calls it ``path``."""
    tb = exc.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    frame = tb.tb_frame
    if frame.f_globals.get('__name__') != streamclone.__name__:
        return None
    if frame.f_code.co_name == '_write_files':
        # only opens, writes and closes there: its reads of the stream
        # fail deeper, in the generators that read
        return _path_written(frame)
    if exc.errno not in _WRITE_ERRNOS:
        # a consumer reads the stream itself too (a failed read of it is
        # mostly raised deeper, where it reads)
        return None
    name = getattr(frame.f_locals.get('ofp'), 'name', None)
    return os.path.normpath(name) if type(name) is bytes else None


def _path_written(frame):
    """the file core's _write_files (stream v2, Mercurial 7.0 on) in
    ``frame`` writes: its local ``path``"""
    name = frame.f_locals.get('path')
    return os.path.normpath(name) if type(name) is bytes else None


def _core_writer_file(exc):
    """the file core's _write_files was at when ``exc`` was raised there,
    or None (raised deeper in core, reading the next file: that one is
    closed)"""
    tb = exc.__traceback__
    innermost = None
    while tb is not None:
        if tb.tb_frame.f_globals.get('__name__') == streamclone.__name__:
            innermost = tb.tb_frame
        tb = tb.tb_next
    if innermost is None or innermost.f_code.co_name != '_write_files':
        return None
    return _path_written(innermost)


def _descriptors_of(path):
    """the descriptors this process holds open on ``path`` (Linux; none
    found elsewhere)"""
    path = os.path.abspath(path)
    found = []
    try:
        names = os.listdir(b'/proc/self/fd')
    except OSError:
        return found
    for name in names:
        try:
            target = os.readlink(b'/proc/self/fd/' + name)
        except OSError:
            continue
        if target == path or target == path + b' (deleted)':
            found.append(int(name))
    return found


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
        # every close done and every thread joined, even if interrupted
        # meanwhile; then the first failure, if any, is raised
        self._session.finish_closers(failing)
        if failing:
            # take the files back now, inside the transaction, so that its
            # abort runs with the disk space they used
            self._session.take_back()
        else:
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
    wrappers = list(_SESSION_SEAMS)
    if session.journaled and not session.opens_through_vfs:
        # stream v2 from 7.0 on: in place for the whole apply (no file is
        # handed to core's writer), to register each file
        wrappers.append(_PREPARE_SEAM)
    if session.opens_through_vfs and session.may_ever_skip():
        wrappers.append(_FILECHUNKITER_SEAM)
    if session.journaled and type(repo.svfs) is not vfsmod.vfs:
        # the store's vfs class, which encodes names (see storeopen)
        wrappers.append((type(repo.svfs), '__call__', storeopen))
    if (
        session.timed
        and session.format == b'v2'
        and compat.HAS_PREPARE_STREAMED_FILE
    ):
        # core makes the directories of stream v2 files there: time them
        wrappers.append(_MKDIR_SEAM)
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
        # every file handed over is closed now (finishing the closer
        # joined its threads): take back what the failed apply wrote
        session.take_back()
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
    return session.open(orig, self, path, mode, kwargs)


def storeopen(session, orig, self, path, mode=b'r', *args, **kwargs):
    """a file the stream writes, opened through the store's vfs by its
    name in the store: registered with the transaction once open"""
    streamed = _streamed(session, self.vfs, mode, args, kwargs)
    if streamed:
        session.check_name(self, path)
    fp = orig(self, path, mode, *args, **kwargs)
    if streamed:
        session.register_opened(fp, self, path)
    return fp


def makedirs(session, orig, name, *args, **kwargs):
    """stream v2 from Mercurial 7.0 on, with the report shown: core makes
    each directory once (prepare_streamed_file); time it for the report's
    mkdir row.  util.makedirs calls itself for missing parents: only the
    outermost call counts.  Only the main thread prepares stream files."""
    if not session.running or session.inmakedirs:
        return orig(name, *args, **kwargs)
    start = util.timer()
    try:
        session.inmakedirs = True
        return orig(name, *args, **kwargs)
    finally:
        session.inmakedirs = False
        session.directories.made_by_core(util.timer() - start)


# with the report shown, for the directories core makes
_MKDIR_SEAM = (util, 'makedirs', makedirs)


def prepare_streamed_file(
    session, orig, self, path, known_directories, **kwargs
):
    """the main thread reads the stream and prepares each file before a
    writer thread writes it (stream v2, Mercurial 7.0 and later): stop
    reading at the first failure a writer thread recorded, instead of
    downloading the rest of the stream for nothing.  Core makes each
    directory once on this path (its known_directories), so its mkdir
    calls are left as they are, unless writer threads write the files
    (ApplySession.stream_directory)."""
    if not session.running:
        # a chain of another extension's that still holds it passes the
        # file on
        return orig(self, path, known_directories, **kwargs)
    # this runs for every file once in place: only the calls that have
    # something to do (each costs the apply about 1% of core's time)
    journaled = session.journaled
    if journaled:
        session.check_name(self, path)
    if threading.get_ident() == session.thread:  # session.usable()
        if session.writes_elsewhere:
            # core's writer threads write: this thread hears of a failure
            # only here
            session.closer.raise_failure()
        if session.writers is not None:
            session.stream_directory(self, path, known_directories)
    prepared = orig(self, path, known_directories, **kwargs)
    if journaled:
        session.prepared(self, path, prepared[0])
    return prepared


def write_files(session, orig, info):
    if not session.running:
        return orig(info)
    return session.write_files(orig, info)


def v2_parse_files(session, orig, *args, **kwargs):
    """stream v2 from Mercurial 7.0 on: the report core counts the bytes of
    every file it reads into (called once an apply, before any file)"""
    if session.usable():
        for value in itertools.chain(args, kwargs.values()):
            if type(value) is streamclone.V2Report:
                session.corereport = value
    return orig(*args, **kwargs)


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


# stream v1, v3 and v2 before 7.0: the session's own files (taken away
# during skips), and where the files left to core are counted
_OPEN_SEAM = (vfsmod.vfs, '__call__', vfsopen)
_FILECHUNKITER_SEAM = (util, 'filechunkiter', filechunkiter)


# wrapped only while a stream apply runs, bound to it (see seams.py)
_SESSION_SEAMS = [
    (vfsmod, 'backgroundfilecloser', backgroundfilecloser),
    (vfsmod.abstractvfs, 'backgroundclosing', backgroundclosing),
    (streamclone, '_write_files', write_files)
    if compat.HAS_WRITE_FILES
    else None,
    (streamclone, '_v2_parse_files', v2_parse_files)
    if compat.HAS_V2_REPORT
    else None,
]
# stream v2 from 7.0 on: journaled, in place for the whole apply (see
# session_seams); otherwise once files are written off the reading thread
# (ApplySession.want_prepare)
_PREPARE_SEAM = (
    (vfsmod.abstractvfs, 'prepare_streamed_file', prepare_streamed_file)
    if compat.HAS_PREPARE_STREAMED_FILE
    else None
)
