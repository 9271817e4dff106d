# journal.py - a stream apply's side of its transaction
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""The files a stream apply registers with its transaction, and the
removal of what a failed apply wrote (docs/design.rst, "Teardown")."""

import os
import threading
import weakref

from mercurial.i18n import _
from mercurial.utils import stringutil

from .. import engine
from ..shared import (
    compat,
    deferredwrite,
    settings,
)
from . import (
    malformed,
    takeback as takebackmod,
)


# transaction -> the applies (weakly) whose own entries its rollback
# leaves to them: one wrapper of its abort for all of them
_JOURNALS = weakref.WeakKeyDictionary()


class ApplyJournal:
    """what a stream apply into ``repo`` tells its transaction, and what
    it takes back; ``describe`` names a path in messages, ``cancelled`` (a
    threading.Event) is set once the apply failed"""

    def __init__(self, repo, describe, cancelled):
        # whether to register the files with the transaction, and the
        # transaction they are registered with (see register())
        self.journaled = settings.journal(repo.ui)
        self._tr = None
        self._svfs = repo.svfs
        self._cancelled = cancelled
        self._registering = threading.Lock()
        # where this apply's entries stand among the transaction's, which
        # are kept in the order they were added: the first one's place,
        # and how many (core's own stream apply adds none while it runs)
        self._first = None
        self._count = 0
        # stream v2 from Mercurial 7.0 on: path -> (store vfs, name) of each
        # file prepared, until it is opened (and registered)
        self.storenames = {}
        # what the stream may write into, as it was, and how to remove
        # what it wrote
        self._takeback = takebackmod.TakeBack(
            repo.ui,
            (
                os.path.normpath(repo.svfs.join(b'')),
                os.path.normpath(repo.cachevfs.join(b'')),
            ),
            describe,
        )
        # the transaction the apply runs in (weakly), and whether it
        # aborted: see committed()
        self._watched = None
        self._aborted = False
        # where the stream writes: an error there is of one of its files
        self.written_roots = tuple(
            root + b'/' for root in self._takeback.before
        )

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
        if tr is None or vfs is not self._svfs:
            return
        try:
            with self._registering:
                # a writer thread may get here as the apply fails, or as
                # its transaction aborts: too late to add anything
                if self._cancelled.is_set() or not tr.running():
                    return
                before = compat.journal_length(tr)
                tr.add(path, 0)
                if compat.journal_length(tr) != before:  # (not known yet)
                    if self._first is None:
                        self._first = before
                    self._count += 1
        except OSError as exc:
            raise engine.FileError(vfs.join(path), exc, 'opening') from exc

    def prepared(self, vfs, path, real):
        """stream v2 from Mercurial 7.0 on: ``path`` of ``vfs`` will be
        written at ``real`` (by write_files): registered once opened"""
        if vfs is self._svfs and self.journaled:
            self.storenames[real] = (vfs, path)

    def store_name(self, real):
        """stream v2 from Mercurial 7.0 on: the (store vfs, name) to
        register for the file about to be written at ``real``, or None"""
        return self.storenames.pop(real, None)

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

    def watch(self, tr, on_abort):
        """the apply runs inside ``tr`` (None: none): register files with
        it if journaled, and have its abort call ``on_abort(tr)``"""
        if tr is None:
            return
        if self.journaled:
            self._tr = tr
            compat.remove_new_files_on_abort(tr)
            self._roll_back_own_entries(tr)
        self._watched = weakref.ref(tr)

        def aborting(tr):
            # a transaction callback: never raises (on_abort neither)
            self._aborted = True
            on_abort(tr)

        # one callback per category: registering again replaces it
        tr.addabort(b'backgroundclose-undo', aborting)

    def _roll_back_own_entries(self, tr):
        """have ``tr``'s rollback leave this apply's own entries to the
        apply: core registers none of a stream's files, so a file the
        system refuses to remove (a read-only directory, a stale mount)
        must not make core's rollback fail where core alone would have
        rolled back.  The take-back, run before it as the abort's
        callback, removed what it could and named the rest; what is left
        of them is removed here, quietly, a refusal left.  ``hg recover``
        after a killed apply still reads every entry.  One wrapper per
        transaction, for every apply that registered with it."""
        journals = _JOURNALS.get(tr)
        if journals is not None:
            journals.append(weakref.ref(self))
            return
        journals = _JOURNALS[tr] = [weakref.ref(self)]
        playback = tr._do_full_abort
        svfs = self._svfs

        def do_full_abort(entries):
            own = set()
            for ref in journals:
                journal = ref()
                if journal is not None:
                    own.update(journal.own_entries(entries))
            for index in own:
                try:
                    svfs.unlink(entries[index][0])
                except OSError:
                    pass  # named by the take-back already
            return playback(
                [e for index, e in enumerate(entries) if index not in own]
            )

        tr._do_full_abort = do_full_abort

    def own_entries(self, entries):
        """the places in ``entries`` (the transaction's journal, in the
        order of its entries) of those this apply added: all of them at
        offset 0, or none if they are not where they were added"""
        if self._first is None:
            return range(0)
        places = range(self._first, self._first + self._count)
        if places.stop > len(entries) or any(
            entries[index][1] for index in places
        ):
            return range(0)
        return places

    def committed(self):
        """whether the transaction the apply ran in committed
        (compat.transaction_committed; gone, it ended, and not by
        aborting).  Read from its state, not from a post-close callback:
        core runs those once its journal is gone, and one that fails
        before ours (warming the caches, a Ctrl-C meanwhile) would hide
        the commit."""
        if self._watched is None or self._aborted:
            return False
        tr = self._watched()
        return tr is None or compat.transaction_committed(tr)

    def end(self):
        """nothing is registered once the apply is over; the transaction
        may outlive the apply (an outer one), which must not keep it"""
        self._tr = None

    def undo(self):
        """remove what the apply wrote; call once every file is closed

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

        Nothing is removed once the transaction committed.
        """
        if self.committed():
            return None
        return self._takeback.undo()
