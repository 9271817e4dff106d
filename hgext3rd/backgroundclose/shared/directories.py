# directories.py - the parent directories of the files a stream writes
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Make each parent directory of a stream apply's files once, top-down.

Core's vfs makes a file's parent directories each time it opens one for
writing: ``util.makedirs`` tries the deepest directory first and climbs on
ENOENT, so a file in an existing directory costs a failed mkdir, and one in
a new directory three levels down costs five.  On a network file system
each is a round trip.

``Directories`` remembers, for each vfs base, the directories it made or
found.  ``prepare()`` makes those a file still lacks, from the deepest one
known to exist downwards, with core's ``util.makedir`` and core's
``createmode``, as ``util.makedirs`` would; the caller then opens the file
telling the vfs not to make directories (``makeparentdirs=False``).  The
caller runs core's audit of the path first, so that nothing is made where
the audit would refuse to write.
"""

import os
import threading

from mercurial import util

from .. import engine
from . import dirmaker, filesystems


class Directories:
    """the directories one apply made or found, per root (a vfs base)"""

    # most directories remembered per root: a stream sends the files of a
    # directory together, so the recent ones are what counts, and a tree
    # of 500,000 directories would otherwise cost tens of MB.  A directory
    # forgotten costs one mkdir that finds it existing.
    MOST = 8192

    def __init__(self, timed=False, ahead=None, grace=None):
        self._known = {}  # root -> directories below it (relative)
        self._prefixes = {}  # root -> what goes before a directory's name
        # every mkdir system call, timed if ``timed``
        self.stat = engine.OpStat()
        self._timed = timed
        self.created = 0  # directories made
        self.existing = 0  # mkdir calls that found one already there
        # writer threads prepare directories too (deferredwrite.py): the
        # sets and counts change under this lock, never a mkdir
        self._lock = threading.Lock()
        # root -> whether the directories wanted below it are made ahead
        # of the writers: not on a local file system, where a mkdir never
        # waits on a network, unless ``ahead`` says
        self._ahead = {}
        self._force_ahead = ahead
        # after an interrupt, how long the teardown waits for a mkdir
        # still in flight: the closer's grace
        self._grace = engine.Closer.GRACE if grace is None else grace
        # the directories made ahead of the writers, once one is wanted
        self.maker = None

    def want(self, root, dirname, createmode=None, notindexed=False):
        """on the applying thread, as a file goes to the writers: its
        parent directory ``dirname`` (relative to ``root``, audited) made
        ahead of its writer (dirmaker.py), whose ``prepare()`` waits for
        it, unless ``root`` is on a local file system.  The teardown
        calls ``finish_ahead()``, after the writers'."""
        ahead = self._ahead.get(root)
        if ahead is None:
            ahead = self._ahead[root] = (
                self._force_ahead if self._force_ahead is not None
                else not filesystems.is_local(root))
        if not ahead or not dirname:
            return
        maker = self.maker
        if maker is None:
            maker = self.maker = dirmaker.DirectoryMaker(
                self, util.timer, self._grace)
        maker.want(root, dirname, createmode, notindexed)

    def stop_ahead(self):
        """the teardown's first step, failing: nothing more is made ahead,
        and writers waiting for a directory make their own (never
        waits)"""
        maker = self.maker
        if maker is not None:
            maker.stop()

    def finish_ahead(self, interrupted=False):
        """the teardown's step for the directories made ahead, after the
        writers': every thread of theirs joined; an interrupt meanwhile is
        returned.  None if none."""
        maker = self.maker
        if maker is None:
            return None
        return maker.join(interrupted)

    @property
    def ahead_finished(self):
        """whether no directory maker runs: none was made, or its
        teardown ran to its end"""
        return self.maker is None or self.maker.joined

    @property
    def ahead(self):
        """(directories made ahead of the writers, threads that made them)"""
        maker = self.maker
        if maker is None:
            return 0, 0
        return maker.made, maker.started

    def record(self, root, dirname, made, duration):
        """a mkdir of ``dirname`` that took ``duration`` seconds, made
        ahead: ``made`` True if it made it, False if it found it existing
        (either way it is known from now on), None if it failed"""
        with self._lock:
            self.stat.add(duration)
            if made is None:
                return
            known = self._known.get(root)
            if known is None:
                known = self._known[root] = set()
                self._prefixes[root] = os.path.join(root, b'')
            if len(known) >= self.MOST:
                known.clear()
            known.add(dirname)
            if made:
                self.created += 1
            else:
                self.existing += 1

    def known(self, root, dirname):
        """whether ``dirname`` (relative to ``root``) is known to exist"""
        known = self._known.get(root)
        return known is not None and dirname in known

    def forget(self, root, dirname):
        """``dirname`` was removed meanwhile: make it again when needed"""
        with self._lock:
            known = self._known.get(root)
            if known is not None:
                known.discard(dirname)

    def prepare(self, root, dirname, createmode=None, notindexed=False):
        """make ``dirname`` (relative to ``root``, the parent of a path
        audited already) and the parents it lacks, with ``createmode`` as
        util.makedirs does.  Threads may prepare at once: two that make the
        same directory find it made by the other, which is no error.  On a
        writer, a directory wanted ahead (``want()``) is waited for."""
        maker = self.maker
        if (
            maker is not None
            and engine.on_pool_thread()
            and maker.wait_for(root, dirname)
        ):
            return
        with self._lock:
            known = self._known.get(root)
            if known is None:
                known = self._known[root] = set()
                # what os.path.join(root, name) puts before each name
                self._prefixes[root] = os.path.join(root, b'')
            missing = []
            while dirname and dirname not in known:
                missing.append(dirname)
                dirname = dirname.rpartition(b'/')[0]
            if len(known) + len(missing) > self.MOST:
                known.clear()
        # a stream of a deep tree makes about two directories a file: one
        # lock, and no call per directory here but core's makedir and, if
        # timed, one clock read (each mkdir ends where the next begins)
        prefix = self._prefixes[root]
        join = os.path.join
        clock = util.timer if self._timed else None
        done = []  # made, or found existing
        made = existing = calls = 0
        total = longest = 0.0
        if clock is not None:
            start = clock()
        try:
            for dirname in reversed(missing):
                # an absolute name (one the audit let through, inside the
                # root) is itself, as os.path.join has it
                name = (
                    prefix + dirname if dirname[:1] != b'/'
                    else join(root, dirname)
                )
                calls += 1
                try:
                    try:
                        util.makedir(name, notindexed)
                    except FileExistsError:
                        # the open that follows finds out if it is no
                        # directory
                        existing += 1
                    except FileNotFoundError:
                        # the root itself is missing: core's way, which
                        # makes every parent
                        util.makedirs(name, createmode, notindexed)
                        made += 1
                    else:
                        made += 1
                        if createmode is not None:
                            os.chmod(name, createmode)
                finally:
                    # timed however it ended, one that raised too
                    if clock is not None:
                        end = clock()
                        duration = end - start
                        start = end
                        total += duration
                        if duration > longest:
                            longest = duration
                done.append(dirname)
        finally:
            with self._lock:
                # known only once made: another thread that finds it known
                # opens below it at once
                known.update(done)
                self.created += made
                self.existing += existing
                self.stat.add_many(calls, total, longest)

    def made_by_core(self, duration):
        """core's ``util.makedirs`` made a directory (and its parents) in
        ``duration`` seconds (stream/apply.py's mkdir seam): counted as one
        call, under the lock writer threads count theirs with"""
        with self._lock:
            self.stat.add(duration)
            self.created += 1

