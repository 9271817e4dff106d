# v2.py - stream v2 files written in place of core's _write_files
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Stream v2 from Mercurial 7.0 on: the files ``streamclone._write_files``
is given, written so that each descriptor goes to the closer instead of
being closed where it was written (docs/design.rst, "Stream v2").

Core's ``_write_files`` opens, writes and closes each file in one loop,
its ``os.close`` in a ``finally``: no wrapper around it can take a
descriptor from it, so the session writes these files itself
(``StreamV2Writer.write_files``), the way core does, and hands each
descriptor over.  The loop is longer than core's for what it adds: the
write policy's timing, the lane's small files, the journal, and core's
own writer threads (``worker.parallel-stream-bundle-processing``), whose
descriptors are their own until handed over.  While closes measure cheap,
whole skips of files go through a loop as short as core's
(``_write_skip``), whose descriptors are the session's from the step that
opens them: core's own loop never runs in a session, so no descriptor an
interrupt could take from it is ever left open.
"""

import itertools
import os
import threading
import time

from mercurial import (
    streamclone,
    util,
    vfs as vfsmod,
)

from .. import engine
from ..engine import policy as policymod
from ..shared import compat

# CPU time of the calling thread: an open that burns it is no wait
_thread_time = time.thread_time
_blocked = engine.slept

_OPEN_FLAGS = os.O_WRONLY | os.O_CREAT | getattr(os, 'O_BINARY', 0)
# one close of a skip's files in so many is timed (SkipWatch)
_WINDOW_MASK = policymod.SkipWatch.MASK


class StreamV2Writer:
    """the stream v2 files of one ``session`` (apply.ApplySession)"""

    def __init__(self, session):
        self._session = session
        # whether core's writer threads write the files (worker.parallel-
        # stream-bundle-processing), not the thread that reads the stream
        self.writes_elsewhere = False
        # core's writer threads inside write_files() now
        self._corewriting = 0
        self._corewriters = threading.Condition()
        self._writersleft = False  # some outlasted the take-back's wait
        # writers running: path -> the directory its writer makes (see
        # stream_directory)
        self._streamdirs = {}

    def stream_directory(self, vfs, path, known_directories):
        """writers running: the parent directory of ``path`` is made by
        whoever writes the file (a writer thread), not by core on the
        reading thread.  Core is told it is known; the file's writer is
        told what to make.  Whether it is the writer's."""
        session = self._session
        writers = session.wholefiles.closer
        if not session.writepolicy.deferring or writers is None:
            return False
        real = vfs.join(path)
        # recorded for every file: the writers of two files of one new
        # directory may run in either order (one made by core before the
        # writers started costs a mkdir that finds it)
        dirname = os.path.normpath(os.path.dirname(real))
        base = os.path.normpath(compat.vfs_base(vfs))
        if not dirname.startswith(base + b'/'):
            return False  # not below the vfs's base: left to core
        # core's own spelling of it, which it looks up
        known_directories.add(os.path.dirname(real))
        self._streamdirs[real] = (
            base,
            dirname[len(base) + 1 :],
            vfs.createmode,
            True,  # core's notindexed on this path
        )
        return True

    def want_directory(self, path):
        """``path``, the vfs's own name for a file core prepared (its
        audit passed): its parent directory made ahead of its writer,
        once its parent is, if its writer makes it (stream_directory)"""
        directory = self._streamdirs.get(path)
        if directory is not None:
            self._session.directories.want(*directory)

    def _open(self, path, mode, holdmost, owned=None):
        """open a file as core's _write_files does, into the owned set:
        (fd, the largest first chunk it may hold for the lane).  One that
        may hold its bytes is created, not opened: one there already (this
        stream wrote it before) is opened once every file handed over so
        far is written and closed, and holds nothing, so that its bytes
        land in core's order."""
        mode = 0o777 if mode is None else mode  # os.open's default
        closer = self._session.closer
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

    def _write_later(self, path, mode, data, directory):
        """hand a file to the session's writer threads: None, or, if its
        data does not fit the budget, what is left to write here (the data
        read so far first)"""
        session = self._session
        wholefiles = session.wholefiles
        writers = wholefiles.started()
        if writers is None:
            return data  # no thread could be started: written here
        budget = wholefiles.budget
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
        directories = session.directories
        storename = session.journal.store_name(path)
        register_opened = session.journal.register_opened

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
                register_opened(fp, *storename)
            return fp

        wholefiles.hand_over(path, prepare, opener, chunks, size)
        return None

    def write_files(self, info):
        """write files from (path, mode, chunks) in place of core's
        _write_files, handing each descriptor to the closer; on the
        applying thread, while closes measure cheap, whole skips of them
        untimed and closed here (_write_skip).

        On one of core's writer threads (worker.parallel-stream-bundle-
        processing) the descriptors it opened and has not handed over are
        its own, never in the session's owned set: no signal reaches a
        thread other than the main one, so its hand-overs cannot be cut
        short, and the take-back after a failure, which waits for these
        threads to leave (stop_core_writers), closes only what the
        applying thread owns.  A writer closes its own as it leaves.  The
        role is the session's record, not a guess: the applying thread is
        the one the session was made on."""
        if threading.get_ident() == self._session.thread:
            return self._write(info, None)
        mine = set()
        with self._corewriters:
            self._corewriting += 1
        # the file this writer is at, for a failure that is no FileError
        current = [(None, None, ())]
        try:
            self.writes_elsewhere = True
            try:
                with self._session.closer.owning(mine):
                    return self._write(_tracking(info, current), mine)
            except Exception as exc:
                # (a MemoryError, a bug): kept for the applying thread as
                # a failure of that file, never left to Python's thread
                # hook, where the apply would fail as if the stream were
                # malformed, or not at all
                path, _mode, data = current[0]
                self._session.closer.record(
                    engine.FileError(path, exc, 'writing')
                )
                _drain([(path, None, data)])
                _drain(info)
        finally:
            for fd in mine:
                engine.close_quietly(fd)
            with self._corewriters:
                self._corewriting -= 1
                self._corewriters.notify_all()

    def parsed(self, files):
        """the files core's parser yields on the reading thread while its
        writer threads write them (worker.parallel-stream-bundle-
        processing).  An interrupt while it reads the stream, where the
        reading thread mostly waits, comes out through here: the writers
        are told to write nothing more right away.  Core then joins its
        writers before anything else, and they would write every file
        read so far first."""
        try:
            yield from files
        except BaseException:
            self._session.cancelled.set()
            raise

    def stop_core_writers(self):
        """tell core's writer threads to write nothing more, and wait until
        each has left write_files(), at most the closer's grace period (a
        write that hangs on a dead mount keeps only its own thread and
        descriptor).  An interrupt meanwhile ends the wait and is returned,
        for the caller to raise once the take-back is done."""
        try:
            self._session.cancelled.set()
            if self._writersleft:
                return None  # waited for once already
            deadline = time.monotonic() + engine.Closer.GRACE
            with self._corewriters:
                while self._corewriting:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        # left to their writes: a take-back done again
                        # (the first one cut short) does not wait again
                        self._writersleft = True
                        break
                    self._corewriters.wait(min(left, 0.1))
        except (KeyboardInterrupt, SystemExit) as exc:
            return exc
        return None

    def _write(self, info, mine):
        """write_files() on the applying thread (``mine`` None), or on one
        of core's writer threads, whose descriptors not handed over yet are
        in ``mine``"""
        session = self._session
        table = session.book.mine()
        openstat = table['open']
        writestat = table['write']
        closer = session.closer
        # the report's and the write policy's: the one OpStat.since reads
        clock = engine.stat_clock
        timed = session.timed
        write = engine.write_all
        # a writer thread of a parallel apply keeps its failures for the
        # applying thread, which raises them when it finishes the closer
        # (or as it prepares the next file)
        onmain = mine is None
        owned = closer.owned if onmain else mine
        cancelled = session.cancelled
        writepolicy = session.writepolicy
        wholefiles = session.wholefiles
        streamdirs = self._streamdirs
        journal = session.journal
        # journal.store_name(), without its call: this runs for every file
        storenames = journal.storenames
        decisions = session.closer.decisions
        lanehold = session.lanehold
        # a skip takes its files from this very iterator
        info = iter(info)

        def put(fd, path, chunk):
            """write all of ``chunk``: its size"""
            try:
                return write(fd, chunk)
            except OSError as exc:
                raise engine.FileError(path, exc, 'writing') from exc

        for path, mode, data in info:
            if onmain:
                if session.skipping:
                    self._write_skip((path, mode, data), info)
                    continue
                session.streamfiles += 1
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
                data = self._write_later(path, mode, data, directory)
                if data is None:
                    continue  # handed to the writers
            if directory is not None:
                # left to us by prepare_streamed_file below
                try:
                    session.directories.prepare(*directory)
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
            fd = None
            if timed or timing is not None:
                start = clock()
            try:
                # a small file in one chunk of bytes goes to the lane with
                # its descriptor, for its thread to write (as a
                # DescriptorFile does); on the main thread only.  What
                # session.hold_limit() says, without its call: this runs
                # for every file
                fd, holdmost = self._open(
                    path, mode,
                    lanehold if onmain and wholefiles.closer is None
                    and decisions.background else 0,
                    owned,
                )
                if timed:
                    openstat.since(start)
                if timing is not None:
                    cpu = blocked = None
                    if cpustart is not None:
                        cpu = _thread_time() - cpustart
                        blocked = _blocked(blockstart)
                    if writepolicy.learn(clock() - start, cpu, blocked):
                        wholefiles.start()
                storename = storenames.pop(path, None)
                if storename is not None:
                    journal.register(*storename)  # before the first byte
                holding = holdmost > 0
                held = None
                for chunk in data:
                    if not onmain and cancelled.is_set():
                        # taken back meanwhile, maybe while the open
                        # waited past the take-back's grace period: the
                        # file goes too
                        _remove_taken_back(fd, path, mine)
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
                    # out of ``owned`` as it closes (closer.owning() on a
                    # writer thread)
                    closer.close_quietly(fd)
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
            if not onmain and cancelled.is_set():
                # (an empty file, or its last chunk written as the apply
                # was taken back)
                _remove_taken_back(fd, path, mine)
                return
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
                    session.closed_one()
                else:
                    # handed over or closed: no longer this writer's.  Any
                    # other error left it open and in ``mine``, which the
                    # writer closes as it leaves
                    mine.discard(fd)

    def _write_skip(self, first, info):
        """closes are cheap: the skip's files, ``first`` (already read) and
        as many more as the skip has left, taken from ``info`` one at a
        time, and not one more, written here as core's _write_files
        would, untimed and closed here.  Core prepared them (the session's
        prepare_streamed_file wrapper, if in place, only registers them
        when journaled).  Each descriptor is opened into the owned set and
        closed out of it in one step, so an interrupt leaves none
        unowned; journaled, each file is registered before its first
        byte."""
        session = self._session
        # the islice() ends where the stream does, if that comes first
        count = max(1, session.skipping)
        closer = session.closer
        owned = closer.owned
        journal = session.journal
        storenames = journal.storenames if journal.journaled else None
        openowned, closeowned = engine.owned_open_close()
        oswrite = os.write
        clock = time.perf_counter
        watch = session.watch
        done = nbytes = 0
        try:
            for path, mode, data in itertools.chain(
                (first,), itertools.islice(info, count - 1)
            ):
                try:
                    fd = openowned(path, _OPEN_FLAGS,
                                   0o777 if mode is None else mode, owned)
                except (OSError, ValueError) as exc:  # ValueError: NUL
                    raise engine.FileError(path, exc, 'opening') from exc
                if storenames is not None:
                    storename = storenames.pop(path, None)
                    if storename is not None:
                        journal.register(*storename)  # before any byte
                # reading the stream between chunks may fail too (a
                # connection reset): the stream's error, not this file's;
                # fd then stays owned, for release()
                for chunk in data:
                    try:
                        written = oswrite(fd, chunk)
                        if written < len(chunk):
                            engine.write_all(fd, memoryview(chunk)[written:])
                    except OSError as exc:
                        closer.close_quietly(fd)
                        raise engine.FileError(path, exc, 'writing') from exc
                    nbytes += len(chunk)
                try:
                    if done & _WINDOW_MASK:
                        closeowned(fd, owned)
                        slow = False
                    else:
                        # one close in a window is timed (SkipWatch)
                        start = clock()
                        closeowned(fd, owned)
                        slow = watch.timed(clock() - start)
                except OSError as exc:
                    raise engine.FileError(path, exc) from exc
                done += 1
                if slow:
                    # closes are slow now: the next files are the
                    # session's, timed
                    break
        finally:
            session.corebytes += nbytes
            session.streamfiles += done
            session.skipped += done
        session.skipping = 0
        session.skip_ends()

# wrappers -----------------------------------------------------------------


def _tracking(info, current):
    """``info``'s items, each kept in ``current[0]`` as it is given out"""
    for item in info:
        current[0] = item
        yield item


def _drain(info):
    """what is left of ``info`` read and dropped, so that core's reading
    thread is not held up by a writer that left; a second failure ends
    it"""
    try:
        for _path, _mode, data in info:
            for _chunk in data:
                pass
    except Exception:
        pass


def _remove_taken_back(fd, path, mine):
    """a core writer's file that the apply's take-back may not have seen
    (it was opened after): closed, out of ``mine``, and removed"""
    mine.discard(fd)
    engine.close_quietly(fd)
    try:
        os.unlink(path)
    except OSError:
        pass


def makedirs(session, orig, name, *args, **kwargs):
    """with the report shown: core makes each directory once
    (prepare_streamed_file); time it for the report's mkdir row.
    util.makedirs calls itself for missing parents: only the outermost
    call counts.  Only the main thread prepares stream files."""
    if not session.running or session.inmakedirs:
        return orig(name, *args, **kwargs)
    start = util.timer()
    try:
        session.inmakedirs = True
        return orig(name, *args, **kwargs)
    finally:
        session.inmakedirs = False
        session.directories.made_by_core(util.timer() - start)


def prepare_streamed_file(
    session, orig, self, path, known_directories, **kwargs
):
    """the main thread reads the stream and prepares each file before a
    writer thread writes it: stop reading at the first failure a writer
    thread recorded, instead of downloading the rest of the stream for
    nothing.  Core makes each directory once on this path (its
    known_directories), so its mkdir calls are left as they are, unless
    writer threads write the files (StreamV2Writer.stream_directory)."""
    if not session.running:
        # a chain of another extension's that still holds it passes the
        # file on
        return orig(self, path, known_directories, **kwargs)
    # this runs for every file once in place: only the calls that have
    # something to do (each costs the apply about 1% of core's time)
    journal = session.journal
    journaled = journal.journaled
    if journaled:
        journal.check_name(self, path)
    writers_make = False  # the file's directory is its writer's to make
    if threading.get_ident() == session.thread:  # session.usable()
        v2 = session.v2
        if v2.writes_elsewhere:
            # core's writer threads write: this thread hears of a failure
            # only here
            session.closer.raise_failure()
        if session.wholefiles.closer is not None:
            writers_make = v2.stream_directory(
                self, path, known_directories)
    prepared = orig(self, path, known_directories, **kwargs)
    if writers_make:
        # audited now: made ahead of the writer
        session.v2.want_directory(prepared[0])
    if journaled:
        journal.prepared(self, path, prepared[0])
    return prepared


def write_files(session, orig, info):
    if not session.running:
        return orig(info)
    return session.v2.write_files(info)


def v2_parse_files(session, orig, *args, **kwargs):
    """where core's writer threads write, the files core's parser yields
    (StreamV2Writer.parsed; called once an apply, before any file)"""
    files = orig(*args, **kwargs)
    if session.usable() and compat.parallel_stream_v2(session.ui):
        return session.v2.parsed(files)
    return files


# with the report shown, for the directories core makes
MKDIR_SEAM = (util, 'makedirs', makedirs)

# in place for the whole apply
SEAMS = [
    (streamclone, '_write_files', write_files)
    if compat.HAS_WRITE_FILES
    else None,
    (streamclone, '_v2_parse_files', v2_parse_files)
    if compat.HAS_V2_PARSER
    else None,
]

# journaled, in place for the whole apply (see apply.session_seams);
# otherwise once files are written off the reading thread
# (ApplySession.want_prepare)
PREPARE_SEAM = (
    (vfsmod.abstractvfs, 'prepare_streamed_file', prepare_streamed_file)
    if compat.HAS_PREPARE_STREAMED_FILE
    else None
)
