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
import io
import os
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.dirname(__file__))

from mercurial import vfs as vfsmod  # noqa: E402

from fdcheck import is_open  # noqa: E402
from waiting import interrupted_after  # noqa: E402
from hgext3rd.backgroundclose import engine as closermod  # noqa: E402
from hgext3rd.backgroundclose.shared import (  # noqa: E402
    handedfiles,
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
    proxy = handedfiles.HandedOverFile(fp, closer, b'data/a.i')

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
    proxy = handedfiles.HandedOverFile(fp, closer, b'data/a.i')
    taken = threading.Event()
    release = threading.Event()
    original = closer._pool._closefn

    def held_close(target):
        taken.set()
        release.wait(10)
        original(target)

    closer._pool._closefn = held_close
    submit = closer.close

    def interrupted_after(target, name=None):
        submit(target, name)
        assert closer.holds(target)  # queued
        with closer._pool._lock:
            # one file: no batch wakes a thread
            closer._pool._work.notify_all()
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
        handedfiles.HandedOverFile(fp, closer, b'data/%d.i' % i, files=files)
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


def test_descriptors_kept_from_an_abandoned_closer_are_closed_elsewhere(
    tmp_path
):
    # the closer left a hung close to its thread: the descriptors an
    # interrupt kept from it are not closed here (that could hang too) nor
    # leaked (a command server goes on), but closed on a thread of their
    # own, which then ends
    closer = python_pool()
    files = handover.OwnedFiles(closer)
    fds = [closer.open_owned(str(tmp_path / ('f%d' % n)),
                             os.O_WRONLY | os.O_CREAT) for n in range(3)]
    assert files.fds == set(fds)
    closer.finish(failing=True)
    closer.state = type(closer.state).ABANDONED  # as _abandon() leaves it
    files.release()
    assert files.fds == set()
    deadline = time.monotonic() + 10
    while any(is_open(fd) for fd in fds) or any(
        t.name == 'backgroundclose-release' for t in threading.enumerate()
    ):
        assert time.monotonic() < deadline
        time.sleep(0.001)


# a Ctrl-C that lands in a finalizer ---------------------------------------

class LandingFiles:
    """a session's files as a file's finalizer sees them: a Ctrl-C's
    handler runs as the finalizer first asks which descriptors they own
    (a signal's handler runs at whatever bytecode the main thread is at,
    a finalizer's too)"""

    def __init__(self, files):
        self.files = files
        self.landed = False

    @property
    def fds(self):
        if not self.landed:
            self.landed = True
            raise KeyboardInterrupt
        return self.files.fds

    def __getattr__(self, name):
        return getattr(self.files, name)


def assert_interrupted_after_its_finalizer(made):
    """``made[0]`` is a file left to the garbage collector, with nothing
    else holding it: the Ctrl-C that lands in its finalizer, which can
    raise nothing, is raised once it has returned.  Lost, the command
    would go on: the command server's apply waited for ever on a close
    that hung."""
    landing = made[0]._files = LandingFiles(made[0]._files)
    assert interrupted_after(made.clear)
    assert landing.landed


def test_a_ctrl_c_in_a_proxy_s_finalizer_is_raised_after_it(tmp_path):
    closer = python_pool()
    files = handover.OwnedFiles(closer)
    fd = closer.open_owned(str(tmp_path / 'a.i'), os.O_WRONLY | os.O_CREAT)
    made = [handedfiles.HandedOverFile(
        os.fdopen(fd, 'wb', closefd=False), closer, b'data/a.i', fd, files
    )]
    assert_interrupted_after_its_finalizer(made)
    closer.finish(failing=True)
    files.release()  # what the finalizer left open
    assert files.fds == set()


# DescriptorFile ----------------------------------------------------------

needs_lane = pytest.mark.skipif(
    not closermod.native_available(),
    reason='the C module (_closelane) is not built for this Python',
)


@pytest.fixture
def closes(monkeypatch):
    """the descriptors the closers closed on this thread, in order (a
    number twice is a double close)"""
    closed = []
    real = closermod.close_owned

    def recorded(fd, owned):
        closed.append(fd)
        real(fd, owned)

    # where the closer's own closes look it up
    monkeypatch.setattr(closermod.descriptors, 'close_owned', recorded)
    return closed


@pytest.fixture(
    params=[
        (closermod.BACKGROUND, 'through'),
        (closermod.INLINE, 'through'),
        (closermod.BACKGROUND, 'direct'),
        (closermod.INLINE, 'direct'),
    ],
    ids=['lane-through', 'inline-through', 'lane-direct', 'inline-direct'],
)
def direct(request, tmp_path):
    """an object whose ``open(name, mode=b'wb')`` opens ``name`` asking for
    a DescriptorFile, for a closer on the lane or closing inline; the
    closer is finished afterwards.  ``route``: through a real vfs, as the
    changegroup and update seams do (``open_through``), or as a stream's
    files are (``open_direct``, the name joined by the vfs)."""
    policy, route = request.param

    class Direct:
        closer = closermod.Closer(
            policy=policy, native=True, owned=set(), fdroom=None
        )
        files = handover.OwnedFiles(closer)
        vfs = vfsmod.vfs(os.fsencode(str(tmp_path)))
        stat = closermod.OpStat()
        made = []  # every DescriptorFile made
        hold = 0  # the largest write files made hold for the closer

        def make(self, fd, name):
            fp = handedfiles.DescriptorFile(
                fd, name, self.closer, self.files, self.stat, hold=self.hold
            )
            self.made.append(fp)
            return fp

        def open(self, name, mode=b'wb'):
            if self.route == 'direct' and mode == b'wb':
                joined = self.vfs.join(name)
                os.makedirs(os.path.dirname(joined), exist_ok=True)
                return self.files.open_direct(joined, self.make)
            fp, fd = self.files.open_through(
                vfsmod.vfs.__call__, self.vfs, name, mode, {},
                direct=self.make,
            )
            assert fd is not None  # opened for the lane
            return fp

    made = Direct()
    made.route = route
    yield made
    made.files.unwrap()
    made.closer.finish(failing=True)
    made.files.release()


@needs_lane
def test_a_file_written_whole_goes_straight_into_its_descriptor(
    direct, closes
):
    with direct.open(b'data/a.i') as fp:
        assert type(fp) is handedfiles.DescriptorFile
        fd = fp.fileno()
        assert direct.files.fds == {fd}  # the session's until handed over
        assert fp.write(b'abc') == 3
        assert fp.write(memoryview(b'defg')) == 4
        assert fp.write(bytearray(b'h')) == 1
        assert fp.tell() == 8
    # handed over in the step that queued it, or closed inline
    assert direct.files.fds == set()
    assert fp.closed
    fp.close()
    with pytest.raises(ValueError):
        fp.write(b'late')
    direct.closer.finish()
    assert not is_open(fd)
    # closed once: inline here, or by a lane thread (not recorded)
    background = direct.closer.decisions.policy == closermod.BACKGROUND
    assert closes == ([] if background else [fd])
    assert direct.vfs.read(b'data/a.i') == b'abcdefgh'
    assert direct.stat.bytes == 8


@needs_lane
def test_the_posixfile_wrapper_is_only_removed_between_opens(direct):
    from mercurial import extensions, util

    if direct.route == 'direct':
        pytest.skip('a file opened directly needs no posixfile wrapper')

    def chain():
        return len(extensions.getwrapperchain(util, 'posixfile'))

    before = chain()
    make = direct.make

    def make_while_asked_to_unwrap(fd, name):
        # a session that starts leaving files to core while the vfs opens
        # this one for the lane: posixfile is in use
        direct.files.unwrap_between_opens()
        return make(fd, name)

    direct.make = make_while_asked_to_unwrap
    with direct.open(b'data/a.i') as fp:
        assert direct.files.wraps_posixfile()
        assert chain() == before + 1
        fp.write(b'a')
    direct.files.unwrap_between_opens()
    assert not direct.files.wraps_posixfile()
    assert chain() == before
    # the next open for the lane puts it back
    direct.make = make
    with direct.open(b'data/b.i') as fp:
        assert direct.files.wraps_posixfile()
    assert direct.vfs.read(b'data/a.i') == b'a'


def size_on_disk(fd):
    return os.fstat(fd).st_size


@needs_lane
def test_a_small_file_is_written_by_whoever_closes_it(direct, closes):
    # held until the close: the lane's thread writes it, or the closer
    # here when it closes inline
    direct.hold = 16
    with direct.open(b'data/s.i') as fp:
        fd = fp._fd
        assert fp.write(b'abc') == 3
        assert fp.tell() == 3
        assert size_on_disk(fd) == 0  # held, not written yet
    direct.closer.finish()
    assert not is_open(fd)
    assert direct.vfs.read(b'data/s.i') == b'abc'
    assert direct.stat.bytes == 3


@needs_lane
def test_held_bytes_are_written_here_before_anything_else(direct):
    direct.hold = 16
    # a second write: the held bytes first, then it
    with direct.open(b'two.i') as fp:
        fp.write(b'ab')
        fp.write(b'cd')
        assert size_on_disk(fp._fd) == 4
    # flush() and fileno() write them too
    with direct.open(b'flushed.i') as fp:
        fp.write(b'x')
        fp.flush()
        assert size_on_disk(fp._fd) == 1
    with direct.open(b'numbered.i') as fp:
        fp.write(b'y')
        assert size_on_disk(fp.fileno()) == 1
    # a large file, or one not in bytes, is written straight away
    big = b'z' * 17
    with direct.open(b'big.i') as fp:
        fp.write(big)
        assert size_on_disk(fp._fd) == len(big)
    with direct.open(b'view.i') as fp:
        fp.write(memoryview(b'v'))
        assert size_on_disk(fp._fd) == 1
    direct.closer.finish()
    assert direct.vfs.read(b'two.i') == b'abcd'
    assert direct.vfs.read(b'flushed.i') == b'x'
    assert direct.vfs.read(b'numbered.i') == b'y'
    assert direct.vfs.read(b'big.i') == big
    assert direct.vfs.read(b'view.i') == b'v'


@needs_lane
@pytest.mark.skipif(not os.path.exists('/dev/full'),
                    reason='no /dev/full on this system')
@pytest.mark.parametrize('policy', [closermod.BACKGROUND, closermod.INLINE])
def test_a_held_write_that_fails_names_the_file_and_closes_it(policy):
    # on the lane's thread, raised by the closer later; inline, at once
    owned = set()
    closer = closermod.Closer(
        policy=policy, native=True, owned=owned, fdroom=None
    )
    files = handover.OwnedFiles(closer)
    fd = closer.open_owned(b'/dev/full', os.O_WRONLY, 0o666)
    fp = handedfiles.DescriptorFile(
        fd, b'/dev/full', closer, files, closermod.OpStat(), hold=16
    )
    fp.write(b'x')  # held
    with pytest.raises(closermod.FileError) as caught:
        fp.close()
        closer.finish()
    assert caught.value.action == 'writing'
    assert caught.value.name == b'/dev/full'
    assert caught.value.error.errno == errno.ENOSPC
    closer.finish(failing=True)
    assert owned == set() and not is_open(fd)


@needs_lane
def test_other_modes_keep_a_file_object_over_the_descriptor(direct):
    direct.vfs.write(b'b.i', b'x')
    fp = direct.open(b'b.i', b'ab')
    assert type(fp) is not handedfiles.DescriptorFile
    direct.files.discard(fp.fileno())


@needs_lane
def test_a_short_write_is_written_to_its_end(direct, monkeypatch):
    # a regular file takes a write whole unless the disk fills; if it
    # takes part, the rest is written after it
    real_write = os.write

    def short(fd, data):
        return real_write(fd, bytes(memoryview(data)[:2]))

    with direct.open(b'c.i') as fp:
        monkeypatch.setattr(os, 'write', short)
        assert fp.write(b'0123456789') == 10
        monkeypatch.undo()
    direct.closer.finish()
    assert direct.vfs.read(b'c.i') == b'0123456789'


@needs_lane
def test_a_write_that_writes_nothing_fails_instead_of_spinning(
    direct, monkeypatch
):
    fp = direct.open(b'z.i')
    monkeypatch.setattr(os, 'write', lambda fd, data: 0)
    with pytest.raises(closermod.FileError) as caught:
        with fp:
            fp.write(b'x')
    assert caught.value.error.errno == errno.EIO


@needs_lane
@pytest.mark.skipif(not os.path.exists('/dev/full'),
                    reason='no /dev/full on this system')
@pytest.mark.parametrize('counted', [True, False],
                         ids=['stream', 'working-copy'])
def test_a_failed_write_closes_the_file_here(counted, closes):
    # a stream's file names itself in the error; a working copy's raises
    # what core's file object would
    closer = closermod.Closer(
        policy=closermod.BACKGROUND, native=True, owned=set(), fdroom=None
    )
    files = handover.OwnedFiles(closer)
    fd = closer.open_owned(b'/dev/full', os.O_WRONLY, 0o666)
    stat = closermod.OpStat() if counted else None
    fp = handedfiles.DescriptorFile(fd, b'/dev/full', closer, files, stat)
    with pytest.raises(OSError if not counted else closermod.FileError) as e:
        with fp:
            fp.write(b'x')
    if counted:
        assert e.value.action == 'writing'
        assert e.value.name == b'/dev/full'
        assert e.value.error.errno == errno.ENOSPC
    else:
        assert type(e.value) is OSError
        assert e.value.errno == errno.ENOSPC
    assert files.fds == set()  # closed here, the first error kept
    assert closes == [fd]
    closer.finish()


@needs_lane
def test_a_file_kept_from_its_close_is_released_and_never_written_again(
    direct, closes
):
    # an interrupt between core's open and its close: the session's
    # release() closes the descriptor; the number may be reused at once,
    # so the file must refuse any later write
    fp = direct.open(b'd.i')
    fp.write(b'x')
    direct.closer.finish(failing=True)
    direct.files.release()
    assert direct.files.fds == set()
    assert closes == [fp._fd]
    assert fp.closed
    with pytest.raises(ValueError):
        fp.write(b'y')


@needs_lane
@pytest.mark.parametrize('hold', [0, 16], ids=['written', 'held'])
def test_a_file_left_to_the_garbage_collector_is_closed(direct, closes, hold):
    # written first if its bytes were held, as a file object's finalizer
    # flushes
    direct.hold = hold
    fp = direct.open(b'e.i')
    fp.write(b'x')
    fd = fp._fd
    del fp
    direct.made.clear()
    gc.collect()
    assert direct.files.fds == set()
    assert closes == [fd]
    assert not is_open(fd)
    assert direct.vfs.read(b'e.i') == b'x'


@needs_lane
def test_a_ctrl_c_in_a_descriptor_file_s_finalizer_is_raised_after_it(
    direct
):
    # the fixture's release() closes what the finalizer left open
    direct.open(b'e.i')
    assert_interrupted_after_its_finalizer(direct.made)


def test_at_most_hold_total_bytes_wait_for_the_lane():
    assert handedfiles.hold_limit(384) == handedfiles.HOLD_TOTAL // 384
    assert handedfiles.hold_limit(16) == handedfiles.HOLD_MOST
    assert handedfiles.hold_limit(20000) * 20000 <= handedfiles.HOLD_TOTAL
    assert handedfiles.hold_limit(0) == handedfiles.HOLD_MOST


def assert_the_dropped_file_leaves_its_number_alone(opener, closes, made):
    """``made[0]``, whose open failed, had its descriptor closed once; the
    number goes to the next file ``opener.open()`` opens, and the dropped
    one, collected, leaves it alone (``made[0]`` must be its last
    reference)"""
    fd = made[0]._fd
    assert closes == [fd]
    other = opener.open(b'other.i')
    assert other.fileno() == fd
    del made[0]
    gc.collect()
    assert closes == [fd]
    assert is_open(fd)
    other.close()


@needs_lane
def test_an_interrupt_as_the_file_is_made_closes_its_descriptor_once(
    direct, closes
):
    # the signal lands once the DescriptorFile exists, before the vfs has
    # it: the file is dropped, and its finalizer must not close what the
    # failing open closes
    make = direct.make

    def interrupted(fd, name):
        make(fd, name)
        raise KeyboardInterrupt

    direct.make = interrupted
    with pytest.raises(KeyboardInterrupt):
        direct.open(b'f.i')
    assert direct.files.fds == set()
    direct.make = make
    assert_the_dropped_file_leaves_its_number_alone(
        direct, closes, direct.made
    )


@needs_lane
def test_an_interrupt_in_the_vfs_after_the_open_closes_it_once(
    direct, closes, monkeypatch
):
    # the signal lands in core's vfs after util.posixfile returned (here:
    # as it fixes the new file's mode): the vfs never returns the file
    if direct.route == 'direct':
        pytest.skip("no vfs call after the open (the session's own "
                    "_fixfilemode call: test_session.py)")
    def interrupted(self, name):
        raise KeyboardInterrupt

    monkeypatch.setattr(vfsmod.vfs, '_fixfilemode', interrupted)
    with pytest.raises(KeyboardInterrupt):
        direct.open(b'g.i')
    monkeypatch.undo()
    assert direct.made[0].closed  # never writes into the number again
    assert_the_dropped_file_leaves_its_number_alone(
        direct, closes, direct.made
    )


# a changegroup's revlogs: files that hand their descriptor over themselves


@pytest.fixture
def revlogs(tmp_path):
    """an object whose ``open(name, mode)`` opens ``name`` through a real
    vfs for a closer on the lane, as a changegroup's revlogs are
    (``open_through(handing=...)``); ``onclose``: the names whose close
    called back.  The closer is finished afterwards."""

    class Revlogs:
        closer = closermod.Closer(
            policy=closermod.BACKGROUND, native=True, owned=set(),
            fdroom=None,
        )
        files = handover.OwnedFiles(closer)
        vfs = vfsmod.vfs(os.fsencode(str(tmp_path)))
        onclose = []

        def open(self, name, mode=b'w+'):
            fp, fd = self.files.open_through(
                vfsmod.vfs.__call__, self.vfs, name, mode, {},
                handing=(name, lambda: self.onclose.append(name)),
            )
            assert fd is not None  # opened for the lane
            return fp

    made = Revlogs()
    yield made
    made.files.unwrap()
    made.closer.finish(failing=True)
    made.files.release()


@needs_lane
@pytest.mark.parametrize(
    'mode, kind, before, after',
    [
        (b'w+', handedfiles.HandingOverRandom, b'', b'abcdef'),
        (b'r+', handedfiles.HandingOverRandom, b'0123456789', b'abc3456789def'),
        (b'a+', handedfiles.HandingOverRandom, b'01', b'01abcdef'),
        (b'ab', handedfiles.HandingOverWriter, b'01', b'01abcdef'),
    ],
)
def test_a_revlog_hands_its_descriptor_over_as_it_closes(
    revlogs, closes, mode, kind, before, after
):
    if before:
        revlogs.vfs.write(b'data/a.i', before)
    fp = revlogs.open(b'data/a.i', mode)
    assert type(fp) is kind
    assert handedfiles.hands_itself_over(fp)
    # what core's own file would say
    assert fp.name == revlogs.vfs.join(b'data/a.i')
    binary = mode if b'b' in mode else mode + b'b'  # as the vfs opens
    with open(os.devnull, binary.decode()) as corefile:
        assert fp.mode == corefile.mode
    fd = fp.fileno()
    assert revlogs.files.fds == {fd}  # the session's until handed over
    fp.write(b'abc')
    if mode != b'ab':
        fp.seek(0, os.SEEK_END)
        fp.write(b'def')
        fp.seek(0)
        assert fp.read(3) == {b'w+': b'abc', b'r+': b'abc'}.get(mode, b'01a')
    else:
        fp.write(b'def')
    fp.close()
    # handed over in the step that queued it, then the callback
    assert revlogs.files.fds == set()
    assert revlogs.onclose == [b'data/a.i']
    fp.close()  # a second close does nothing
    assert revlogs.onclose == [b'data/a.i']
    with pytest.raises(ValueError):
        fp.write(b'late')
    revlogs.closer.finish()
    assert closes == []  # the lane's thread closed it
    assert not is_open(fd)
    assert revlogs.vfs.read(b'data/a.i') == after


@needs_lane
def test_a_revlog_opened_unbuffered_keeps_a_proxy(revlogs):
    # open()'s own file then (the raw file itself), for HandedOverFile.
    # Opened as a vfs that opens unbuffered would (core's takes buffering=
    # only from Mercurial 7.0 on)
    from mercurial import util

    def unbuffered(vfs, name, mode):
        return util.posixfile(vfs.join(name), mode, 0)

    fp, fd = revlogs.files.open_through(
        unbuffered, revlogs.vfs, b'b.i', b'w+b', {},
        handing=(b'b.i', None),
    )
    assert fd is not None and not handedfiles.hands_itself_over(fp)
    revlogs.files.discard(fd)


@needs_lane
@pytest.mark.skipif(not os.path.exists('/dev/full'),
                    reason='no /dev/full on this system')
def test_a_revlog_whose_flush_fails_is_closed_here_and_named(closes):
    closer = closermod.Closer(
        policy=closermod.BACKGROUND, native=True, owned=set(), fdroom=None
    )
    files = handover.OwnedFiles(closer)
    fd = closer.open_owned(b'/dev/full', os.O_WRONLY, 0o666)
    fp = handedfiles.handing_file(fd, b'/dev/full', 'wb', files, b'x.i', None)
    files._files[fd] = fp
    fp.write(b'x')  # buffered: the disk is full only once flushed
    with pytest.raises(closermod.FileError) as e:
        fp.close()
    assert e.value.action == 'writing'
    assert e.value.name == b'x.i'
    assert e.value.error.errno == errno.ENOSPC
    assert files.fds == set()  # closed here, the first error kept
    assert closes == [fd]
    assert fp.closed
    closer.finish()


@needs_lane
def test_a_revlog_left_by_a_failing_with_block_is_closed_here(
    revlogs, closes
):
    # the first error wins: nothing is handed over, what was written is
    with pytest.raises(RuntimeError):
        with revlogs.open(b'c.i') as fp:
            fp.write(b'x')
            fd = fp.fileno()
            raise RuntimeError('core failed')
    assert closes == [fd]
    assert revlogs.files.fds == set()
    assert revlogs.onclose == []
    assert revlogs.vfs.read(b'c.i') == b'x'
    # and a with block that ends well hands it over
    with revlogs.open(b'd.i') as fp:
        fp.write(b'y')
    assert closes == [fd]
    assert revlogs.onclose == [b'd.i']


@needs_lane
def test_a_revlog_left_to_the_garbage_collector_is_closed_once(
    revlogs, closes
):
    fp = revlogs.open(b'e.i')
    fp.write(b'x')
    fd = fp.fileno()
    del fp
    gc.collect()
    # flushed, then closed here, as core's file object would be
    assert closes == [fd]
    assert revlogs.files.fds == set()
    assert not is_open(fd)
    assert revlogs.vfs.read(b'e.i') == b'x'
    assert revlogs.onclose == []


@needs_lane
def test_a_ctrl_c_in_a_revlog_s_finalizer_is_raised_after_it(revlogs):
    # the fixture's release() closes what the finalizer left open
    made = [revlogs.open(b'e.i')]
    assert_interrupted_after_its_finalizer(made)


@needs_lane
def test_a_revlog_kept_from_its_close_is_released_and_never_written_again(
    revlogs, closes
):
    fp = revlogs.open(b'f.i')
    fp.write(b'x')
    fd = fp.fileno()
    revlogs.closer.finish(failing=True)
    revlogs.files.release()
    assert revlogs.files.fds == set()
    assert closes == [fd]
    assert fp.closed
    with pytest.raises(ValueError):
        fp.write(b'y')
    # its buffer is forgotten, not written into the number's next file
    other = os.open(revlogs.vfs.join(b'other'), os.O_RDWR | os.O_CREAT)
    try:
        assert other == fd
        del fp
        gc.collect()
        assert os.fstat(other).st_size == 0
        assert closes == [fd]
    finally:
        os.close(other)


def record_made(monkeypatch, interrupt=False):
    """the files ``handing_file`` makes from now on (each call then
    interrupted, if ``interrupt``)"""
    made = []
    real = handedfiles.handing_file

    def recorded(*args):
        made.append(real(*args))
        if interrupt:
            raise KeyboardInterrupt
        return made[-1]

    monkeypatch.setattr(handedfiles, 'handing_file', recorded)
    return made


@needs_lane
def test_an_interrupt_in_the_vfs_after_a_revlog_is_opened_closes_it_once(
    revlogs, closes, monkeypatch
):
    def interrupted(self, name):
        raise KeyboardInterrupt

    made = record_made(monkeypatch)
    monkeypatch.setattr(vfsmod.vfs, '_fixfilemode', interrupted)
    with pytest.raises(KeyboardInterrupt):
        revlogs.open(b'g.i')
    monkeypatch.undo()
    assert made[0].closed  # never writes into the number again
    assert_the_dropped_file_leaves_its_number_alone(revlogs, closes, made)


@needs_lane
def test_a_revlog_interrupted_as_it_flushes_is_closed_here_once(closes):
    closer = closermod.Closer(
        policy=closermod.BACKGROUND, native=True, owned=set(), fdroom=None
    )
    files = handover.OwnedFiles(closer)

    class InterruptedRaw(io.FileIO):
        """Ctrl-C lands in the write that flushes the buffer"""

        def write(self, data):
            raise KeyboardInterrupt

    fd = closer.open_owned(os.devnull.encode(), os.O_WRONLY, 0o666)
    fp = handedfiles.HandingOverWriter(
        InterruptedRaw(fd, 'wb', closefd=False), 8192
    )
    fp._fd, fp._name, fp._files, fp._onclose, fp._armed = (
        fd, b'x.i', files, None, True,
    )
    files._files[fd] = fp
    fp.write(b'x')
    with pytest.raises(KeyboardInterrupt):
        fp.close()
    assert fp.closed  # nothing is ever written into the number again
    assert files.fds == set()
    assert closes == [fd]
    closer.finish()
    assert closes == [fd]


@needs_lane
def test_an_interrupt_as_a_revlog_file_is_made_leaves_the_number_alone(
    revlogs, closes, monkeypatch
):
    # the signal lands once the file object exists, before open_through
    # has it: the open closes the descriptor, and the dropped object must
    # not close the number once the next file has it
    made = record_made(monkeypatch, interrupt=True)
    with pytest.raises(KeyboardInterrupt):
        revlogs.open(b'h.i')
    monkeypatch.undo()
    assert_the_dropped_file_leaves_its_number_alone(revlogs, closes, made)
