# workers.py - core's update workers, each given whole directories
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Core deals an update's files to its forked workers one in N
(``worker.partition``): every worker gets files of every directory, makes
the directories it finds missing (all but the first find them made, a
round trip each on a network file system), and creates its files in the
same directories as the others, where a file system serialises creates in
one directory.  The lists of files an update removes and gets are marked
as core hands them to its workers (``worker.worker``, wrapped), and a
marked list is cut into runs of whole directories, in core's order.  See
docs/design.rst, "The checkout".
"""

import threading

from mercurial import extensions

from ..engine import policy as policymod
from ..shared import compat, settings

# core's worker module is wrapped once per process, by the first update
_wrapped = []
_wrapping = threading.Lock()


class DirectoryRuns(list):
    """an update's actions (``(path, args, message)``, sorted by path),
    as core's update hands them to its workers, to be cut by directory"""

    __slots__ = ()


def applyupdates(orig, repo, *args, **kwargs):
    """core's ``apply_updates`` (wrapped): core's worker module wrapped
    first, here rather than at every command's start, so that it loads
    only in the commands that update"""
    if not _wrapped:
        with _wrapping:
            if not _wrapped:
                from mercurial import worker

                extensions.wrapfunction(worker, 'worker', run_workers)
                extensions.wrapfunction(worker, 'partition', partition)
                _wrapped.append(True)
    return orig(repo, *args, **kwargs)


def run_workers(orig, ui, costperarg, func, staticargs, args, *more,
                **kwargs):
    """core's ``worker.worker`` (wrapped): the files of an update's
    ``batchremove`` or ``batchget`` (known by the function core runs on
    them) marked to be cut by directory, unless the writers are turned
    off (the checkout is then core's, all of it)"""
    if _update_batch(func) and settings.writes(ui) != policymod.INLINE:
        args = DirectoryRuns(args)
    return orig(ui, costperarg, func, staticargs, args, *more, **kwargs)


def _update_batch(func):
    owner = compat.batchget_owner()
    return owner is not None and any(
        func is getattr(owner, name, None)
        for name in ('batchget', 'batchremove')
    )


def partition(orig, items, nslices):
    """core's ``worker.partition`` (wrapped): a marked list by directory;
    any other, or any where another extension partitions too, as before"""
    if type(items) is DirectoryRuns and _is_core_s(orig):
        return by_directory(items, nslices)
    return orig(items, nslices)


def _is_core_s(function):
    return getattr(function, '__module__', None) == 'mercurial.worker'


def by_directory(actions, nslices):
    """``actions`` (an update's, ``(path, args, message)``, sorted by
    path) in ``nslices`` runs, in order.  Each cut is where the files'
    directory changes, at the place nearest an even share of the files,
    within a quarter of a share; where there is none that near (a larger
    directory), the cut goes into it, at the even share."""
    count = len(actions)
    slack = count // nslices // 4
    start = 0
    for i in range(1, nslices):
        even = count * i // nslices
        cut = _directory_change_near(actions, even, slack, start)
        yield actions[start:cut]
        start = cut
    yield actions[start:]


def _directory_change_near(actions, even, slack, start):
    """the index nearest ``even`` (within ``slack``, after ``start``) where
    the files' directory changes, or ``even``"""
    count = len(actions)
    for distance in range(slack + 1):
        for cut in (even + distance, even - distance):
            if start < cut < count and (
                _dirname(actions[cut - 1]) != _dirname(actions[cut])
            ):
                return cut
    return max(even, start)


def _dirname(action):
    return action[0].rpartition(b'/')[0]
