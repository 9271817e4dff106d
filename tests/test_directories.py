# the stream apply's directory creation (directories.py), on a real tree
import os
import stat

import pytest

from hgext3rd.backgroundclose.shared import directories


def tree(root):
    found = []
    for dirpath, dirnames, _filenames in os.walk(root):
        for name in dirnames:
            found.append(os.path.relpath(os.path.join(dirpath, name), root))
    return sorted(found)


def test_each_directory_made_once_top_down(tmp_path):
    root = bytes(tmp_path)
    dirs = directories.Directories()
    dirs.prepare(root, b'data/a/b/c')
    dirs.prepare(root, b'data/a/b/d')
    dirs.prepare(root, b'data/a/b/c')
    assert tree(tmp_path) == [
        'data', 'data/a', 'data/a/b', 'data/a/b/c', 'data/a/b/d'
    ]
    assert dirs.created == 5
    assert dirs.existing == 0
    assert dirs.stat.count == 5
    assert dirs.known(root, b'data/a/b')
    assert not dirs.known(root, b'data/x')


def test_existing_directories_found_once(tmp_path):
    os.makedirs(tmp_path / 'data' / 'a')
    root = bytes(tmp_path)
    dirs = directories.Directories()
    dirs.prepare(root, b'data/a/b')
    dirs.prepare(root, b'data/a/c')
    assert dirs.existing == 2  # data, data/a
    assert dirs.created == 2


def test_a_forgotten_directory_is_made_again(tmp_path):
    root = bytes(tmp_path)
    dirs = directories.Directories()
    dirs.prepare(root, b'data/a')
    os.rmdir(tmp_path / 'data' / 'a')
    dirs.forget(root, b'data/a')
    dirs.prepare(root, b'data/a')
    assert os.path.isdir(tmp_path / 'data' / 'a')


def test_createmode_given_to_the_directories_made(tmp_path):
    root = bytes(tmp_path)
    os.makedirs(tmp_path / 'data')
    dirs = directories.Directories()
    dirs.prepare(root, b'data/a/b', createmode=0o2770)
    for name in ('data/a', 'data/a/b'):
        mode = stat.S_IMODE(os.stat(tmp_path / name).st_mode)
        assert mode == 0o2770, (name, oct(mode))
    # one that existed keeps its mode, as with util.makedirs
    assert stat.S_IMODE(os.stat(tmp_path / 'data').st_mode) != 0o2770


def test_a_missing_root_is_made_the_core_way(tmp_path):
    root = bytes(tmp_path / 'store')
    dirs = directories.Directories()
    dirs.prepare(root, b'data/a')
    assert os.path.isdir(tmp_path / 'store' / 'data' / 'a')


def test_memory_bounded_and_forgotten_directories_found_again(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(directories.Directories, 'MOST', 4)
    root = bytes(tmp_path)
    dirs = directories.Directories()
    names = [b'data/d%d/s%d' % (i % 5, i % 3) for i in range(30)]
    for name in names:
        dirs.prepare(root, name)
        assert os.path.isdir(os.path.join(root, name))
        assert sum(len(known) for known in dirs._known.values()) <= 4
    # each directory made once; the forgotten ones cost a mkdir that found
    # them existing
    assert dirs.created == len(set(names)) + 5 + 1  # d0..d4, data
    assert dirs.existing > 0


def test_timed_each_mkdir_counts_once_with_its_duration(tmp_path):
    os.makedirs(tmp_path / 'data')
    root = bytes(tmp_path)
    dirs = directories.Directories(timed=True)
    dirs.prepare(root, b'data/a/b')
    dirs.prepare(root, b'data/a/c')
    # data found, a and b made; then c made
    assert (dirs.created, dirs.existing) == (3, 1)
    assert dirs.stat.count == 4
    assert dirs.stat.seconds > 0
    assert dirs.stat.max <= dirs.stat.seconds


def test_timed_each_mkdir_its_own_time_from_one_clock_read_each(
    tmp_path, monkeypatch
):
    # a clock that moves 1, 2, 3, ... seconds from one read to the next:
    # each mkdir takes from the read that ended the one before it
    reads = []

    def clock():
        reads.append(None)
        return float(sum(range(len(reads) + 1)))

    monkeypatch.setattr(directories.util, 'timer', clock)
    dirs = directories.Directories(timed=True)
    dirs.prepare(bytes(tmp_path), b'data/a/b')
    # reads at 1, 3, 6, 10: mkdirs of 2, 3 and 4 seconds
    assert len(reads) == 4
    assert (dirs.stat.count, dirs.stat.seconds, dirs.stat.max) == (3, 9, 4)
    dirs.prepare(bytes(tmp_path), b'data/c')
    # reads at 15, 21
    assert (dirs.stat.count, dirs.stat.seconds, dirs.stat.max) == (4, 15, 6)


def test_timed_a_failed_mkdir_counts_with_its_time(tmp_path, monkeypatch):
    reads = []

    def clock():  # 1, 3, 6, 10, ...: see the test above
        reads.append(None)
        return float(sum(range(len(reads) + 1)))

    monkeypatch.setattr(directories.util, 'timer', clock)
    (tmp_path / 'data').mkdir()
    (tmp_path / 'data' / 'a').write_bytes(b'a file, not a directory')
    dirs = directories.Directories(timed=True)
    with pytest.raises(OSError):
        dirs.prepare(bytes(tmp_path), b'data/a/b')
    # data and data/a found existing (2 and 3 seconds), data/a/b refused
    # below a file (4 seconds)
    assert (dirs.stat.count, dirs.stat.seconds, dirs.stat.max) == (3, 9, 4)


def test_a_failed_mkdir_keeps_what_was_made_before_it_known(tmp_path):
    root = bytes(tmp_path)
    (tmp_path / 'data').mkdir()
    (tmp_path / 'data' / 'a').write_bytes(b'a file, not a directory')
    dirs = directories.Directories()
    try:
        dirs.prepare(root, b'data/a/b/c')
    except OSError:
        pass
    else:
        raise AssertionError('a directory made below a file')
    # data existed, data/a is a file (found existing by mkdir), data/a/b
    # cannot be made below it: what mkdir found is known, nothing more
    assert dirs.known(root, b'data')
    assert dirs.known(root, b'data/a')
    assert not dirs.known(root, b'data/a/b')
    assert not dirs.known(root, b'data/a/b/c')
    assert (dirs.created, dirs.existing) == (0, 2)
    assert dirs.stat.count == 3  # every mkdir, the one that failed too
    # made later, below a real directory, without a second mkdir of those
    dirs.prepare(root, b'data/x')
    assert dirs.created == 1
    assert dirs.stat.count == 4


def test_an_absolute_name_inside_the_root_is_made_as_it_is(tmp_path):
    # what os.path.join(root, name) has it: the audit lets an absolute
    # name through if it is inside the vfs's base
    root = bytes(tmp_path)
    dirs = directories.Directories()
    dirs.prepare(root, root + b'/cache/sub')
    assert os.path.isdir(tmp_path / 'cache' / 'sub')
    assert tree(tmp_path) == ['cache', 'cache/sub']
