# filelogs.py - a changegroup's file revlogs applied on threads
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""A changegroup's file revlogs, each applied whole by core's own
``filelog.addgroup`` on a thread of its own, where the store is on a
network file system: there each revlog costs some twenty-five round
trips (lookups, opens, reads, writes, closes), one after the other.

The applying thread reads the changegroup as core does, one revlog's
group after another, and hands each group, read whole into memory, to the
appliers; a group larger than the memory they may hold it applies itself.
The transaction is shared through ``SerialTransaction``: one call at a
time.  Errors are core's, raised on the applying thread once every
applier has ended: the first in the changegroup's order.  See
docs/design.rst, "File revlogs on threads".
"""

import collections
import inspect
import itertools
import sys
import threading

from mercurial.i18n import _
from mercurial import (
    error,
    filelog,
    localrepo,
    requirements as requirementsmod,
    revlog,
    store as storemod,
    transaction as transactionmod,
    util,
    vfs as vfsmod,
)

from .. import engine
from ..engine import helpers
from ..shared import compat, filesystems, messages, seams, settings

# the most applier threads: a revlog's round trips are serial, and at a
# millisecond each some twenty of them overlap the interpreter's work on
# another; more only queue on the interpreter's lock
MOST_THREADS = 16
# the most bytes of groups handed over and not applied yet
HELD = 32 << 20
# what core's _addchangegroupfiles passes on to addgroup, by name, beside
# the repository, the changegroup, the link mapper, the transaction, the
# count of files and the file nodes to check: all of them, in every
# release this extension knows
_PASSED_ON = frozenset(
    ('addrevisioncb', 'debug_info', 'delta_base_reuse_policy',
     'use_hasmeta_flag'))
# the stores whose write path is plain files through the vfs (a file
# index store records each new filelog with the transaction)
# (not the plain store of a repository without one: its names are not
# encoded, and on a file system that ignores case two of them can be one)
_STORES = (storemod.encodedstore, storemod.fncachestore)
# what applying a group runs through, each core's own or core applies:
# the module, the class (looked up as the gate runs: another extension
# may have put a class of its own in its place) and its functions; a
# class a release lacks is not on its path
_APPLY_PATH = (
    (filelog, 'filelog', ('addgroup', '__len__', 'node')),
    (revlog, 'revlog', ('addgroup', '_addrevision', '_writing',
                        '_enforceinlinesize')),
    (revlog, '_InnerRevlog', ('writing', 'write_entry')),
    (vfsmod, 'vfs', ('__call__',)),
)

# where core's store vfs classes are defined
_VFS_HOMES = {'mercurial.store': storemod, 'mercurial.vfs': vfsmod}
# what the appliers run through: loaded before they start
_LOADED_FIRST = (filelog, revlog, storemod, transactionmod, vfsmod)


def applies(repo, orig, trp, extras):
    """whether ``orig`` (core's ``_addchangegroupfiles``, called with
    ``extras`` beside its first six arguments) may be stood in for by
    appliers: writer threads asked for, or by default a store on a network
    file system; a plain store, and every function applying a group runs
    through core's own, with no callback to call back"""
    if set(extras) - _PASSED_ON:
        return False
    if extras.get('addrevisioncb') is not None:
        return False  # sidedata rewriting: core's, in core's order
    if extras.get('debug_info') is not None:
        return False  # --debug's delta statistics: gathered in order
    if repo.ui.configbool(b'debug', b'revlog.debug-delta'):
        return False  # a line a revision, each after its file's
    mode = settings.writes(repo.ui)
    if mode == engine.INLINE:
        return False
    if mode == engine.ADAPTIVE and filesystems.is_local(repo.store.path):
        return False
    if not seams.core_s_function(orig) or type(repo.store) not in _STORES:
        return False
    if requirementsmod.NARROW_REQUIREMENT in repo.requirements:
        return False
    if seams.flag_processors(repo):
        return False  # lfs: its blobs are written elsewhere
    if getattr(trp, '__class__', None) is not transactionmod.transaction:
        return False
    unfi = repo.unfiltered()
    if 'file' in vars(unfi) or not seams.core_s_method(
            type(unfi), 'file', localrepo):
        return False
    # the store's vfs (a proxy that encodes names, or core's vfs): core's
    # class, its open core's own
    svfs = type(repo.svfs)
    home = _VFS_HOMES.get(svfs.__module__)
    if home is None or not seams.core_s_method(svfs, '__call__', home):
        return False
    for module, clsname, names in _APPLY_PATH:
        cls = getattr(module, clsname, None)
        if cls is None and clsname == '_InnerRevlog':
            continue  # 6.5: the revlog writes itself
        if cls is None or cls.__module__ != module.__name__:
            return False
        if not all(seams.core_s_method(cls, name, module) for name in names):
            return False
    return True


# core's _addchangegroupfiles, its parameters before those passed on
_PARAMETERS = ('repo', 'source', 'revmap', 'trp', 'expectedfiles',
               'needfiles')


def arguments(orig, args, kwargs):
    """the arguments of a call of core's _addchangegroupfiles: its six
    first, by position, then a dict of the rest, by name; None where
    they do not bind to its parameters (a release that changed them)"""
    try:
        signature = inspect.signature(orig)
        bound = signature.bind(*args, **kwargs)
    except (TypeError, ValueError):
        return None
    values = bound.arguments
    if tuple(values)[:6] != _PARAMETERS:
        return None
    if any(parameter.kind in (inspect.Parameter.VAR_POSITIONAL,
                              inspect.Parameter.VAR_KEYWORD)
           for parameter in signature.parameters.values()):
        return None
    extras = {name: values[name] for name in tuple(values)[6:]}
    return tuple(values[name] for name in _PARAMETERS) + (extras,)


class SerialTransaction:
    """the transaction as appliers see it: every call made one at a time
    (core's transaction writes its journal and keeps its maps unguarded);
    what is not called is read through"""

    def __init__(self, tr):
        self._tr = tr
        self._lock = threading.RLock()
        # the files this transaction recorded through add()
        self._added = set()

    def add(self, file, offset):
        """core's ``add``, which records a file once, at the first offset
        it is given, and returns at once for it after that: that answer
        given here, without waiting for the lock while another thread's
        call writes the journal (a revlog adds each file again for every
        revision it writes)"""
        if file in self._added:
            return
        with self._lock:
            self._tr.add(file, offset)
        self._added.add(file)

    def __getattr__(self, name):
        value = getattr(self._tr, name)
        if not callable(value):
            return value
        lock = self._lock

        def serialized(*args, **kwargs):
            with lock:
                return value(*args, **kwargs)

        return serialized


class FilelogGroup:
    """one revlog's group of the changegroup: what applying it added, and
    the error it raised (on the thread that applied it, kept for the
    applying thread)"""

    __slots__ = ('name', 'wantnodes', 'deltas', 'size', 'added', 'nodes',
                 'error')

    def __init__(self, name, wantnodes):
        self.name = name
        self.wantnodes = wantnodes  # server.validate checks its nodes
        self.deltas = None
        self.size = 0
        self.added = 0
        self.nodes = ()
        self.error = None

    def apply(self, target, deltas):
        """core's steps for one group, the error kept"""
        try:
            fl = target.filelog(self.name)
            before = len(fl)
            try:
                added = fl.addgroup(deltas, target.revmap, target.tr,
                                    **target.extras)
                if not added:
                    raise error.Abort(
                        _(b"received file revlog group is empty"))
            except error.CensoredBaseError as e:
                raise error.Abort(
                    _(b"received delta base is censored: %s") % e)
            after = len(fl)
            self.added = after - before
            if self.wantnodes:
                self.nodes = [fl.node(rev) for rev in range(before, after)]
        except BaseException as exc:
            self.error = exc


class Target:
    """what every group is applied with"""

    def __init__(self, repo, revmap, tr, extras):
        self.filelog = compat.writable_filelog(repo)
        self.revmap = revmap
        self.tr = tr
        self.extras = extras


class Appliers:
    """the threads that apply groups handed over, started while groups
    wait for one, ``most`` at most, holding ``held`` bytes of groups at
    most; ``finish`` is the one way to end them"""

    def __init__(self, target, most, held):
        self._target = target
        self._most = most
        self.held_most = held
        self._cond = threading.Condition(threading.Lock())
        self._queue = collections.deque()
        self._held = 0
        self._idle = 0
        self._busy = 0  # groups taken and not applied yet
        self._closing = False
        self.failed = False
        self._threads = helpers.HelperThreads(
            self._work, 'backgroundclose-filelogs', engine.Closer.GRACE)

    @property
    def threads(self):
        """the threads started in all"""
        return self._threads.started

    def hand_over(self, group):
        """on the applying thread: ``group`` (read whole, ``size`` bytes
        held) queued for a thread, once the groups held leave room for it;
        False, and not queued, once a group failed"""
        with self._cond:
            while (self._held and self._held + group.size > self.held_most
                   and not self.failed):
                self._cond.wait()
            if self.failed:
                return False
            self._queue.append(group)
            self._held += group.size
            # more groups waiting than threads waiting for one (a thread
            # told of a group may not have run yet: it counts once)
            wanted = (len(self._queue) > self._idle
                      and len(self._threads) < self._most)
            helpers.notify(self._cond, every=False)
        if wanted and not self._threads.spawn() and not len(self._threads):
            # no thread to be had at all: the applying thread applies
            while True:
                with self._cond:
                    group = self._next()
                if group is None:
                    break
                self._apply(group)
        return True

    def settle(self):
        """on the applying thread: once no group waits or is applied (a
        revlog the changegroup names twice is applied after its first
        group, as core applies it); False if a group failed"""
        with self._cond:
            while (self._queue or self._busy) and not self.failed:
                self._cond.wait()
            return not self.failed

    def _next(self):
        """the next group to apply (the lock held), or None: none waits,
        or one failed (the transaction aborts: nothing more starts)"""
        if not self._queue or self.failed:
            return None
        self._busy += 1
        return self._queue.popleft()

    def _apply(self, group):
        deltas, group.deltas = group.deltas, None
        group.apply(self._target, iter(deltas))
        with self._cond:
            self._busy -= 1
            self._held -= group.size
            if group.error is not None:
                self.failed = True
            helpers.notify(self._cond)

    def _work(self):
        while True:
            with self._cond:
                self._idle += 1
                while not (self._queue or self._closing or self.failed):
                    self._cond.wait()
                self._idle -= 1
                # taken in the same hold of the lock as the wait ended: a
                # thread that found work never finds it gone
                group = self._next()
            if group is None:
                return  # closing with none left, or one failed
            self._apply(group)

    def finish(self, failing):
        """every thread ended, after the group it applies: a group half
        applied while the transaction aborts would write into files being
        truncated.  Failing, the groups not started are dropped.  An
        interrupt meanwhile drops them too, and is returned for the
        caller to raise once all have ended."""
        caught = None
        drop = failing
        while True:
            try:
                try:
                    with self._cond:
                        self._closing = True
                        if drop:
                            self._queue.clear()
                        helpers.notify(self._cond)
                    self._threads.wait_all()
                    return caught
                except (KeyboardInterrupt, SystemExit) as exc:
                    drop = True
                    if caught is None:
                        caught = exc
            except (KeyboardInterrupt, SystemExit) as exc:
                # a second one, in the handler above
                drop = True
                if caught is None:
                    caught = exc


def apply_files(orig, repo, source, revmap, trp, expectedfiles, needfiles,
                **extras):
    """core's _addchangegroupfiles, the groups applied by ``Appliers``:
    ``(revisions, files)`` added, as core returns"""
    started = util.timer()
    target = Target(repo, revmap, SerialTransaction(trp), extras)
    _load_fncache(repo)
    compat.load_lazy_modules(_LOADED_FIRST + (
        sys.modules.get(type(repo.store).__module__),
        sys.modules.get(type(repo.svfs).__module__)))
    appliers = Appliers(target, MOST_THREADS, HELD)
    groups = []
    progress = repo.ui.makeprogress(
        _(b'files'), unit=_(b'files'), total=expectedfiles)
    here = 0
    failure = None
    names = set()
    try:
        for chunkdata in iter(source.filelogheader, {}):
            name = chunkdata[b'filename']
            repo.ui.debug(b"adding %s revisions\n" % name)
            progress.increment()
            if name in names and not appliers.settle():
                break  # named twice (never by core's bundler), or failed
            names.add(name)
            group = FilelogGroup(name, name in needfiles)
            groups.append(group)
            deltas, size, rest = _read_group(
                source.deltaiter(), appliers.held_most)
            if rest is None:
                group.deltas, group.size = deltas, size
                if not appliers.hand_over(group):
                    break
            else:
                # more than the appliers may hold: applied here, as core
                # applies it, reading on
                here += 1
                group.apply(target, itertools.chain(deltas, rest))
                if group.error is not None:
                    break
    except BaseException as exc:
        failure = exc
    interrupt = appliers.finish(
        failure is not None or any(g.error is not None for g in groups))
    progress.complete()
    revisions = _outcome(groups, needfiles, failure, interrupt)
    messages.summarize_filelogs(
        repo.ui, len(groups), appliers.threads, here,
        util.timer() - started)
    if needfiles:
        # file nodes expected and never received: core's own check
        orig(repo, _NoGroups(), revmap, trp, 0, needfiles, **extras)
    return revisions, len(groups)


def _read_group(deltas, room):
    """``(read, size, rest)``: the group's deltas read into a list while
    they come to no more than ``room`` bytes (``rest`` None), or up to
    the first past it, the iterator left with the rest"""
    read = []
    size = 0
    for delta in deltas:
        read.append(delta)
        size += compat.inbound_size(delta) + 128  # and its header's worth
        if size > room:
            return read, size, deltas
    return read, size, None


def _outcome(groups, needfiles, failure, interrupt):
    """the revisions the groups added, or what core would have raised
    first: an interrupt, else in the changegroup's order each group's
    error or server.validate's check of its nodes, then ``failure`` (the
    applying thread's, where it stopped)"""
    for exc in [interrupt, failure] + [g.error for g in groups]:
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise exc
    revisions = 0
    for group in groups:
        if group.error is not None:
            raise group.error
        revisions += group.added
        _check_nodes(group, needfiles)
    if failure is not None:
        raise failure
    return revisions


def _check_nodes(group, needfiles):
    """server.validate: the nodes a group added were each expected (a
    revlog named twice: its first group's check went first)"""
    if group.name not in needfiles:
        return
    needs = needfiles[group.name]
    for node in group.nodes:
        if node in needs:
            needs.remove(node)
        else:
            raise error.Abort(_(b"received spurious file revlog entry"))
    if not needs:
        del needfiles[group.name]


class _NoGroups:
    """a changegroup of no file revlog, for core's last check"""

    @staticmethod
    def filelogheader():
        return {}


def _load_fncache(repo):
    """the store's fncache read in before appliers add to it: its first
    read replaces what it holds, and two threads could each read it"""
    fncache = getattr(repo.store, 'fncache', None)
    if fncache is not None:
        # a membership test reads it in, in every release
        b'' in fncache
