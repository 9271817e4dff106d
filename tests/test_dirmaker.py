# test_dirmaker.py - the directories of files handed to writers, made ahead
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""``DirectoryMaker`` (shared/dirmaker.py), behind ``Directories``
(shared/directories.py), in a temporary directory.  Where a test needs
mkdir to wait (a network file system's round trip) or fail, it wraps
core's ``util.makedir``, which the maker calls, and records which
directory each call made, on which thread, and how many ran at once."""

import errno
import os
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.dirname(__file__))

from mercurial import util  # noqa: E402

from hgext3rd.backgroundclose.engine import threads as threadsmod  # noqa: E402
from hgext3rd.backgroundclose.shared import (  # noqa: E402
    directories as directoriesmod,
    dirmaker,
)
from waiting import true_by  # noqa: E402

MAKER = 'backgroundclose-mkdir'


def soon(condition, seconds=5):
    """whether ``condition()`` holds within ``seconds``"""
    return true_by(time.monotonic() + seconds, condition)


def makers_alive():
    return [t for t in threading.enumerate() if t.name == MAKER]


@pytest.fixture
def root(tmp_path):
    return os.fsencode(str(tmp_path))


@pytest.fixture(autouse=True)
def no_looking_again(monkeypatch):
    """threads and writers look again only after longer than any test
    takes: a notification or an event missed is a failure here, not a
    tenth of a second lost"""
    monkeypatch.setattr(dirmaker, '_LOOK_AGAIN', 30.0)


def waited(directories, root, dirname):
    """``wait_for(dirname)`` on a writer of its own (a pool thread, its
    role recorded): what it returned, or a failure if it still waits
    after 5 seconds"""
    result = []

    def writer():
        threadsmod.take_pool_role()
        result.append(directories.maker.wait_for(root, dirname))
    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    thread.join(5)
    assert result, 'still waiting for %r' % dirname
    return result[0]


class Mkdirs:
    """core's makedir, wrapped: each call waits ``sleep`` seconds first,
    fails with ``failing[name]`` where given, and is recorded (the name
    relative to the root, whether its parent existed as it began, the
    thread); ``peak``: the most at once, ``peak_per_parent``: the most at
    once in one parent directory"""

    def __init__(self, monkeypatch, root, sleep=0.0, failing=None):
        self.root = root
        self.sleep = sleep
        self.failing = failing or {}
        self.lock = threading.Lock()
        self.calls = []
        self.now = 0
        self.peak = 0
        self.parents = {}
        self.peak_per_parent = 0
        self._real = util.makedir
        monkeypatch.setattr(util, 'makedir', self)

    def __call__(self, name, notindexed):
        relative = name[len(self.root) + 1 :]
        parent = os.path.dirname(name)
        with self.lock:
            self.calls.append(
                (relative, os.path.isdir(parent), threading.current_thread()))
            self.now += 1
            self.peak = max(self.peak, self.now)
            inparent = self.parents[parent] = self.parents.get(parent, 0) + 1
            self.peak_per_parent = max(self.peak_per_parent, inparent)
        try:
            time.sleep(self.sleep)
            if relative in self.failing:
                raise self.failing[relative]
            return self._real(name, notindexed)
        finally:
            with self.lock:
                self.now -= 1
                self.parents[parent] -= 1

    def made(self):
        return [call[0] for call in self.calls]


def tree(width, depth):
    """directories ``width`` wide at each level, ``depth`` deep: the leaves
    (relative names, bytes)"""
    level = [b'']
    for _ in range(depth):
        level = [
            (parent + b'/' if parent else b'') + b'd%d' % i
            for parent in level for i in range(width)
        ]
    return level


def finished(directories):
    assert directories.finish_ahead() is None
    assert soon(lambda: not makers_alive(), 5)


# 1. what is made ----------------------------------------------------------

def test_every_directory_wanted_is_made_once_after_its_parent(
        monkeypatch, root):
    """Each leaf of a tree three levels deep is wanted, some twice; each
    directory of the tree is made once, by a maker thread, its parent
    existing as its mkdir began; each is known to the Directories it
    serves, and counted as made ahead."""
    mkdirs = Mkdirs(monkeypatch, root, sleep=0.001)
    directories = directoriesmod.Directories(timed=True, ahead=True, grace=1.0)
    leaves = tree(3, 3)
    for leaf in leaves + leaves[:5]:
        directories.want(root, leaf)
    for leaf in leaves:
        assert waited(directories, root, leaf) or soon(
            lambda leaf=leaf: directories.known(root, leaf), 5)
    assert soon(lambda: len(mkdirs.calls) == 3 + 9 + 27, 5)
    finished(directories)
    made = mkdirs.made()
    assert sorted(made) == sorted(set(made))  # once each
    assert all(parent_existed for _, parent_existed, _ in mkdirs.calls)
    assert {t.name for _, _, t in mkdirs.calls} == {MAKER}
    for leaf in leaves:
        assert os.path.isdir(os.path.join(root, leaf))
        assert directories.known(root, leaf)
    assert directories.ahead[0] == directories.created == 39
    assert directories.stat.count == 39


def test_known_directories_are_not_made_again(monkeypatch, root):
    """A directory the Directories know (made by a writer, or found) is
    not wanted again, nor its parents: only what is below it is made."""
    mkdirs = Mkdirs(monkeypatch, root)
    directories = directoriesmod.Directories(ahead=True, grace=1.0)
    directories.prepare(root, b'a/b')  # on this thread: no maker yet
    assert mkdirs.made() == [b'a', b'a/b']
    directories.want(root, b'a/b/c/d')
    directories.want(root, b'a/b')
    assert soon(lambda: directories.known(root, b'a/b/c/d'), 5)
    finished(directories)
    assert mkdirs.made() == [b'a', b'a/b', b'a/b/c', b'a/b/c/d']


def test_few_mkdirs_at_a_time_in_a_parent_many_across_parents(
        monkeypatch, root):
    """A client's kernel makes one entry of a directory at a time: the
    maker runs at most PER_PARENT mkdirs in one parent (one in the
    kernel, one waiting on its lock), and those of different parents at
    once (each waits 20 ms: a round trip)."""
    mkdirs = Mkdirs(monkeypatch, root, sleep=0.02)
    directories = directoriesmod.Directories(ahead=True, grace=1.0)
    leaves = tree(6, 2)  # 6 parents of 6 each
    for leaf in leaves:
        directories.want(root, leaf)
    assert soon(
        lambda: all(directories.known(root, leaf) for leaf in leaves), 5)
    finished(directories)
    assert mkdirs.peak_per_parent == dirmaker.PER_PARENT
    assert mkdirs.peak >= 2 * dirmaker.PER_PARENT
    assert len(mkdirs.calls) == 42


def test_threads_grow_to_the_cap_not_past_it(monkeypatch, root):
    """Threads start while parents wait for one, up to MOST_THREADS:
    twelve directories in twelve parents that exist, three at a time."""
    monkeypatch.setattr(dirmaker, 'MOST_THREADS', 3)
    directories = directoriesmod.Directories(ahead=True, grace=1.0)
    for i in range(12):
        directories.prepare(root, b'p%d' % i)  # known: made here
    mkdirs = Mkdirs(monkeypatch, root, sleep=0.02)
    for i in range(12):
        directories.want(root, b'p%d/q' % i)
        assert len(makers_alive()) <= 3
    assert soon(lambda: all(
        directories.known(root, b'p%d/q' % i) for i in range(12)))
    assert directories.ahead == (12, 3)
    assert mkdirs.peak == 3
    finished(directories)


def test_createmode_is_core_s(root):
    """A directory made ahead gets the vfs's createmode, as
    util.makedirs gives it, whatever the umask."""
    directories = directoriesmod.Directories(ahead=True, grace=1.0)
    directories.want(root, b'x/y', createmode=0o750)
    assert soon(lambda: directories.known(root, b'x/y'))
    finished(directories)
    for name in (b'x', b'x/y'):
        mode = os.stat(os.path.join(root, name)).st_mode & 0o777
        assert mode == 0o750


# 2. writers ---------------------------------------------------------------

def test_a_writer_waits_for_a_directory_wanted_and_makes_none(
        monkeypatch, root):
    """On a pool thread (a writer: its role recorded), prepare() of a
    directory wanted ahead waits for the maker, and makes nothing itself;
    one never wanted it makes itself, at once."""
    mkdirs = Mkdirs(monkeypatch, root, sleep=0.05)
    directories = directoriesmod.Directories(ahead=True, grace=1.0)
    directories.want(root, b'w/x/y')
    outcome = {}

    def writer():
        threadsmod.take_pool_role()
        directories.prepare(root, b'w/x/y')
        outcome['made'] = os.path.isdir(os.path.join(root, b'w/x/y'))
        directories.prepare(root, b'z')
    thread = threading.Thread(target=writer)
    thread.start()
    thread.join(5)
    assert not thread.is_alive()  # done before the teardown woke it
    finished(directories)
    assert outcome == {'made': True}
    writers_own = [name for name, _, t in mkdirs.calls if t is thread]
    assert writers_own == [b'z']


def test_off_a_pool_thread_prepare_never_waits(monkeypatch, root):
    """The applying thread (no pool role), which takes Ctrl-C, never
    waits on the maker: a directory still being made ahead it makes
    itself (finding it made, or making it first)."""
    mkdirs = Mkdirs(monkeypatch, root, sleep=0.3)
    directories = directoriesmod.Directories(ahead=True, grace=1.0)
    directories.want(root, b'slow')
    start = time.monotonic()
    directories.prepare(root, b'slow')
    assert os.path.isdir(os.path.join(root, b'slow'))
    finished(directories)
    here = [name for name, _, t in mkdirs.calls
            if t is threading.current_thread()]
    assert here == [b'slow']
    assert time.monotonic() - start < 2


# 3. failures --------------------------------------------------------------

def test_a_failed_mkdir_is_the_writer_s_to_make_and_report(
        monkeypatch, root):
    """A mkdir that fails ahead (no space) makes nothing below it; the
    writer waiting for the directory, or one below it, is told to make
    it, and its own mkdir's error is the one raised, as core's would
    be."""
    nospace = OSError(errno.ENOSPC, 'No space left on device')
    mkdirs = Mkdirs(monkeypatch, root, failing={b'f/g': nospace})
    directories = directoriesmod.Directories(ahead=True, grace=1.0)
    directories.want(root, b'f/g/h')
    assert waited(directories, root, b'f/g/h') is False
    assert directories.maker.failed == 1
    assert not os.path.exists(os.path.join(root, b'f/g'))
    assert mkdirs.made() == [b'f', b'f/g']
    outcome = {}

    def writer():
        threadsmod.take_pool_role()
        try:
            directories.prepare(root, b'f/g/h')
        except OSError as exc:
            outcome['errno'] = exc.errno
    thread = threading.Thread(target=writer)
    thread.start()
    thread.join(5)
    finished(directories)
    assert outcome == {'errno': errno.ENOSPC}
    assert not directories.known(root, b'f/g')


def test_a_file_in_the_way_is_found_by_the_writer_s_open(monkeypatch, root):
    """Where a file stands in a directory's place, the mkdir ahead finds
    it existing, as core's makedirs would: what is below it then fails,
    and is the writer's to make, whose error names it."""
    with open(os.path.join(root, b'file'), 'wb'):
        pass
    Mkdirs(monkeypatch, root)
    directories = directoriesmod.Directories(ahead=True, grace=1.0)
    directories.want(root, b'file/below')
    assert waited(directories, root, b'file/below') is False
    with pytest.raises(OSError) as caught:
        directories.prepare(root, b'file/below')
    assert caught.value.errno == errno.ENOTDIR
    finished(directories)


def test_a_mode_that_cannot_be_set_leaves_the_directory_to_the_writer(
        monkeypatch, root):
    """A directory made ahead whose createmode cannot be set is removed
    again: its writer makes it, and fails as core's makedirs would."""
    denied = OSError(errno.EPERM, 'Operation not permitted')

    def chmod(name, mode):
        raise denied
    monkeypatch.setattr(os, 'chmod', chmod)
    directories = directoriesmod.Directories(ahead=True, grace=1.0)
    directories.want(root, b'm', createmode=0o700)
    assert waited(directories, root, b'm') is False
    assert not os.path.exists(os.path.join(root, b'm'))
    finished(directories)


# 4. the teardown -----------------------------------------------------------

def test_stop_wakes_waiting_writers_and_joins_every_thread(
        monkeypatch, root):
    """The teardown, with directories still to make: nothing more is
    made, a writer waiting is woken (not left to look again later: that
    is made to take longer than the test) and told to make its own, and
    every thread is joined."""
    monkeypatch.setattr(dirmaker, '_LOOK_AGAIN', 30.0)
    gate = threading.Event()

    def blocked(name, notindexed):
        gate.wait(5)
        raise OSError(errno.EIO, 'stopped')
    monkeypatch.setattr(util, 'makedir', blocked)
    directories = directoriesmod.Directories(ahead=True, grace=1.0)
    for leaf in tree(2, 3):
        directories.want(root, leaf)
    result = {}

    def writer():
        threadsmod.take_pool_role()
        result['known'] = directories.maker.wait_for(root, b'd0/d0/d0')
    thread = threading.Thread(target=writer)
    thread.start()
    time.sleep(0.05)
    directories.maker.stop()
    thread.join(2)
    assert result == {'known': False}
    gate.set()
    finished(directories)
    assert directories.maker.joined
    # and nothing wanted once stopped is made
    directories.want(root, b'late')
    assert not makers_alive()


def test_join_after_an_interrupt_leaves_a_hung_mkdir_after_the_grace(
        monkeypatch, root):
    """A mkdir that does not return (a network file system that stopped
    answering): after an interrupt, the join waits the grace period for
    it, no more, and leaves the thread to end by itself."""
    release = threading.Event()
    entered = threading.Event()

    def hanging(name, notindexed):
        entered.set()
        release.wait(10)
    monkeypatch.setattr(util, 'makedir', hanging)
    directories = directoriesmod.Directories(ahead=True, grace=0.2)
    directories.want(root, b'hung')
    assert entered.wait(2)
    start = time.monotonic()
    assert directories.finish_ahead(interrupted=True) is None
    assert time.monotonic() - start < 2
    assert makers_alive()
    release.set()
    assert soon(lambda: not makers_alive(), 5)


def test_a_maker_that_made_nothing_is_finished_by_its_teardown(
        monkeypatch, root):
    """A maker whose directories were all known (no thread started) is
    finished by the teardown all the same: the stream's session checks
    that to know its teardown ran to its end."""
    directories = directoriesmod.Directories(ahead=True, grace=1.0)
    directories.prepare(root, b'known')
    directories.want(root, b'known')
    assert directories.maker is not None
    assert directories.maker.started == 0
    assert not directories.ahead_finished
    assert directories.finish_ahead() is None
    assert directories.ahead_finished


def test_no_thread_to_be_had_leaves_the_directories_to_the_writers(
        monkeypatch, root):
    """Where the system starts no thread (a process limit), nothing waits
    for the maker: a writer makes its own directory."""
    from hgext3rd.backgroundclose.engine import helpers
    monkeypatch.setattr(helpers.HelperThreads, 'spawn', lambda self: False)
    directories = directoriesmod.Directories(ahead=True, grace=1.0)
    directories.want(root, b'u/v')
    assert waited(directories, root, b'u/v') is False
    directories.prepare(root, b'u/v')
    assert os.path.isdir(os.path.join(root, b'u/v'))
    finished(directories)


def test_what_else_a_mkdir_raises_is_the_writer_s_to_report(
        monkeypatch, root):
    """A mkdir that raises something else than an OSError (a name the
    system refuses) fails ahead like any other: the maker's thread goes
    on, the writer is told to make it, and its own mkdir raises the
    error to report."""
    refused = ValueError('embedded null byte')
    Mkdirs(monkeypatch, root, failing={b'bad': refused})
    directories = directoriesmod.Directories(ahead=True, grace=1.0)
    directories.want(root, b'bad/below')
    directories.want(root, b'good')
    assert waited(directories, root, b'bad/below') is False
    assert waited(directories, root, b'good') is True
    with pytest.raises(ValueError):
        directories.prepare(root, b'bad/below')
    finished(directories)


def test_only_where_mkdir_may_wait_on_a_network(monkeypatch, root):
    """Unless told, directories are made ahead only below a root that is
    not on a local file system (tmpfs, ext4, ...): there a mkdir never
    waits on a network, and threads would only be more to schedule."""
    for fstype, ahead in ((b'tmpfs', False), (b'ext2', False),
                          (b'nfs', True), (b'fuse.sshfs', True)):
        monkeypatch.setattr(util, 'getfstype', lambda path, t=fstype: t)
        directories = directoriesmod.Directories(grace=1.0)
        directories.want(root, b'%s-dir' % fstype.replace(b'.', b'-'))
        assert (directories.maker is not None) is ahead, fstype
        finished(directories)
