# compat.py - differences between the Mercurial releases we support
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Every difference between Mercurial releases, detected by feature.

Nothing else in the extension looks at Mercurial's version.
"""

import importlib.util
import inspect
import types
import weakref

from mercurial import (
    bundle2,
    changegroup,
    commands,
    exchange,
    extensions,
    merge as mergemod,
    transaction,
    streamclone,
    util,
    vfs as vfsmod,
)

# Stream formats and the streamclone function that consumes each.  consumev3
# (stream=v3-exp) appeared in Mercurial 6.4; consumev1 and consumev2 are older
# than any release we support.
STREAM_CONSUMERS = tuple(
    (fmt, name)
    for fmt, name in (
        (b'v1', 'consumev1'),
        (b'v2', 'consumev2'),
        (b'v3', 'consumev3'),
    )
    if hasattr(streamclone, name)
)

# Mercurial 7.0 moved the writing of stream v2 files out of consumev2 into
# streamclone._write_files, which writes through raw descriptors (possibly on
# the threads of worker.parallel-stream-bundle-processing).  Before that, v2
# wrote through vfs(name, b'w') like v3 still does.
HAS_WRITE_FILES = hasattr(streamclone, '_write_files')

# The main thread of a (parallel) stream v2 apply prepares each file through
# the vfs before a writer thread writes it (Mercurial 7.0 and later).
HAS_PREPARE_STREAMED_FILE = hasattr(
    vfsmod.abstractvfs, 'prepare_streamed_file'
)

# Core's stream v2 parser is a function of its own, which yields the files
# its writer threads write (Mercurial 7.0 and later).
HAS_V2_PARSER = hasattr(streamclone, '_v2_parse_files')

# core's queue between the thread that reads a parallel apply's stream and
# its parser, with a memory target (Mercurial 7.0 and later)
DATA_QUEUE = getattr(streamclone, '_DataQueue', None)
if not (hasattr(DATA_QUEUE, 'abort') and hasattr(DATA_QUEUE, 'mark_used')):
    DATA_QUEUE = None


def parallel_stream_v2(ui):
    """whether core's writer threads write stream v2 files
    (worker.parallel-stream-bundle-processing, Mercurial 7.0 and later),
    read as consumev2 reads it"""
    return HAS_WRITE_FILES and ui.configbool(
        b'worker', b'parallel-stream-bundle-processing'
    )


# A transaction's abort removes the files registered with it at offset 0
# (Mercurial 6.6 and later).  Mercurial 6.5's abort truncates them instead,
# opening each for appending, which makes a file removed meanwhile again,
# empty; its rollback and recover do remove them.  The same release added
# has_abandoned_transaction, which tells the two apart in every release the
# extension supports.
ABORT_REMOVES_NEW_FILES = hasattr(transaction, 'has_abandoned_transaction')


def transaction_committed(tr):
    """whether the transaction ``tr`` ended by committing: not running,
    its journal gone (core drops it once ``close()`` is done, and once an
    abort is), and not aborted (an abort zeroes its count of users, a
    commit leaves it).  Private attributes of every release from 6.5 to
    7.2; where one is missing, the answer is "not committed", which takes
    a failed apply back as before."""
    if tr.running():
        return False
    if getattr(tr, '_journal', b'') is not None:
        return False
    return getattr(tr, '_usages', 0) > 0


def journal_length(tr):
    """how many entries ``tr``'s journal holds: those added at offset 0
    and the others (private attributes of every release from 6.5 to 7.2)"""
    return len(tr._newfiles) + len(tr._offsetmap)


def remove_new_files_on_abort(tr):
    """make ``tr``'s abort remove the files registered with it at offset 0
    on Mercurial 6.5 too, as later releases do, instead of making them
    again, empty (see ABORT_REMOVES_NEW_FILES).  Files registered at any
    other offset are truncated, as before."""
    if ABORT_REMOVES_NEW_FILES or (
        getattr(tr._do_full_abort, '__func__', None)
        is not type(tr)._do_full_abort
    ):
        # made already, or another extension's: not the class's method.
        # (Asked of the attribute, not of vars(tr): the extension touches
        # no Mercurial object's __dict__, see seams.attached)
        return
    # the class's method, and the transaction by a weak reference: the
    # transaction holding itself would wait for the garbage collector
    full_abort = type(tr)._do_full_abort
    transaction_ref = weakref.ref(tr)

    def unlinking(orig, journal, report, opener, vfsmap, entries,
                  backupentries, unlink=True, **kwargs):
        return orig(journal, report, opener, vfsmap, entries, backupentries,
                    True, **kwargs)

    def do_full_abort(entries):
        with extensions.wrappedfunction(transaction, '_playback', unlinking):
            return full_abort(transaction_ref(), entries)

    tr._do_full_abort = do_full_abort


# The changegroup unpackers that define _unpackmanifests: cg3unpacker adds
# tree manifests (one revlog per directory) after calling cg1unpacker's.
CHANGEGROUP_UNPACKERS = tuple(
    unpacker
    for unpacker in (
        getattr(changegroup, 'cg1unpacker', None),
        getattr(changegroup, 'cg3unpacker', None),
    )
    if unpacker is not None and '_unpackmanifests' in vars(unpacker)
)


def command_table():
    """the command table, with the debug commands in it

    Before Mercurial 7.0 loading ``commands`` filled the table with the
    debug commands too.  Since then each command module registers its own
    commands when it is loaded, and the command line loads them all at
    start (``mercurial.initialization``), but a program that uses
    Mercurial as a library (``hg.clone()`` after loading the extensions,
    as TortoiseHg and build tools do) may never load ``debugcommands``.
    Loading it here makes the table the same in both.
    """
    from mercurial import debugcommands

    # under demandimport the import above is lazy: touching an attribute
    # runs the module, which registers its commands
    getattr(debugcommands, 'init', None)
    return commands.table


def audit(vfs, path, mode):
    """core's audit of ``path`` before ``vfs`` writes it, the first thing
    ``vfs.__call__`` and ``prepare_streamed_file`` do (the same method in
    every release we support)"""
    vfs._auditpath(path, mode)


def missing_seams():
    """the names of the Mercurial internals the extension wraps and this
    Mercurial lacks; empty when the extension can work"""
    missing = []
    if not any(
        b'debugapplystreamclonebundle' in key.lstrip(b'^').split(b'|')
        for key in command_table()
    ):
        missing.append('debugapplystreamclonebundle')
    if not STREAM_CONSUMERS:
        missing.append('streamclone.consumev1/consumev2')
    for owner, name in (
        (vfsmod, 'backgroundfilecloser'),
        (vfsmod.abstractvfs, 'backgroundclosing'),
        (vfsmod.vfs, '__call__'),
        (util, 'makedirs'),
        (util, 'makedir'),
        (vfsmod.vfs, '_auditpath'),
        (streamclone, '_makemap'),
        (changegroup, '_addchangegroupfiles'),
        (changegroup.cg1unpacker, 'apply'),
        (changegroup.cg1unpacker, 'filelogheader'),
        (exchange, 'pull'),
        (mergemod, '_update'),
        (vfsmod.abstractvfs, 'rename'),
        (vfsmod.abstractvfs, 'unlinkpath'),
        (transaction.transaction, 'addbackup'),
    ):
        if not hasattr(owner, name):
            missing.append('%s.%s' % (owner.__name__, name))
    if not CHANGEGROUP_UNPACKERS:
        missing.append('changegroup.cg1unpacker._unpackmanifests')
    return missing


def batchget_owner():
    """the module whose ``batchget`` core's update calls to write the
    files it gets (merge_utils.update from 7.0, merge before), or None:
    the checkout is then core's alone"""
    try:
        from mercurial.merge_utils import update as owner
    except ImportError:
        owner = mergemod
    for module in (owner, mergemod):
        if hasattr(module, 'batchget'):
            return module
    return None


def applyupdates_name(owner):
    """the name of the function of ``owner`` (batchget_owner()) that
    runs ``batchget`` in core's update workers: ``apply_updates`` from
    Mercurial 7.0, ``applyupdates`` before; or None"""
    for name in ('apply_updates', 'applyupdates'):
        if hasattr(owner, name):
            return name
    return None


def part_handlers():
    """bundle2's table of part handlers, filled"""
    try:
        # Mercurial 7.0 moved the handlers to their own module, which
        # registers them when it is imported
        from mercurial import bundle2_part_handlers  # noqa: F401
    except ImportError:
        pass
    return bundle2.parthandlermapping


def open_path(ui, path):
    """open a local path or URL for reading, as `hg unbundle` does"""
    # Mercurial 7.0 renamed hg.openpath to scmutil.open_path
    from mercurial import scmutil

    opener = getattr(scmutil, 'open_path', None)
    if opener is None:
        from mercurial import hg

        opener = hg.openpath
    return opener(ui, path)


def vfs_base(vfs):
    """the directory ``vfs`` opens files in.  A proxy vfs (the store's
    fncache vfs, on which stream v2 prepares its files) has it as an
    attribute of its own only from Mercurial 7.2 on; before, its vfs's"""
    while not hasattr(vfs, 'base') and hasattr(vfs, 'vfs'):
        vfs = vfs.vfs
    return vfs.base


def writable_filelog(repo):
    """how core's _addchangegroupfiles gets a file revlog to add to:
    ``repo.file(name, writable=True)`` where the repository's ``file``
    takes ``writable`` (newer releases), ``repo.file(name)`` where
    it does not (6.5)"""
    try:
        takes = 'writable' in inspect.signature(repo.file).parameters
    except (TypeError, ValueError):
        takes = False
    if takes:
        return lambda name: repo.file(name, writable=True)
    return repo.file


def inbound_size(revision):
    """the bytes a changegroup's revision holds in memory: the delta (and
    any full text read with it) of an ``InboundRevision`` (newer
    releases), the sixth item of a tuple (6.5)"""
    delta = getattr(revision, 'delta', None)
    if delta is None and isinstance(revision, tuple):
        delta = revision[5]
    raw = getattr(revision, 'raw_text', None)
    return len(delta or b'') + len(raw or b'')


def load_lazy_modules(roots):
    """every module that ``roots`` (Mercurial's modules) import, directly
    or through one another of Mercurial's, loaded now if Mercurial's
    demandimport left it to load at its first use: Mercurial's, and those
    of the standard library they name.  Python's lazy loader is not safe
    for threads before Python 3.12.3: two threads that first use a module
    at once, one finds it half run (an ``AttributeError`` of core's
    code).  Threads that run core's code load it first, on one thread."""
    lazy = getattr(importlib.util, '_LazyModule', None)
    seen = set()
    todo = list(roots)
    while todo:
        module = todo.pop()
        if module is None or id(module) in seen:
            continue
        seen.add(id(module))
        if lazy is not None and type(module) is lazy:
            getattr(module, '__doc__', None)  # runs it
        # read without loading it (a lazy module's own reads load it)
        name = types.ModuleType.__getattribute__(module, '__name__')
        if name.startswith('mercurial'):
            todo.extend(value for value in list(vars(module).values())
                        if isinstance(value, types.ModuleType))
