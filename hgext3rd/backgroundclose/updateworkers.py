# updateworkers.py - core's update workers, each given whole directories
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
one directory.  While an update applies (core's ``apply_updates``,
wrapped), its workers are given runs of whole directories instead, in
core's order.  See docs/design.rst, "The checkout".
"""

import threading

from mercurial import extensions

from . import settings
from .engine import policy as policymod

# what this thread runs: ``update`` is True while it applies an update
# whose workers get whole directories (recorded here by applyupdates)
_running = threading.local()
# partition is wrapped once per process, by the first update that needs it
_wrapped = []
_wrapping = threading.Lock()


def applyupdates(orig, repo, *args, **kwargs):
    """core's ``apply_updates`` (wrapped): its workers, for the files it
    removes and the files it gets, given whole directories; unless the
    writers are turned off (the checkout is core's then, all of it)"""
    if settings.writes(repo.ui) == policymod.INLINE:
        return orig(repo, *args, **kwargs)
    _wrap_partition()
    previous = getattr(_running, 'update', False)
    _running.update = True
    try:
        return orig(repo, *args, **kwargs)
    finally:
        _running.update = previous


def _wrap_partition():
    # here, not at every command's start: the worker module then loads
    # only in the commands that update
    if _wrapped:
        return
    with _wrapping:
        if not _wrapped:
            from mercurial import worker

            extensions.wrapfunction(worker, 'partition', partition)
            _wrapped.append(True)


def partition(orig, items, nslices):
    """core's ``worker.partition`` (wrapped): by directory while this
    thread applies an update, core's one in N otherwise"""
    if not getattr(_running, 'update', False):
        return orig(items, nslices)
    return by_directory(items, nslices)


def by_directory(actions, nslices):
    """``actions`` (an update's, ``(path, args, message)``, sorted by
    path) in ``nslices`` runs, in order.  Each cut is at the end of a
    directory, the nearest one to an even share of the files, within a
    quarter of a share; where none ends that near (a larger directory),
    the cut goes into it, at the even share."""
    count = len(actions)
    slack = count // nslices // 4
    start = 0
    for i in range(1, nslices):
        even = count * i // nslices
        cut = _directory_end_near(actions, even, slack, start)
        yield actions[start:cut]
        start = cut
    yield actions[start:]


def _directory_end_near(actions, even, slack, start):
    """the index nearest ``even`` (within ``slack``, after ``start``) where
    a directory's files end, or ``even``"""
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
