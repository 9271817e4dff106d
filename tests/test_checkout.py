# test_checkout.py - one working-copy file written whole (checkout/batchget.py)
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""A ``CheckoutFile`` is one whole file operation, the same steps on the
applying thread and on a writer thread: each case runs both ways, as
rustup's ``diskio`` tests run each case against both of its executors.
A real repository here (the path audit, the vfs, core's steps for what is
in the way); test-checkout.t runs whole updates."""

import os
import stat
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))

from hgext3rd.backgroundclose import engine  # noqa: E402
from hgext3rd.backgroundclose.checkout import (  # noqa: E402
    batchget as checkout,
)

WAYS = ['here', 'writers']


@pytest.fixture
def repo(repo_with):
    return repo_with([
        (b'backgroundclosewrites', b'true'),
        (b'backgroundclosemaxthreadcount', b'4'),
        (b'backgroundclosethreshold', b'30'),
    ])


def write(repo, way, files):
    """write ``files`` ({path: (data, executable)}) through one Checkout,
    on the applying thread or on its writers; its filedata"""
    co = checkout.Checkout(repo, repo[None])
    try:
        for path, (data, executable) in files.items():
            repo.wvfs.audit(path)
            item = checkout.CheckoutFile(
                co, path, repo.wvfs.join(path), data, executable
            )
            if way == 'here':
                item.write_here(co.owned)
            else:
                assert co._hand_over(item)
        co.settle()
    finally:
        co.finish(False)
    assert not co.owned
    return co.filedata


@pytest.mark.parametrize('way', WAYS)
def test_data_modes_and_dirstate_data(repo, way):
    filedata = write(repo, way, {
        b'a/b/c/file': (b'data\n', False),
        b'a/run': (b'#!/bin/sh\n', True),
        b'top': (b'', False),
    })
    root = repo.wvfs.join
    assert open(root(b'a/b/c/file'), 'rb').read() == b'data\n'
    umask = os.umask(0)
    os.umask(umask)
    plain = 0o666 & ~umask
    for path, executable, size in (
        (b'a/b/c/file', False, 5), (b'a/run', True, 10), (b'top', False, 0)
    ):
        st = os.lstat(root(path))
        mode, recorded, mtime = filedata[path]
        assert stat.S_ISREG(mode) and mode == st.st_mode
        assert recorded == size == st.st_size
        # core's setflags: execute wherever read is allowed, in the umask
        want = plain | ((plain & 0o444) >> 2 & ~umask) if executable else plain
        assert stat.S_IMODE(st.st_mode) == want
        assert mtime[0] == int(st.st_mtime)


@pytest.mark.parametrize('way', WAYS)
def test_the_dirstate_data_is_read_once_the_file_is_closed(
        repo, way, monkeypatch):
    # the size and mtime the dirstate records must be those of the file as
    # it stays: a file system may set them as the file closes (a flush)
    events = []
    realclose, reallstat = engine.close_owned, os.lstat

    def close_owned(fd, owned):
        events.append(('close', fd))
        realclose(fd, owned)

    def lstat(name, *args, **kwargs):
        events.append(('lstat', name))
        return reallstat(name, *args, **kwargs)

    monkeypatch.setattr(checkout.engine, 'close_owned', close_owned)
    monkeypatch.setattr(checkout.os, 'lstat', lstat)
    write(repo, way, {b'f': (b'x' * 100, True)})
    name = repo.wvfs.join(b'f')
    # the file's own: an audit stats the paths it checks too
    mine = [kind for kind, what in events if what == name or kind == 'close']
    assert mine[:2] == ['close', 'lstat']


@pytest.mark.parametrize('way', WAYS)
def test_what_is_in_the_way_is_replaced_never_written_through(repo, way):
    root = repo.wvfs.join
    os.makedirs(root(b'd'))
    # a symbolic link where the file goes: replaced, its target untouched
    with open(root(b'target'), 'wb') as fp:
        fp.write(b'target\n')
    os.symlink(b'target', root(b'link'))
    # a hard link: the other name keeps its data
    with open(root(b'linked'), 'wb') as fp:
        fp.write(b'old\n')
    os.link(root(b'linked'), root(b'other'))
    # an empty directory where the file goes (core's clearunknown)
    os.makedirs(root(b'dir-here'))
    write(repo, way, {
        b'link': (b'new link\n', False),
        b'linked': (b'new\n', False),
        b'dir-here': (b'was a directory\n', False),
    })
    assert open(root(b'target'), 'rb').read() == b'target\n'
    assert not os.path.islink(root(b'link'))
    assert open(root(b'link'), 'rb').read() == b'new link\n'
    assert open(root(b'other'), 'rb').read() == b'old\n'
    assert open(root(b'linked'), 'rb').read() == b'new\n'
    assert open(root(b'dir-here'), 'rb').read() == b'was a directory\n'


@pytest.mark.parametrize('way', WAYS)
@pytest.mark.parametrize('checkpathconflicts', [False, True])
def test_a_file_where_a_directory_goes_is_as_core_has_it(
        repo, way, checkpathconflicts):
    # core's clearunknown removes it only with merge.checkpathconflicts
    # (off by default): else the write fails, and says where
    repo.ui.setconfig(b'experimental', b'merge.checkpathconflicts',
                      checkpathconflicts, b'test')
    root = repo.wvfs.join
    with open(root(b'here'), 'wb') as fp:
        fp.write(b'in the way\n')
    files = {b'here/inside': (b'below\n', False)}
    if checkpathconflicts:
        write(repo, way, files)
        assert open(root(b'here/inside'), 'rb').read() == b'below\n'
    else:
        with pytest.raises(engine.FileError) as info:
            write(repo, way, files)
        assert info.value.name == root(b'here/inside')
        assert open(root(b'here'), 'rb').read() == b'in the way\n'


@pytest.mark.parametrize('way', WAYS)
def test_a_failure_names_the_file_and_leaves_no_descriptor(repo, way):
    before = set(os.listdir('/proc/self/fd')) if os.path.isdir(
        '/proc/self/fd') else None
    name = b'x' * 300  # longer than a name may be
    with pytest.raises(engine.FileError) as info:
        write(repo, way, {b'ok': (b'1', False), name: (b'2', False)})
    assert info.value.name == repo.wvfs.join(name)
    if before is not None:
        assert set(os.listdir('/proc/self/fd')) <= before


def test_what_fails_on_a_writer_is_said_to_fail_writing(repo, monkeypatch):
    """not "closing", as the closer says of what else fails in a close:
    here a failure that is no OSError, in core's steps (a file in the
    way)"""
    os.makedirs(repo.wvfs.join(b'in-the-way'))
    monkeypatch.setattr(
        checkout.Checkout, 'write_as_core',
        lambda *args: (_ for _ in ()).throw(ValueError('refused')),
    )
    with pytest.raises(engine.FileError) as info:
        write(repo, 'writers', {b'in-the-way': (b'x', False)})
    assert info.value.action == 'writing'
    assert info.value.name == repo.wvfs.join(b'in-the-way')


def test_a_cancelled_checkout_writes_nothing_more(repo):
    co = checkout.Checkout(repo, repo[None])
    co.cancelled.set()
    item = checkout.CheckoutFile(co, b'f', repo.wvfs.join(b'f'), b'x', False)
    item.write_here(co.owned)
    co.finish(True)
    assert not os.path.lexists(repo.wvfs.join(b'f'))
    assert co.filedata == {}


@pytest.mark.parametrize('way', WAYS)
def test_a_file_in_the_way_of_a_deeper_directory_is_core_s_to_handle(
        repo, way):
    # not the file's parent but one above it: making the directories
    # fails, and core's steps (clearunknown, with checkpathconflicts)
    # replace it, as core's update does
    repo.ui.setconfig(b'experimental', b'merge.checkpathconflicts', True,
                      b'test')
    root = repo.wvfs.join
    with open(root(b'here'), 'wb') as fp:
        fp.write(b'in the way\n')
    write(repo, way, {b'here/sub/inside': (b'below\n', False)})
    assert open(root(b'here/sub/inside'), 'rb').read() == b'below\n'


@pytest.mark.parametrize('way', WAYS)
def test_the_executable_mode_is_core_s_from_the_file_s_own_mode(
        repo, way):
    # core's setflags adds execute wherever the new file allows reading,
    # within Mercurial's umask: from the mode the file was made with (a
    # default ACL, here a process umask other than the one Mercurial read
    # at start), not from the umask alone
    hgumask = checkout.util.umask
    old = os.umask(hgumask & ~0o020)  # group may write
    try:
        write(repo, way, {b'run': (b'#!/bin/sh\n', True)})
    finally:
        os.umask(old)
    made = 0o666 & ~(hgumask & ~0o020)
    want = made | ((made & 0o444) >> 2 & ~hgumask)
    assert stat.S_IMODE(os.lstat(repo.wvfs.join(b'run')).st_mode) == want


def test_a_file_an_interrupt_kept_from_the_writers_writes_nothing(repo):
    # the engine discards what an interrupt kept from a pool (descriptors.drop)
    co = checkout.Checkout(repo, repo[None])
    item = checkout.CheckoutFile(co, b'f', repo.wvfs.join(b'f'), b'x' * 10,
                                 False)
    assert co.budget.take(10)
    item.held = 10
    item.discard()
    item.write_here(co.owned)  # too late: nothing left to write
    co.finish(True)
    assert co.budget.held == 0
    assert not os.path.lexists(repo.wvfs.join(b'f'))


def test_core_s_steps_where_another_extension_sees_the_vfs_opens(repo):
    # the checkout makes files without vfs.__call__: where another
    # extension overrides or wraps it, the update stays core's own
    from mercurial import extensions, vfs as vfsmod

    wctx = repo[None]
    assert checkout._applies(repo, wctx, [])

    def seen(orig, *args, **kwargs):
        return orig(*args, **kwargs)

    extensions.wrapfunction(vfsmod.vfs, '__call__', seen)
    try:
        assert not checkout._applies(repo, wctx, [])
    finally:
        extensions.unwrapfunction(vfsmod.vfs, '__call__', seen)

    class Overriding(vfsmod.vfs):
        pass

    repo.wvfs.__class__ = Overriding
    assert not checkout._applies(repo, wctx, [])


class _Revision:
    """what ``get()`` reads of the revision updated to"""

    class _File:
        def data(self):
            return b'x\n'

    def filectx(self, path):
        return self._File()


def test_an_abandoned_checkout_keeps_a_second_interrupt_to_itself(
        repo, monkeypatch):
    """its consumer stopped iterating (interrupted there: a forked update
    worker as it sends its results): closing the generator finishes the
    writers, and an interrupt while they are joined (core's worker pool
    sends SIGTERM to the other workers once one fails) is not raised out
    of the generator's close, where Python could only print it"""
    actions = [(b'd/f%d' % i, (b'', False), b'') for i in range(150)]
    co = checkout.Checkout(repo, repo[None])
    got = co.get(_Revision(), True, actions)
    assert next(got)[0] is False  # progress, 100 files in
    closer = co.writers.closer
    assert closer is not None
    finish = closer.finish

    def interrupted(*args, **kwargs):
        finish(*args, **kwargs)
        raise KeyboardInterrupt  # absorbed while it waited, raised at last

    monkeypatch.setattr(closer, 'finish', interrupted)
    got.close()
    assert co.cancelled.is_set()
    assert closer.finished
    assert not co.owned


def test_a_checkout_that_fails_raises_what_interrupts_its_teardown(
        repo, monkeypatch):
    """the counterpart: not abandoned (it failed itself), an interrupt
    while the writers are joined goes on up"""
    co = checkout.Checkout(repo, repo[None])
    closer = co.writers.started()
    finish = closer.finish

    def interrupted(*args, **kwargs):
        finish(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(closer, 'finish', interrupted)
    with pytest.raises(KeyboardInterrupt):
        co.finish(True)
    assert closer.finished and co.cancelled.is_set()


def test_the_writers_closer_closing_inline_writes_as_the_applying_thread(
        repo, monkeypatch):
    """where the writers' closer closes a file on the applying thread
    (it stops, or no thread could start), the file is the applying
    thread's: its descriptor in the set the teardown closes, counted as
    written there"""
    co = checkout.Checkout(repo, repo[None])
    item = checkout.CheckoutFile(
        co, b'f', repo.wvfs.join(b'f'), b'data', False
    )
    opened = []
    real = checkout.engine.open_owned

    def open_owned(name, flags, owned, *args):
        fd = real(name, flags, owned, *args)
        opened.append(owned is co.owned and fd in owned)
        return fd

    monkeypatch.setattr(checkout.engine, 'open_owned', open_owned)
    item.close()  # as the closer calls it, here
    co.finish(False)
    assert opened == [True]
    ops = co.book.merged()
    assert ops['close'].count == 1 and ops['close-written'].count == 0


def test_core_s_own_failure_keeps_its_class_and_names_the_file():
    from mercurial import error

    # an abort of core's steps on a writer (its audit, say): the same
    # class, so that ui.detailed-exit-code gives core's code
    refused = error.InputError(b"path 'd/f' traverses symbolic link 'd'",
                               hint=b'a hint')
    raised = checkout._core_s_error(engine.FileError(b'/r/d/f', refused))
    assert type(raised) is error.InputError
    assert (raised.message, raised.hint) == (refused.message, b'a hint')
    assert raised is not refused
    # an OSError without a file: named, as a new one
    failed = OSError(5, 'Input/output error')
    raised = checkout._core_s_error(engine.FileError(b'/r/f', failed))
    assert (raised.errno, raised.filename) == (5, b'/r/f')
    assert raised is not failed


def test_actions_given_as_an_iterator_are_each_written(repo):
    """a release (or an extension) that hands batchget an iterator of
    actions, not a list: the checkout reads it once, and every file is
    written and in the dirstate's data"""
    actions = [(b'it/f%d' % i, (b'', False), b'') for i in range(20)]
    co = checkout.Checkout(repo, repo[None])
    final, filedata = list(co.get(_Revision(), True, iter(actions)))[-1]
    assert final is True
    assert sorted(filedata) == sorted(f for f, args, msg in actions)
    for f, args, msg in actions:
        assert repo.wvfs.read(f) == b'x\n'
