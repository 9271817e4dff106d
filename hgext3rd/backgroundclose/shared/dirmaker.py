# dirmaker.py - the directories of files handed to writers, made ahead
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Make the parent directories of the files handed to writer threads
ahead of the writers, on threads of their own, each directory once and
after its parent, independent ones at once.

On a network file system a mkdir is a round trip or two, made with the
parent directory's lock held in the client's kernel: writers that each
make their own file's directories, in the stream's order, wait on one
another's locks for directories another writer is making.  Here each
directory is made by one thread as soon as its parent exists, so a tree
is made level after level, as wide as it is, while the writers write the
files of directories made already.  See docs/design.rst, "Directories
ahead".

What is made, found existing, and timed is recorded in the
``directories.Directories`` it serves, whose ``prepare()`` (on a writer)
waits for a directory wanted here, and makes it itself, core's way, if it
was not made: a mkdir that failed here (a file in the way, no space) is
tried again there, whose error is the one the command reports.
"""

import collections
import os
import threading

from mercurial import util

from ..engine import helpers, threads as threadsmod

# the most directory threads: a mkdir's round trips in flight, never one
# thread per directory
MOST_THREADS = 64
# mkdirs in flight in one parent directory: the kernel makes them one at
# a time, and a second one waiting on its lock there starts the moment
# the first ends, where a thread would first have to come back for it
PER_PARENT = 2
# how long a thread that waits here looks again at what it waits for
_LOOK_AGAIN = 0.1


class DirectoryMaker:
    """the directories wanted by one apply (``want()``, on the applying
    thread), made by threads that start as they are needed.  The
    teardown calls ``stop()``, then ``join()``."""

    def __init__(self, directories, clock, grace):
        self._directories = directories
        self._clock = clock
        # The applying thread, which takes Ctrl-C, only ever holds
        # ``_mutex`` in a ``with`` (a C lock's enter and exit, which no
        # signal handler can come between), and never waits here.  The
        # threads wait on ``_work``, and writers on an event of the
        # directory they wait for; both take no signal, and look again
        # every ``_LOOK_AGAIN`` seconds: a notification an interrupt cut
        # short costs them that long.
        self._mutex = threading.Lock()
        self._work = threading.Condition(self._mutex)
        # (root, directory) -> its entry, while it is wanted and not made:
        # (root, directory, createmode, notindexed)
        self._pending = {}
        # (root, directory) -> the entries of its subdirectories waiting
        # for it to be made
        self._children = {}
        # A client's kernel makes the entries of one directory one at a
        # time (its lock is held through the lookup and the mkdir): at
        # most PER_PARENT threads a parent, and the others on other
        # parents.
        # (root, parent) -> entries whose parent exists, to be made
        self._ready = {}
        # parents with entries ready and fewer than PER_PARENT mkdirs in
        # flight, in order, each once
        self._open = collections.deque()
        self._opened = set()  # what _open holds
        self._busy = {}  # parent -> mkdirs in flight in it
        # (root, directory) -> the event a writer waits on for it
        self._events = {}
        self._stopping = False
        self._threads = helpers.HelperThreads(
            self._maker, 'backgroundclose-mkdir', grace)
        self.made = 0  # directories made here
        self.failed = 0  # mkdir calls here that failed

    @property
    def started(self):
        """threads started in all"""
        return self._threads.started

    @property
    def joined(self):
        """the teardown's step ran to its end: stopped, and no thread
        left to join"""
        return self._stopping and not self._threads

    # the applying thread --------------------------------------------------

    def want(self, root, dirname, createmode=None, notindexed=False):
        """``dirname`` (relative to ``root``, the parent of a path audited
        already) and its parents not known to exist: to be made, each
        after its parent.  Never waits."""
        known = self._directories.known
        with self._mutex:
            if self._stopping:
                return
            pending = self._pending
            chain = []
            while (
                dirname
                and (root, dirname) not in pending
                and not known(root, dirname)
            ):
                chain.append(dirname)
                dirname = dirname.rpartition(b'/')[0]
            if not chain:
                return
            parent = (root, dirname)
            waits = parent in pending
            for name in reversed(chain):
                key = (root, name)
                entry = pending[key] = (root, name, createmode, notindexed)
                if waits:
                    self._children.setdefault(parent, []).append(entry)
                else:
                    self._add_ready(parent, (entry,))
                    waits = True
                parent = key
            # the parents with directories to make in them, now or once
            # they exist: as many at once as threads work in them
            parents = len(self._ready) + len(self._children)
        # a thread a parent: one more at a time, here (a start costs this
        # thread a wait for it to run)
        if len(self._threads) < min(MOST_THREADS, parents):
            if not self._threads.spawn() and not self._threads:
                # none to be had (a process limit): the writers make
                # their own, as before
                self.stop()

    def _add_ready(self, parent, entries):
        """``entries``, whose ``parent`` exists, to be made (the mutex
        held): a thread woken for the parent, unless one is in it"""
        ready = self._ready.get(parent)
        if ready is None:
            ready = self._ready[parent] = collections.deque()
        ready.extend(entries)
        self._reopen(parent)

    def _reopen(self, parent):
        """``parent`` offered to the threads again if it has entries
        ready and room for one more mkdir (the mutex held)"""
        if (
            parent in self._ready
            and parent not in self._opened
            and self._busy.get(parent, 0) < PER_PARENT
        ):
            self._open.append(parent)
            self._opened.add(parent)
            helpers.notify(self._work, every=False)

    # writers --------------------------------------------------------------

    def wait_for(self, root, dirname):
        """on a thread that takes no signal (a writer): wait while
        ``dirname`` is wanted here and not made yet.  Whether it is known
        to exist now; if not, the caller makes it (it was never wanted,
        its mkdir failed here, or the maker stopped)."""
        key = (root, dirname)
        with self._mutex:
            if key not in self._pending or self._stopping:
                event = None
            else:
                event = self._events.get(key)
                if event is None:
                    event = self._events[key] = threading.Event()
        if event is not None:
            while not event.wait(_LOOK_AGAIN):
                if self._stopping:
                    break
        return self._directories.known(root, dirname)

    # the teardown ---------------------------------------------------------

    def stop(self):
        """the teardown's first step, which never waits (and again each of
        ``join()``'s, in case an interrupt cut this one short): nothing
        more is made, and writers waiting make their own"""
        with self._mutex:
            self._stopping = True
            self._ready.clear()
            self._open.clear()
            self._opened.clear()
            self._busy.clear()
            self._children.clear()
            self._pending.clear()
            events = list(self._events.values())
            self._events.clear()
            helpers.notify(self._work)
        for event in events:
            event.set()

    def join(self, interrupted=False):
        """the teardown's last step, after the writers': stopped, and
        every thread joined, each after the mkdir it is in; an interrupt
        meanwhile is returned (helpers.HelperThreads.join)"""
        return self._threads.join(self.stop, interrupted)

    # the threads ----------------------------------------------------------

    def _maker(self):
        # a Ctrl-C is the main thread's, never a mkdir's in progress here
        threadsmod.block_worker_signals()
        try:
            self._make_ready()
        except BaseException:
            # a bug, not a mkdir's failure (those _make() keeps): no
            # writer is left waiting for what this thread took
            self.stop()
            raise

    def _make_ready(self):
        work = self._work
        while True:
            with work:
                while not self._stopping and not self._open:
                    work.wait(_LOOK_AGAIN)
                if self._stopping:
                    return
                parent = self._open.popleft()
                self._opened.discard(parent)
                ready = self._ready.get(parent)
                if not ready:
                    # offered twice (an interrupt in want() on the
                    # applying thread) and taken already
                    continue
                entry = ready.popleft()
                if not ready:
                    del self._ready[parent]
                self._busy[parent] = self._busy.get(parent, 0) + 1
                self._reopen(parent)
            made = self._make(entry)
            with work:
                if self._stopping:
                    return
                left = self._busy[parent] - 1
                if left:
                    self._busy[parent] = left
                else:
                    del self._busy[parent]
                self._reopen(parent)
                key = entry[:2]
                del self._pending[key]
                children = self._children.pop(key, ())
                if made:
                    if children:
                        self._add_ready(key, children)
                else:
                    self._forget(children)
                event = self._events.pop(key, None)
            if event is not None:
                event.set()

    def _forget(self, entries):
        """``entries`` not made here, nor their subdirectories: their
        writers make them (the mutex held)"""
        stack = list(entries)
        while stack:
            key = stack.pop()[:2]
            del self._pending[key]
            stack.extend(self._children.pop(key, ()))
            event = self._events.pop(key, None)
            if event is not None:
                event.set()

    def _make(self, entry):
        """make one directory whose parent exists, as util.makedirs would
        (core's createmode): whether it exists now"""
        root, dirname, createmode, notindexed = entry
        name = os.path.join(root, dirname)
        clock = self._clock
        start = clock()
        made = False
        try:
            util.makedir(name, notindexed)
            made = True
            if createmode is not None:
                os.chmod(name, createmode)
        except FileExistsError:
            # the writer's open finds out if it is no directory
            pass
        except Exception:
            # an OSError, or what a name the system refuses raises (a NUL
            # in it): the writer's own mkdir raises it again, in core's
            # words
            if made:
                # its mode could not be set: gone again, so that the
                # writer makes it, and fails, as core would
                try:
                    os.rmdir(name)
                except OSError:
                    pass
            self._directories.record(root, dirname, None, clock() - start)
            with self._mutex:
                self.failed += 1
            return False
        self._directories.record(root, dirname, made, clock() - start)
        if made:
            with self._mutex:
                self.made += 1
        return True
