# test_handover.py - unit tests of a file's hand-over to the closer
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""HandedOverFile over a file object (the Python threads' path): who owns
it when an interrupt lands as it is handed over.  DescriptorFile (where the
C module is built): a file written straight into the descriptor the session
owns, until its close hands it over."""

import errno
import gc
import os
import sys
import threading

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))

from mercurial import vfs as vfsmod  # noqa: E402

from hgext3rd.backgroundclose import (  # noqa: E402
    closer as closermod,
    handover,
)


class File:
    """a file object that records which threads closed it"""

    def __init__(self):
        self.closedby = []
        self.closed = False

    def write(self, data):
        return len(data)

    def flush(self):
        pass

    def close(self):
        self.closedby.append(threading.current_thread().name)
        self.closed = True


def python_pool():
    return closermod.Closer(
        policy=closermod.BACKGROUND, native=False, fdroom=None, threads=1,
        owned=set(),
    )


def test_an_interrupt_as_the_closer_begins_leaves_no_file_to_the_collector(
    monkeypatch,
):
    # the signal lands at close()'s first bytecode: the closer never took
    # the file, and nothing else would close it but the garbage collector
    closer = python_pool()
    fp = File()
    proxy = handover.HandedOverFile(fp, closer, b'data/a.i')

    def interrupted(target, name=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(closer, 'close', interrupted)
    with pytest.raises(KeyboardInterrupt):
        proxy.close()
    assert fp.closedby == [threading.current_thread().name]
    monkeypatch.undo()
    closer.finish()


def test_an_interrupt_once_the_closer_holds_the_file_leaves_it_there(
    monkeypatch,
):
    # the signal lands after the hand-over: the file is the closer's, and
    # this thread must not close it too (with the thread's close hung on a
    # dead mount, it would wait on it)
    closer = python_pool()
    fp = File()
    proxy = handover.HandedOverFile(fp, closer, b'data/a.i')
    taken = threading.Event()
    release = threading.Event()
    original = closer._closefn

    def held_close(target):
        taken.set()
        release.wait(10)
        original(target)

    closer._closefn = held_close
    submit = closer.close

    def interrupted_after(target, name=None):
        submit(target, name)
        assert closer.holds(target)  # queued
        with closer._lock:
            closer._work.notify_all()  # one file: no batch wakes a thread
        assert taken.wait(10)
        assert closer.holds(target)  # being closed
        raise KeyboardInterrupt

    monkeypatch.setattr(closer, 'close', interrupted_after)
    with pytest.raises(KeyboardInterrupt):
        proxy.close()
    assert fp.closedby == []
    release.set()
    monkeypatch.undo()
    closer.finish()
    assert fp.closedby == ['backgroundclose-0']
    assert not closer.holds(fp)


def test_a_file_an_interrupt_kept_from_its_close_is_released():
    # the signal lands between core's open and its close (or its with
    # block): the session's release() closes the file object, where the
    # garbage collector would only once nothing holds it any more (a
    # traceback can, for long); what was handed over is the closer's
    closer = python_pool()
    files = handover.OwnedFiles(closer)
    kept, handed, failed = File(), File(), File()
    proxies = [
        handover.HandedOverFile(fp, closer, b'data/%d.i' % i, files=files)
        for i, fp in enumerate((kept, handed, failed))
    ]
    proxies[1].close()
    with pytest.raises(ValueError):
        with proxies[2]:
            raise ValueError('core failed while writing it')
    closer.finish(failing=True)
    files.release()
    assert kept.closedby == [threading.current_thread().name]
    assert handed.closedby == ['backgroundclose-0']
    assert failed.closedby == [threading.current_thread().name]
    files.release()  # each once
    assert len(kept.closedby + handed.closedby + failed.closedby) == 3


# DescriptorFile ----------------------------------------------------------

needs_lane = pytest.mark.skipif(
    not closermod.native_available(),
    reason='the C module (_closelane) is not built for this Python',
)


@pytest.fixture
def direct(tmp_path):
    """(vfs, files, open): ``open(name, mode)`` opens ``name`` through a
    real vfs for a lane that closes in the background, as the seams do,
    asking for a DescriptorFile; the closer is finished afterwards"""
    closer = closermod.Closer(
        policy=closermod.BACKGROUND, native=True, owned=set(), fdroom=None
    )
    files = handover.OwnedFiles(closer)
    vfs = vfsmod.vfs(os.fsencode(str(tmp_path)))
    stat = closermod.OpStat()

    def made(fd, name):
        return handover.DescriptorFile(fd, name, closer, files, stat)

    def opened(name, mode=b'wb'):
        fp, fd = files.open_through(
            vfsmod.vfs.__call__, vfs, name, mode, {}, direct=made
        )
        assert fd is not None  # opened for the lane
        return fp

    yield vfs, files, opened, stat
    files.unwrap()
    closer.finish(failing=True)
    files.release()


@needs_lane
def test_a_file_written_whole_goes_straight_into_its_descriptor(direct):
    vfs, files, opened, stat = direct
    with opened(b'data/a.i') as fp:
        assert type(fp) is handover.DescriptorFile
        fd = fp.fileno()
        assert files.fds == {fd}  # the session's until handed over
        assert fp.write(b'abc') == 3
        assert fp.write(memoryview(b'defg')) == 4
        assert fp.tell() == 7
    # handed over in the step that queued it
    assert files.fds == set()
    assert fp.closed
    fp.close()  # once
    with pytest.raises(ValueError):
        fp.write(b'late')
    files.closer.finish()
    assert vfs.read(b'data/a.i') == b'abcdefg'
    assert stat.bytes == 7


@needs_lane
def test_other_modes_keep_a_file_object_over_the_descriptor(direct):
    vfs, files, opened, _stat = direct
    vfs.write(b'b.i', b'x')
    fp = opened(b'b.i', b'ab')
    assert type(fp) is not handover.DescriptorFile
    files.discard(fp.fileno())


@needs_lane
def test_a_short_write_is_written_to_its_end(direct, monkeypatch):
    # a regular file takes a write whole unless the disk fills; if it
    # takes part, the rest is written after it
    vfs, _files, opened, _stat = direct
    real_write = os.write

    def short(fd, data):
        return real_write(fd, bytes(memoryview(data)[:2]))

    with opened(b'c.i') as fp:
        monkeypatch.setattr(os, 'write', short)
        assert fp.write(b'0123456789') == 10
        monkeypatch.undo()
    _files = direct[1]
    _files.closer.finish()
    assert vfs.read(b'c.i') == b'0123456789'


@needs_lane
def test_a_failed_write_names_the_file_and_closes_it_here(tmp_path):
    closer = closermod.Closer(
        policy=closermod.BACKGROUND, native=True, owned=set(), fdroom=None
    )
    files = handover.OwnedFiles(closer)
    fd = closer.open_owned(b'/dev/full', os.O_WRONLY, 0o666)
    fp = handover.DescriptorFile(fd, b'/dev/full', closer, files)
    with pytest.raises(closermod.FileError) as caught:
        with fp:
            fp.write(b'x')
    assert caught.value.action == 'writing'
    assert caught.value.name == b'/dev/full'
    assert caught.value.error.errno == errno.ENOSPC
    assert files.fds == set()  # closed here, the first error kept
    closer.finish()


@needs_lane
def test_a_file_kept_from_its_close_is_released_and_never_written_again(
    direct,
):
    # an interrupt between core's open and its close: the session's
    # release() closes the descriptor; the number may be reused at once,
    # so the file must refuse any later write
    _vfs, files, opened, _stat = direct
    fp = opened(b'd.i')
    fp.write(b'x')
    files.closer.finish(failing=True)
    files.release()
    assert files.fds == set()
    assert fp.closed
    with pytest.raises(ValueError):
        fp.write(b'y')


@needs_lane
def test_a_file_left_to_the_garbage_collector_is_closed(direct):
    _vfs, files, opened, _stat = direct
    fp = opened(b'e.i')
    fp.write(b'x')
    del fp
    gc.collect()
    assert files.fds == set()
