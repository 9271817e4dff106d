# takeback.py - removing what a failed stream apply wrote
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""What a stream apply may write into, as it was before it began, and how
to remove what it wrote once it failed (``journal.ApplyJournal.undo``, whose
docstring says when and why)."""

import os

from mercurial.i18n import _
from mercurial import util
from mercurial.utils import stringutil


class TakeBack:
    """the entries below ``roots`` (the store, the cache) as they were
    when it was made, and the removal of every other one; ``describe``
    names a path in messages"""

    def __init__(self, ui, roots, describe):
        self.ui = ui
        self._describe = describe
        # stream clones only go into empty repositories: a handful of
        # entries
        self.before = {
            root: _tree(root) if os.path.isdir(root) else None
            for root in roots
        }
        # files undo() could not remove (path -> OSError), and those it
        # warned about
        self._refused = {}
        self._warned = set()

    def undo(self):
        """remove every entry made since: None, or the one interrupt it
        absorbed (see journal.ApplyJournal.undo)"""
        try:
            self._remove_written()
            return None
        except (KeyboardInterrupt, SystemExit) as exc:
            interrupted = exc
        finally:
            self._warn_refused()
        try:
            self._remove_written()
        finally:
            self._warn_refused()
        return interrupted

    def _remove_written(self):
        # up to a file per revlog, each a round trip on a network file
        # system: minutes for a large repository, so say what is going on
        progress = self.ui.makeprogress(
            _(b'removing the files of the failed stream apply'),
            unit=_(b'files'),
        )
        try:
            self._remove_below_roots(progress)
        finally:
            progress.complete()

    def _remove_below_roots(self, progress):
        for root, before in self.before.items():
            if not os.path.isdir(root):
                continue
            known = before or set()

            def new(path, dirpath, name):
                return path not in known and not (
                    dirpath == root and _owned_by_transaction(name)
                )

            for name in _changelog_first(root):
                path = os.path.join(root, name)
                if new(path, root, name) and not os.path.isdir(path):
                    self._remove(path)
                    progress.increment()
            for dirpath, dirnames, filenames in os.walk(root, topdown=False):
                for name in filenames:
                    path = os.path.join(dirpath, name)
                    if new(path, dirpath, name):
                        self._remove(path)
                        progress.increment()
                for name in dirnames:
                    path = os.path.join(dirpath, name)
                    if path not in known:
                        _tryrmdir(path)
            if before is None:
                _tryrmdir(root)

    def _remove(self, path):
        """remove a file the apply wrote; one the system refuses to remove
        is remembered for the warning"""
        try:
            util.tryunlink(path)
        except OSError as exc:
            self._refused.setdefault(path, exc)

    def _warn_refused(self):
        """one warning for the files undo() could not remove, not warned
        about before (a take-back may run again as the transaction
        aborts)"""
        fresh = [p for p in self._refused if p not in self._warned]
        if not fresh:
            return
        self._warned.update(fresh)
        first = fresh[0]
        self.ui.warn(
            _(b'warning: %d files the failed stream apply wrote could not '
              b'be removed, the first %s: %s\n')
            % (
                len(fresh),
                self._describe(first),
                stringutil.forcebytestr(
                    self._refused[first].strerror or self._refused[first]
                ),
            )
        )
        self.ui.warn(
            _(b'(the repository does not use them: remove them by hand, '
              b'or remove the repository and clone again)\n')
        )


def _changelog_first(root):
    """the changelog's files at ``root``, its index first: once that is
    gone the repository has no revision, whatever else is left.  None if
    ``root`` cannot be listed (the walk that follows says no more)"""
    try:
        names = os.listdir(root)
    except OSError:
        return []
    return sorted(
        (name for name in names if name.startswith(b'00changelog')),
        key=lambda name: (not name.endswith(b'.i'), name),
    )


def _owned_by_transaction(name):
    """whether a store entry belongs to the lock or the transaction"""
    return name == b'lock' or name.startswith(b'journal')


def _tree(root):
    """every file and directory below ``root``"""
    found = set()
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            found.add(os.path.join(dirpath, name))
    return found


def _tryrmdir(path):
    """remove an empty directory, or a symlink standing for one"""
    try:
        if os.path.islink(path):
            os.unlink(path)
        else:
            os.rmdir(path)
    except OSError:
        pass
