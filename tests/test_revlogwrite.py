# test_revlogwrite.py - the changegroup seam's file objects, on failing paths
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""A revlog opened for the C lane is a buffered file object over a
descriptor it does not own.  When a step fails or is interrupted, the
descriptor is closed on the spot; the file object must never flush what it
still buffers afterwards, into whatever file has taken the number by then
(in the command server, chg or TortoiseHg: any file of the process)."""

import errno
import gc
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))

from hgext3rd.backgroundclose import engine as closermod  # noqa: E402
from hgext3rd.backgroundclose.changegroup import (  # noqa: E402
    revlogs as revlogwrite,
)
from hgext3rd.backgroundclose.shared import (  # noqa: E402
    handedfiles,
    handover,
)

PAYLOAD = b'revlog bytes still buffered\n' * 10


@pytest.fixture
def session(lanerepo):
    session = revlogwrite.RevlogSession(lanerepo)
    yield session
    session.closer.finish(failing=True)


def open_revlog(session, name):
    """a revlog opened for writing as the session's vfs open does it: the
    store's vfs opens it through posixfile(), which opens it for the lane"""
    path = session.rawvfs.join(name)
    os.makedirs(os.path.dirname(path), exist_ok=True)

    def vfsopen(vfs, name, mode):
        # the posixfile seam, bound to the session's files
        return handover.posixfile(session.files, open, vfs.join(name), mode)

    fp, fd = session.files.open_through(
        vfsopen, session.rawvfs, name, b'ab', {}, path
    )
    assert fd is not None and fd in session.files.fds
    revlog = handedfiles.HandedOverFile(
        fp, session.closer, name, fd, session.files
    )
    return revlog, fd


def reuse_number(fd, tmp_path):
    """an unrelated file that takes the number ``fd`` had"""
    other = tmp_path / 'unrelated'
    newfd = os.open(str(other), os.O_WRONLY | os.O_CREAT, 0o644)
    assert newfd == fd, 'the number was not reused: the test proves nothing'
    return other, newfd


def test_interrupted_flush_never_writes_into_a_reused_number(
    session, tmp_path
):
    revlog, fd = open_revlog(session, b'data/a.i')
    revlog.write(PAYLOAD)  # buffered: nothing reached the file yet

    class InterruptedAsItFlushes:
        """the file object, with Ctrl-C landing as its close() begins
        to flush"""

        def __init__(self, fp):
            self.fp = fp

        def close(self):
            raise KeyboardInterrupt

    revlog._fp = InterruptedAsItFlushes(revlog._fp)
    with pytest.raises(KeyboardInterrupt):
        revlog.close()
    assert fd not in session.files.fds
    other, newfd = reuse_number(fd, tmp_path)
    del revlog
    gc.collect()  # finalizes the file object, if anything still holds it
    os.close(newfd)
    assert other.read_bytes() == b''


def test_leftovers_of_a_failed_step_never_write_into_a_reused_number(
    session, tmp_path
):
    # a step fails with a revlog open (an interrupt kept it from the
    # closer): finish() closes the descriptors left in rawfds
    revlog, fd = open_revlog(session, b'data/b.i')
    revlog.write(PAYLOAD)
    session.finish(failing=True)
    assert fd not in session.files.fds
    other, newfd = reuse_number(fd, tmp_path)
    del revlog
    gc.collect()
    os.close(newfd)
    assert other.read_bytes() == b''


@pytest.mark.parametrize(
    'mode',
    # what core's vfs passes (it adds the b), and other spellings open() takes
    [b'r+b', b'wb', b'w+b', b'ab', b'a+b', b'rb+', b'bw', 'r+b', 'wb+', 'ba+'],
)
def test_every_spelling_of_a_mode_opens_as_open_would(session, tmp_path, mode):
    """a file opened for the lane, whatever the spelling of its mode (str
    or bytes, ``b`` anywhere), ends up as open() with that mode leaves it"""
    name = b'data/modes.i'
    path = session.rawvfs.join(name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    reference = tmp_path / 'reference'
    for target in (path, reference):
        with open(target, 'wb') as fp:
            fp.write(b'bytes already there\n')

    def vfsopen(vfs, name, mode):
        return handover.posixfile(session.files, open, vfs.join(name), mode)

    fp, fd = session.files.open_through(
        vfsopen, session.rawvfs, name, mode, {}, path
    )
    assert fd is not None  # opened for the lane, not left to open()
    revlog = handedfiles.HandedOverFile(
        fp, session.closer, name, fd, session.files
    )
    strmode = mode.decode('ascii') if isinstance(mode, bytes) else mode
    with open(reference, strmode) as ref:
        revlog.write(b'appended\n')
        ref.write(b'appended\n')
        if '+' in strmode:  # readable too: what open() reads back
            revlog.seek(0)
            ref.seek(0)
            assert revlog.read() == ref.read()
    revlog.close()
    session.finish(failing=False)
    assert session.rawvfs.read(name) == reference.read_bytes()


@pytest.mark.parametrize('mode', [b'rb', 'rb', b'r', b'xb', 'wt', b'+w'])
def test_other_modes_are_left_to_open(session, tmp_path, mode):
    """modes the lane does not take (reads, exclusive creation, text):
    the posixfile seam leaves them to the function it wraps"""
    name = str(tmp_path / 'other').encode()
    session.files._path = name  # as during open_through()
    try:
        result = handover.posixfile(
            session.files, lambda *args: ('open()', args), name, mode
        )
    finally:
        session.files._path = None
    assert result == ('open()', (name, mode, -1))
    assert session.files.fds == set()


def test_a_revlog_closed_normally_keeps_its_bytes(session, tmp_path):
    revlog, fd = open_revlog(session, b'data/c.i')
    revlog.write(PAYLOAD)
    revlog.close()
    session.finish(failing=False)
    assert session.files.fds == set() and session.files._files == {}
    assert session.rawvfs.read(b'data/c.i') == PAYLOAD


@pytest.mark.skipif(
    not os.path.exists('/dev/full'), reason='needs /dev/full (a full disk)'
)
def test_a_revlog_whose_last_bytes_cannot_be_written_names_itself(session):
    # the disk fills up as the revlog's buffer is flushed on its way to
    # the lane: the error names the file, and its descriptor is closed here
    revlog, fd = open_revlog(session, b'data/d.i')
    full = os.open('/dev/full', os.O_WRONLY)
    os.dup2(full, fd)  # the revlog's number now writes into a full disk
    os.close(full)
    revlog.write(PAYLOAD)
    with pytest.raises(closermod.FileError) as raised:
        revlog.close()
    assert (raised.value.name, raised.value.action) == (b'data/d.i', 'writing')
    assert raised.value.error.errno == errno.ENOSPC
    assert fd not in session.files.fds
    with pytest.raises(OSError) as closed:
        os.fstat(fd)
    assert closed.value.errno == errno.EBADF


def _new_revlog_opens(session, step):
    """run ``step(vfs)`` in ``session``, the vfs seams in place: which
    opens went through ``files.open_through`` (for the lane), by mode"""
    through = []
    real = session.files.open_through

    def spy(orig, vfs, path, mode, kwargs, *args, **kw):
        through.append(mode)
        return real(orig, vfs, path, mode, kwargs, *args, **kw)

    session.files.open_through = spy
    session.run(session.rawvfs, revlogwrite._SESSION_SEAMS, step,
                (session.rawvfs,), {})
    return through


def test_a_new_revlog_fails_r_plus_without_core_then_goes_to_the_lane(
    lanerepo, monkeypatch
):
    # what a revlog does for a file new to the store: its index is read,
    # then opened r+ (which fails again: a stat tells, core's open is not
    # called), then w+
    from mercurial import util

    session = revlogwrite.RevlogSession(lanerepo)
    fds = []
    opened = []
    real = util.posixfile

    def posixfile(name, mode=b'r', *args, **kwargs):
        opened.append(mode)
        return real(name, mode, *args, **kwargs)

    monkeypatch.setattr(util, 'posixfile', posixfile)

    def step(vfs):
        with pytest.raises(FileNotFoundError):
            vfs(b'data/new.i')
        with pytest.raises(FileNotFoundError) as missing:
            vfs(b'data/new.i', b'r+', checkambig=False)
        # what core's open would say
        assert missing.value.filename == vfs.join(b'data/new.i')
        fp = vfs(b'data/new.i', b'w+')
        fds.append(fp._fd)
        fp.write(PAYLOAD)
        fp.close()

    assert _new_revlog_opens(session, step) == [b'w+']
    # the read's, not the r+'s (the w+ is opened for the lane, not by
    # core's posixfile)
    assert opened == [b'rb']
    assert fds[0] is not None  # the lane's
    assert session.rawvfs.read(b'data/new.i') == PAYLOAD


def test_a_revlog_missing_then_made_meanwhile_is_appended_through_core(
    lanerepo
):
    session = revlogwrite.RevlogSession(lanerepo)
    fds = []

    def step(vfs):
        with pytest.raises(FileNotFoundError):
            vfs(b'data/late.i')
        # made by someone else in between: core's r+ open finds it
        os.makedirs(vfs.join(b'data'), exist_ok=True)
        with open(vfs.join(b'data/late.i'), 'wb') as fp:
            fp.write(b'first\n')
        fp = vfs(b'data/late.i', b'r+')
        fds.append(fp._fd)
        fp.seek(0, os.SEEK_END)
        fp.write(b'second\n')
        fp.close()
        # the next r+ of it is the lane's again
        fp = vfs(b'data/late.i', b'r+')
        fds.append(fp._fd)
        fp.seek(0, os.SEEK_END)
        fp.write(b'third\n')
        fp.close()

    assert _new_revlog_opens(session, step) == [b'r+']
    assert fds[0] is None and fds[1] is not None
    assert session.rawvfs.read(b'data/late.i') == b'first\nsecond\nthird\n'


def test_a_revlog_another_extension_wraps_is_handed_over_once(lanerepo):
    # another extension's vfs.__call__ wrapper, under the session's seam,
    # returns its own file object around the revlog the lane's descriptor
    # was opened for: the session's proxy hands that descriptor over, and
    # the file object inside must not do it a second time
    from mercurial import extensions, vfs as vfsmod

    class Wrapped:
        def __init__(self, fp):
            self.fp = fp
            self.seek = fp.seek
            self.tell = fp.tell

        def write(self, data):
            return self.fp.write(data)

        def close(self):
            self.fp.close()

    def wrapper(orig, self, *args, **kwargs):
        return Wrapped(orig(self, *args, **kwargs))

    session = revlogwrite.RevlogSession(lanerepo)
    handed = []
    real = session.closer.close

    def spy(target, name=None, data=None):
        handed.append(target)
        return real(target, name, data)

    session.closer.close = spy

    def step(vfs):
        with pytest.raises(FileNotFoundError):
            vfs(b'data/wrapped.i')
        fp = vfs(b'data/wrapped.i', b'w+')
        assert type(fp) is handedfiles.HandedOverFile
        fp.write(PAYLOAD)
        fp.close()

    extensions.wrapfunction(vfsmod.vfs, '__call__', wrapper)
    try:
        session.run(session.rawvfs, revlogwrite._SESSION_SEAMS, step,
                    (session.rawvfs,), {})
    finally:
        extensions.unwrapfunction(vfsmod.vfs, '__call__', wrapper)
    assert len(handed) == 1 and type(handed[0]) is int
    assert session.rawvfs.read(b'data/wrapped.i') == PAYLOAD
