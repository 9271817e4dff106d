# batchget.py - the working-copy files an update gets, written whole
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""The checkout: the files core's ``batchget`` gets into the working copy
(``hg update``, the checkout of ``hg clone``, merges, rebases), in each
forked update worker and in an update without workers alike.

Each file is one ``CheckoutFile``: made, written, closed, then stat'ed for
the dirstate, whole, by whichever thread runs it.  On the applying thread
while that is cheap; on writer threads once making files is measured to
wait on the file system (sshfs, NFS: a round trip per open and per close;
a scanner on close), as the stream's writers start (writepolicy.WritePolicy).
The applying thread keeps what core keeps there: the path audit, the
revlog reads, the decode filters, symlinks, and the order of the actions.
See docs/design.rst, "The checkout".
"""

import errno
import os
import threading

from mercurial.i18n import _
from mercurial import (
    context,
    error,
    localrepo,
    pathutil,
    util,
    vfs as vfsmod,
)
from mercurial.dirstateutils import timestamp

from .. import engine
from ..engine import policy as policymod
from ..engine import writepolicy as writepolicymod
from ..shared import (
    deferredwrite,
    directories,
    messages,
    seams,
    settings,
)
from . import readahead, summary as checkoutsummary

# a new file, never one through a symbolic link or one that was there:
# what core's unlink-then-open makes, in one round trip when nothing is
# in the way
_CREATE = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_EXCL
    | getattr(os, 'O_NOFOLLOW', 0)
    | getattr(os, 'O_CLOEXEC', 0)
    | getattr(os, 'O_BINARY', 0)
)
# what a failed create says when something is in the way of the file (a
# directory, a file where a directory should be): core's steps then
_IN_THE_WAY = frozenset((errno.ENOENT, errno.ENOTDIR, errno.ELOOP))


def batchget(orig, repo, mctx, wctx, wantfiledata, actions):
    """core's ``batchget`` (wrapped): the files of ``actions`` written by a
    ``Checkout``, where one can write them as core would, and where
    ``orig`` is core's own (another extension's wrapper put in place
    before this one, in its ``uisetup`` say, runs, and core's with it)"""
    if not (seams.core_s_function(orig) and _applies(repo, wctx, actions)):
        checkoutsummary.left_to_core(repo, len(actions))
        return orig(repo, mctx, wctx, wantfiledata, actions)
    return Checkout(repo, wctx).get(mctx, wantfiledata, actions)


def _applies(repo, wctx, actions):
    """whether a Checkout writes these files as core would: a working copy
    on disk, whose write path (``_core_s_write_path``) no other extension
    wraps or overrides, with core's file modes, no atomic writes asked
    for, and no file to back up first (core's steps for those stay
    core's); and unless the writers are turned off"""
    ui = repo.ui
    return (
        not wctx.isinmemory()
        and repo.wvfs.createmode is None
        and settings.writes(ui) != policymod.INLINE
        and not ui.configbool(b'experimental', b'update.atomic-file')
        and not any(backup for f, (flags, backup), msg in actions)
        and _core_s_write_path(repo, wctx, actions)
    )


# what core's batchget calls to write a regular file: a Checkout stands
# in for all of them, so another extension's override or wrapper of any
# of them sends the whole update to core.  For each object the update
# writes through, core's class, whether it must be that class (the
# checkout writes beside the vfs, through its paths, and stands in for the
# auditor's checks: a subclass may change either; a repository or working
# file subclass that leaves these functions alone changes nothing the
# checkout skips), and the functions
_WRITE_PATH = (
    (localrepo, 'localrepository', False, ('wwrite', 'wwritedata')),
    (context, 'workingfilectx', False, ('write', 'clearunknown')),
    (vfsmod, 'vfs', True, ('__call__', 'write', 'setflags')),
    (pathutil, 'pathauditor', True, ('__call__',)),
)


def _core_s_write_path(repo, wctx, actions):
    """whether every function on core's write path for these files is
    core's own, as the objects this update writes through have them:
    the repository (a subclass made in another extension's ``reposetup``
    may override ``wwrite``), a working file of the first action, the
    working copy's vfs and its auditor.  Checked once per update (per
    forked worker), by identity with core's function."""
    objects = (
        repo.unfiltered(),
        wctx[actions[0][0]] if actions else None,
        repo.wvfs,
        repo.wvfs.audit,
    )
    for obj, (module, clsname, exact, names) in zip(objects, _WRITE_PATH):
        if obj is None:  # no file: no working file to write through
            continue
        if exact and not _core_s_class(type(obj), module, clsname):
            return False
        cls = getattr(module, clsname)
        for name in names:
            core = seams.core_s_own(cls, name)
            if (
                core is None
                or getattr(type(obj), name, None) is not core
                or name in getattr(obj, '__dict__', ())
            ):
                return False
    return True


def _core_s_class(cls, module, name):
    """whether ``cls`` is core's class ``name`` of ``module``: by name and
    module, as another extension may have put a subclass of its own in
    core's module before this one ran (modules load lazily); such a
    subclass's functions are not core's either (``seams.core_s_own``
    finds them defined elsewhere)"""
    return cls.__module__ == module.__name__ and cls.__name__ == name


class CheckoutFile:
    """one file of the checkout, written whole by ``close()`` (the name the
    writers' closer calls), on whichever thread calls it: made (its
    directories first), written, made executable, closed, and only then
    stat'ed, so that the size and mtime the dirstate records are those of
    the file as it stays.  ``held``: bytes of the budget its data holds
    while it waits for a writer."""

    __slots__ = ('checkout', 'path', 'name', 'data', 'executable', 'held')

    def __init__(self, checkout, path, name, data, executable):
        self.checkout = checkout
        self.path = path  # as the dirstate knows it
        self.name = name  # joined to the working copy's root
        self.data = data
        self.executable = executable
        self.held = 0

    def close(self):
        """the writers' closer's call (the name it calls), on one of its
        threads: write it, once, the descriptor this frame's alone (a
        writer thread blocks signals); what fails here is said to have
        failed writing the file (the closer would say closing).  Where
        that closer closes inline instead, on the applying thread, as
        ``write_here``."""
        if not engine.on_pool_thread():
            self.write_here(self.checkout.owned)
            return
        try:
            self._run(set(), 'close-written')
        except BaseException as exc:
            # the checkout stops at once, as core's would at its failing
            # file: no writer starts another file, and the applying
            # thread raises this failure before it reads the next one
            self.checkout.cancelled.set()
            if isinstance(exc, engine.FileError) or not isinstance(
                exc, Exception
            ):
                raise
            raise engine.FileError(self.name, exc, 'writing') from exc

    def write_here(self, owned):
        """on the applying thread: write it, the descriptor kept in
        ``owned`` while open, which an interrupt's teardown closes"""
        self._run(owned, 'close')

    def _run(self, owned, closename):
        data, self.data = self.data, None
        if data is None:
            return
        checkout = self.checkout
        try:
            if not checkout.cancelled.is_set():
                self._write(data, owned, closename)
        finally:
            # the memory is given back; the data itself goes with the last
            # frame that holds it (a failure kept with its traceback holds
            # its file's until the checkout ends)
            data = None
            if self.held:
                checkout.budget.give(self.held)
                self.held = 0

    def discard(self):
        """never handed over (an interrupt while it waited for room or for
        a thread to start): write nothing, give the memory back"""
        self.data = None
        if self.held:
            self.checkout.budget.give(self.held)
            self.held = 0

    def _write(self, data, owned, closename):
        checkout = self.checkout
        name = self.name
        table = checkout.book.mine()
        clock = checkout.clock
        fd = None
        # directories timed on their own (directories.Directories)
        if checkout.prepare(self.path):
            start = clock()
            fd = checkout.create(name, owned)
        if fd is None:
            # something in the way: core's own steps for this file
            start = clock()
            checkout.write_as_core(self.path, data, self.executable)
            table['core'].add(clock() - start, len(data))
        else:
            table['open'].add(clock() - start)
            try:
                start = clock()
                engine.write_all(fd, data)
                if self.executable:
                    checkout.make_executable(fd)
                table['write'].add(clock() - start, len(data))
            except BaseException as exc:
                engine.close_quietly(fd, lambda fd: engine.close_owned(
                    fd, owned))
                if isinstance(exc, OSError):
                    raise engine.FileError(name, exc, 'writing') from exc
                raise
            start = clock()
            try:
                engine.close_owned(fd, owned)
            except OSError as exc:
                raise engine.FileError(name, exc) from exc
            table[closename].add(clock() - start)
        start = clock()
        try:
            st = os.lstat(name)
        except OSError as exc:
            raise engine.FileError(name, exc, 'writing') from exc
        table['stat'].add(clock() - start)
        checkout.filedata[self.path] = (
            st.st_mode, len(data), timestamp.mtime_of(st)
        )


class Checkout:
    """the files one ``batchget`` call gets, and the writer threads that
    write them once making files waits; made in the process that writes
    (a forked update worker has its own), on its applying thread"""

    def __init__(self, repo, wctx):
        ui = self.ui = repo.ui
        self.repo = repo
        self.wctx = wctx
        self.wvfs = repo.wvfs
        self.root = repo.wvfs.base
        self.started = util.timer()
        self.policy = writepolicymod.WritePolicy(
            settings.writes(ui), sample=engine.SAMPLE
        )
        self.cancelled = threading.Event()
        self.writers = deferredwrite.WriterThreads(
            self.policy, settings.closer_options(ui), None, False,
            self.cancelled, _nothing,
        )
        self.budget = self.writers.budget
        # every step of every file counted, and timed for the report
        # (the --debug line says how many were in flight)
        timed = settings.report(ui) != settings.REPORT_OFF or ui.debugflag
        self.clock = engine.stat_clock if timed else _no_clock
        self.book = engine.StatsBook(checkoutsummary.OPERATIONS)
        self.directories = directories.Directories(timed)
        # core's audit of each path, cached for this checkout as core's
        # revert and addremove cache theirs: a directory checked once, or
        # found missing (the checkout makes it), is not checked again,
        # where each check is a round trip on a network file system
        audit = repo.wvfs.audit
        if type(audit) is pathutil.pathauditor:  # (else core's update)
            audit = pathutil.pathauditor(
                audit.root, callback=audit.callback,
                realfs=getattr(audit, '_realfs', True), cached=True,
            )
        self.audit = audit
        # path -> (mode, size, mtime) for the dirstate, written by the
        # thread that closed the file (one dict store each)
        self.filedata = {}
        # descriptors the applying thread opened and has not closed yet
        self.owned = set()
        self.count = 0
        # the last create found a file there: unlink first (an update
        # between revisions), as core always does
        self._unlinkfirst = False
        self._umask = util.umask
        # core's steps for a file with something in the way run one at a
        # time: two of them may find the same file in the way
        self._coresteps = threading.Lock()
        # the store's data of each file, read here or ahead (get())
        self.reads = None

    # the applying thread ----------------------------------------------

    def get(self, mctx, wantfiledata, actions):
        """what core's ``batchget`` yields: progress every 100 files, then
        the dirstate's data of every file, once all are closed"""
        ui = self.ui
        verbose = ui.verbose
        if not isinstance(actions, list):  # (an iterator, read twice here)
            actions = list(actions)
        self.reads = readahead.StoreReads(
            mctx, [f for f, args, msg in actions],
            readahead.read_mode(self.repo, settings.writes(ui)),
            readahead.core_s_read_path(self.repo, mctx), self.clock,
        )
        i = 0
        f = None
        failing = True
        abandoned = False
        try:
            try:
                for f, (flags, backup), msg in actions:
                    ui.debug(b" %s: %s -> g\n" % (f, msg))
                    if verbose:
                        ui.note(_(b"getting %s\n") % f)
                    self.get_one(f, flags)
                    if i == 100:
                        yield False, (i, f)
                        i = 0
                    i += 1
                self.settle()
                failing = False
            except GeneratorExit:
                # its consumer stopped iterating, unwinding from its own
                # interrupt or failure (a forked worker sending results)
                abandoned = True
                raise
            finally:
                self.finish(failing, abandoned)
        except engine.FileError as exc:
            raise _core_s_error(exc) from exc
        if i > 0:
            yield False, (i, f)
        self.summarize()
        yield True, self.filedata if wantfiledata else {}

    def get_one(self, f, flags):
        """audit ``f``, read its data, and write it, here or on a writer"""
        if self.cancelled.is_set():
            # a writer failed: its failure, before one more file is read
            self.settle()
        self.count += 1
        wvfs = self.wvfs
        if b'l' in flags:
            # a symbolic link (or the file that stands for one): core's
            # steps, on this thread
            start = self.clock()
            wfctx = self.wctx[f]
            wfctx.clearunknown()
            size = wfctx.write(self.reads.take(f), flags)
            st = wfctx.lstat()
            self.filedata[f] = (st.st_mode, size, timestamp.mtime_of(st))
            self.book.mine()['core'].add(self.clock() - start, size)
            return
        self.audit(f)  # what clearunknown() begins with
        data = self.repo.wwritedata(f, self.reads.take(f))
        item = CheckoutFile(self, f, wvfs.join(f), data, b'x' in flags)
        if self.policy.deferring and self._hand_over(item):
            return
        self._write_here(item)

    def _write_here(self, item):
        """write ``item`` on this thread, timed when the policy asks: a
        checkout whose files wait starts the writers"""
        how = self.policy.time_next()
        if how is None:
            item.write_here(self.owned)
            return
        _, wall, cpu, blocked = engine.timed_call(
            how, item.write_here, self.owned
        )
        if self.policy.learn(wall, cpu, blocked):
            self.writers.start()

    def _hand_over(self, item):
        """to the writers, if they run and its data fits the budget: from
        here on the file is the writers' closer's.  False: write it here"""
        closer = self.writers.started()  # raises a writer's failure
        if closer is None or not self.budget.take(len(item.data)):
            return False
        item.held = len(item.data)
        # its directory made ahead of its writer, once its parent is
        self.directories.want(self.root, item.path.rpartition(b'/')[0])
        closer.close(item, item.name)
        return True

    def settle(self):
        """every file handed over written, and a failure raised"""
        closer = self.writers.closer
        if closer is not None:
            closer.wait()
            closer.raise_failure()

    def finish(self, failing, abandoned=False):
        """the one teardown, from ``get()``'s outermost frame: the writers
        finished (their threads joined), then what this thread opened and
        an interrupt kept from closing closed.  Failing, files not written
        yet are not written.  ``abandoned``: the generator is being
        closed, where an interrupt absorbed while the writers were joined
        has nowhere to go (Python would print it as ignored): the one its
        consumer unwinds from goes on."""
        if failing:
            self.cancelled.set()
            # writers waiting for a directory made ahead make their own,
            # which an interrupt may have left half-wanted
            self.directories.stop_ahead()
        closer = self.writers.closer
        reads = self.reads
        interrupted = failing
        try:
            if reads is not None:
                reads.stop()  # never waits: joined last
            while closer is not None and not closer.finished:
                try:
                    # abandoned: unwinding from an interrupt its consumer
                    # caught, which the closer cannot see from here (it
                    # sees GeneratorExit): bounded by its grace period
                    closer.finish(
                        failing, on_interrupt=self.cancelled.set,
                        interrupted=abandoned,
                    )
                except (KeyboardInterrupt, SystemExit):
                    interrupted = True
                    if not abandoned:
                        raise
        finally:
            try:
                # the readers, and the directories made ahead, end after
                # the read or mkdir each is in: after an interrupt, within
                # the closer's grace period
                caught = reads.join(interrupted) if reads else None
                made = self.directories.finish_ahead(interrupted)
                caught = caught or made
                if caught is not None and not abandoned:
                    raise caught
            finally:
                while self.owned:
                    engine.close_quietly(self.owned.pop())

    def summarize(self):
        """this process's figures, to the update that forked it (or ran
        it here), which prints them once for all its processes"""
        writers = self.writers.closer
        checkoutsummary.deliver(self.repo, checkoutsummary.Figures(
            files=self.count,
            seconds=util.timer() - self.started,
            threads=writers.threadcount if writers is not None else 0,
            peakheld=self.budget.peak,
            dirs_created=self.directories.created,
            dirs_existing=self.directories.existing,
            dirs_ahead=self.directories.ahead[0],
            dirthreads=self.directories.ahead[1],
            readers=self.reads.started,
            peakread=self.reads.peakheld,
            ops=dict(
                self.book.merged(), mkdir=self.directories.stat,
                read=self.reads.reads, **{'read-wait': self.reads.waits}
            ),
        ))

    # any thread ---------------------------------------------------------

    def prepare(self, path):
        """the directories of ``path`` made; False if something is in the
        way (a file where one of them goes, or one that may not be made):
        core's steps decide then"""
        dirname = path.rpartition(b'/')[0]
        if dirname and not self.directories.known(self.root, dirname):
            try:
                self.directories.prepare(self.root, dirname)
            except OSError:
                return False
        return True

    def create(self, name, owned):
        """a new, empty ``name`` in a directory made already; None if
        something is in the way (a directory there, a file where one of
        its directories should be): core's steps then"""
        if self._unlinkfirst:
            try:
                os.unlink(name)
            except FileNotFoundError:
                self._unlinkfirst = False
            except OSError:
                return None
        try:
            return engine.open_owned(name, _CREATE, owned)
        except FileExistsError:
            # a file of the revision updated from: replaced, never
            # written into (a hard link, a symbolic link), as core does
            self._unlinkfirst = True
        except OSError as exc:
            if exc.errno in _IN_THE_WAY:
                return None
            raise engine.FileError(name, exc, 'opening') from exc
        try:
            os.unlink(name)
            return engine.open_owned(name, _CREATE, owned)
        except OSError:
            return None

    def make_executable(self, fd):
        """core's setflags on a new file: execute wherever read is
        allowed, within the umask, from the file's own mode (a default
        ACL may have made it other than the umask alone says)"""
        if hasattr(os, 'fchmod'):
            mode = os.fstat(fd).st_mode
            os.fchmod(fd, mode | ((mode & 0o444) >> 2 & ~self._umask))

    def write_as_core(self, path, data, executable):
        """core's steps for one file: what is in the way removed
        (``clearunknown``), then the vfs's own write and flags"""
        wvfs = self.wvfs
        try:
            with self._coresteps:
                self.wctx[path].clearunknown()
                wvfs.write(path, data)
                wvfs.setflags(path, False, executable)
        except OSError as exc:
            raise engine.FileError(wvfs.join(path), exc, 'writing') from exc
        # the directories core made, or removed, are not known any more
        dirname = path.rpartition(b'/')[0]
        if dirname:
            self.directories.forget(self.root, dirname)


def _core_s_error(exc):
    """what core's update raises where the checkout's ``exc`` (a
    FileError) failed: what core's own steps raised (a path audit's
    abort, an OSError), as it is; an OSError with the file named where
    core names none (a failed write); else the extension's words"""
    cause = exc.error
    if isinstance(cause, error.Abort):
        # of its own class, whose detailed exit code core's would give
        try:
            return type(cause)(cause.message, hint=cause.hint)
        except TypeError:  # a subclass made otherwise
            return error.Abort(cause.message, hint=cause.hint)
    if isinstance(cause, OSError) and cause.strerror:
        # a new one (a subclass by its errno): the writer's own stays as it
        # was, with its traceback, in the chain
        return OSError(
            cause.errno, cause.strerror,
            exc.name if cause.filename is None else cause.filename,
        )
    return messages.file_abort(exc, exc.name)


def _nothing():
    pass


def _no_clock():
    return 0.0
