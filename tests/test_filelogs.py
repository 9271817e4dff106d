# test_filelogs.py - a changegroup's file revlogs applied on threads
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Pulls whose file revlogs are applied on threads (changegroup/
filelogs.py), each against core's pull of the same revisions into the
same repository: the same store, byte for byte; core's error, at core's
file, when a revlog cannot be written, and the store as before the pull;
no thread left after an interrupt; and core's own path wherever another
extension or a setting could see the difference."""

import errno
import os
import subprocess
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))

from mercurial import (  # noqa: E402
    changegroup,
    commands,
    error,
    exchange,
    extensions,
    filelog,
    hg,
    ui as uimod,
    util,
)
from mercurial.revlogutils import flagutil  # noqa: E402

try:
    # what hg's own start registers (newer releases): the bundle2 part
    # handlers a pull applies with
    from mercurial import initialization  # noqa: E402
except ImportError:  # 6.5: registered by bundle2 itself
    initialization = None
else:
    initialization.init()

from hgext3rd.backgroundclose.changegroup import (  # noqa: E402
    filelogs,
    revlogs,
)
from hgext3rd.backgroundclose.shared import compat, messages  # noqa: E402

THREAD_NAME = 'backgroundclose-filelogs'


def make_ui(writes=b'true'):
    ui = uimod.ui.load()
    ui.setconfig(b'ui', b'quiet', b'yes', b'test')
    if writes is not None:
        ui.setconfig(b'worker', b'backgroundclosewrites', writes, b'test')
    return ui


def commit(ui, repo, message):
    commands.commit(ui, repo, addremove=True, message=message,
                    user=b'test', date=b'0 0')


def write(root, name, data):
    path = os.path.join(root, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'wb') as fp:
        fp.write(data)


@pytest.fixture(scope='module')
def source(tmp_path_factory):
    """a repository of 60 files in 6 directories, then a revision that
    changes them all, adds 10 and removes 5; ``big`` grows past
    what an inline revlog holds (core splits it in the pull)"""
    root = str(tmp_path_factory.mktemp('filelogs') / 'src')
    ui = make_ui(writes=None)
    repo = hg.repository(ui, os.fsencode(root), create=True)
    for i in range(60):
        write(root, 'd%d/f%d' % (i % 6, i), b'file %d\n' % i)
    write(root, 'big', os.urandom(90 << 10))
    commit(ui, repo, b'one')
    for i in range(60):
        write(root, 'd%d/f%d' % (i % 6, i), b'file %d\nchanged\n' % i)
    for i in range(60, 70):
        write(root, 'new/d%d/f%d' % (i % 4, i), b'new %d\n' % i)
    for i in range(1, 60, 12):
        os.unlink(os.path.join(root, 'd%d/f%d' % (i % 6, i)))
    with open(os.path.join(root, 'big'), 'ab') as fp:
        fp.write(os.urandom(90 << 10))
    commit(ui, repo, b'two')
    for i in range(0, 60, 7):
        if os.path.exists(os.path.join(root, 'd%d/f%d' % (i % 6, i))):
            write(root, 'd%d/f%d' % (i % 6, i), b'file %d\nthree\n' % i)
    commit(ui, repo, b'three')
    return root


@pytest.fixture
def stepped():
    """the extension's changegroup step in place, as extsetup puts it"""
    extensions.wrapfunction(changegroup, '_addchangegroupfiles',
                            revlogs.step)
    yield
    extensions.unwrapfunction(changegroup, '_addchangegroupfiles',
                              revlogs.step)


@pytest.fixture
def summaries(monkeypatch):
    """each summarize_filelogs call's (revlogs, threads, here)"""
    seen = []
    real = messages.summarize_filelogs

    def recording(ui, revlogs, threads, here, seconds):
        seen.append((revlogs, threads, here))
        return real(ui, revlogs, threads, here, seconds)

    monkeypatch.setattr(messages, 'summarize_filelogs', recording)
    return seen


def clone_first(ui, source, dest):
    """a store-only clone of ``source``'s first revision at ``dest``"""
    hg.clone(ui, {}, os.fsencode(source), os.fsencode(dest),
             revs=[b'0'], update=False, pull=True)
    return hg.repository(ui, os.fsencode(dest))


def pull(ui, repo, source):
    exchange.pull(repo, hg.peer(ui, {}, os.fsencode(source)))


def store_state(root):
    """the store's files, byte for byte, and its fncache's entries (in
    no order: core keeps them in a set); empty files left out"""
    store = os.path.join(os.fsdecode(root), '.hg', 'store')
    state = {}
    for directory, _dirs, files in os.walk(store):
        for name in files:
            path = os.path.join(directory, name)
            rel = os.path.relpath(path, store)
            if rel.startswith(('undo', 'journal', 'lock')):
                continue
            with open(path, 'rb') as fp:
                data = fp.read()
            if not data:
                # a file new to a transaction that aborted: 6.5 truncates
                # it, later releases remove it
                continue
            if rel == 'fncache':
                data = sorted(data.splitlines())
            state[rel] = data
    return state


def appliers_alive():
    return [t for t in threading.enumerate() if t.name == THREAD_NAME]


def core_pull(repo, source):
    """core's own pull, the step out of the way meanwhile"""
    extensions.unwrapfunction(changegroup, '_addchangegroupfiles',
                              revlogs.step)
    try:
        pull(make_ui(), repo, source)
    finally:
        extensions.wrapfunction(changegroup, '_addchangegroupfiles',
                                revlogs.step)


def two_clones(tmp_path, source, name):
    """two store-only clones of ``source``'s first revision: core's to
    pull into, and the extension's"""
    core = clone_first(make_ui(), source, str(tmp_path / ('core-' + name)))
    ext = clone_first(make_ui(), source, str(tmp_path / name))
    return core, ext


def test_a_pull_on_threads_writes_what_core_writes(
        tmp_path, source, stepped, summaries, monkeypatch):
    core, ext = two_clones(tmp_path, source, 'ext')
    core_pull(core, source)
    loaded = []
    real_load = compat.load_lazy_modules
    monkeypatch.setattr(compat, 'load_lazy_modules',
                        lambda roots: loaded.extend(roots) or real_load(roots))
    pull(make_ui(), ext, source)
    # core's modules loaded before the appliers ran them
    assert filelog in loaded
    revlogs_, threads, here = summaries[-1]
    assert threads >= 1 and revlogs_ > 30 and here == 0
    assert store_state(core.root) == store_state(ext.root)
    assert not appliers_alive()
    # the pull split an inline revlog (a backup, a temporary index, a
    # rename at the transaction's end)
    assert 'data/big.d' in store_state(ext.root)


def test_a_group_too_large_to_hold_is_applied_on_the_applying_thread(
        tmp_path, source, stepped, summaries, monkeypatch):
    monkeypatch.setattr(filelogs, 'HELD', 64 << 10)
    core, ext = two_clones(tmp_path, source, 'ext')
    core_pull(core, source)
    pull(make_ui(), ext, source)
    revlogs_, threads, here = summaries[-1]
    assert here == 1 and threads >= 1
    assert store_state(core.root) == store_state(ext.root)


@pytest.fixture
def failing_opens(monkeypatch):
    """``fail(repos, names, after)``: opening any of the files ``names``
    in the stores of ``repos`` for writing raises EIO; those in ``after``
    only once every other of ``names`` failed (or after 10 s, a loaded
    machine's worst).  Returns the names that failed."""
    real = util.posixfile

    def fail(repos, names, after=()):
        failed = []
        stores = tuple(os.path.join(repo.root, b'.hg', b'store', b'data')
                       for repo in repos)
        others_failed = threading.Event()
        if not set(names) - set(after):
            others_failed.set()

        def posixfile(path, mode='rb', *args, **kwargs):
            writing = pycompat_mode(mode) not in ('r', 'rb')
            if writing and path.startswith(stores):
                for name in names:
                    if path.endswith(b'/' + name):
                        if name in after:
                            others_failed.wait(10)
                        failed.append(name)
                        if set(names) - set(after) <= set(failed):
                            others_failed.set()
                        raise OSError(errno.EIO, 'injected failure',
                                      os.fsdecode(path))
            return real(path, mode, *args, **kwargs)

        monkeypatch.setattr(util, 'posixfile', posixfile)
        return failed

    return fail


def pycompat_mode(mode):
    return mode.decode('ascii') if isinstance(mode, bytes) else mode


def pull_error(repo, source, core=False):
    """the error a pull of ``source`` into ``repo`` raised"""
    with pytest.raises(Exception) as raised:
        (core_pull(repo, source) if core
         else pull(make_ui(), repo, source))
    return raised.value


@pytest.mark.parametrize('names, after', [
    # one revlog that cannot be written
    ([b'f24.i'], ()),
    # two: the first in the changegroup's order fails last, on a thread
    # of its own; its error is the one raised, as core's is
    ([b'f12.i', b'f48.i'], (b'f12.i',)),
])
def test_a_revlog_that_cannot_be_written_aborts_as_core_does(
        tmp_path, source, stepped, failing_opens, names, after):
    core, ext = two_clones(tmp_path, source, 'ext')
    before = store_state(ext.root)
    # core fails at the first and opens no other: no waiting there
    failing_opens((core,), names)
    core_error = pull_error(core, source, core=True)
    failed = failing_opens((ext,), names, after)
    ext_error = pull_error(ext, source)
    # each failed, in the order asked for
    assert failed == sorted(names, key=lambda n: n in after)
    assert type(ext_error) is type(core_error)
    # core's message, naming the same file, the first in the changegroup
    assert ext_error.filename.startswith(os.fsdecode(ext.root))
    assert ext_error.filename.endswith(os.fsdecode(names[0]))
    assert (str(ext_error).replace('/ext/', '/core-ext/')
            == str(core_error))
    # the transaction rolled back: the store as it was
    assert store_state(ext.root) == before
    assert not appliers_alive()


def test_after_a_failure_no_group_waiting_for_a_thread_is_applied(
        tmp_path, source, stepped, monkeypatch):
    _core, ext = two_clones(tmp_path, source, 'ext')
    store = os.path.join(ext.root, b'.hg', b'store', b'data')
    real = util.posixfile
    opened = []

    def posixfile(path, mode='rb', *args, **kwargs):
        if (pycompat_mode(mode) not in ('r', 'rb')
                and path.startswith(store)):
            opened.append(path)
            if len(opened) == filelogs.MOST_THREADS + 1:
                # once every thread took a group: the rest wait in line
                raise OSError(errno.EIO, 'injected failure',
                              os.fsdecode(path))
            time.sleep(0.05)
        return real(path, mode, *args, **kwargs)

    monkeypatch.setattr(util, 'posixfile', posixfile)
    applied = []
    real_apply = filelogs.FilelogGroup.apply

    def counted_apply(group, target, deltas):
        applied.append(group.name)
        return real_apply(group, target, deltas)

    monkeypatch.setattr(filelogs.FilelogGroup, 'apply', counted_apply)
    with pytest.raises(OSError):
        pull(make_ui(), ext, source)
    assert len(ext.changelog) == 1
    # those under way on a thread when it failed, at most: of some 70
    assert len(applied) <= 2 * filelogs.MOST_THREADS
    assert not appliers_alive()


def test_an_interrupt_midway_joins_every_applier_and_rolls_back(
        tmp_path, source, stepped, summaries, monkeypatch):
    _core, ext = two_clones(tmp_path, source, 'ext')
    before = store_state(ext.root)
    real_open = util.posixfile
    release = threading.Event()

    def held_open(path, mode='rb', *args, **kwargs):
        if (b'/data/' in path and pycompat_mode(mode) not in ('r', 'rb')):
            # every applier holds its first group until after the
            # interrupt: the others wait in line
            release.wait(10)
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr(util, 'posixfile', held_open)
    made = []
    real_init = filelogs.Appliers.__init__

    def recorded_init(appliers, *args):
        made.append(appliers)
        real_init(appliers, *args)

    monkeypatch.setattr(filelogs.Appliers, '__init__', recorded_init)
    real_header = changegroup.cg1unpacker.filelogheader
    read = []
    waiting = []
    interrupted = []

    def interrupted_header(self):
        read.append(1)
        if len(read) == 60:
            waiting.append(len(made[0]._queue))
            interrupted.append(True)
            # the appliers go on once the interrupt had time to drop the
            # groups in line
            threading.Timer(0.5, release.set).start()
            raise KeyboardInterrupt()
        return real_header(self)

    monkeypatch.setattr(changegroup.cg1unpacker, 'filelogheader',
                        interrupted_header)
    started_after = []
    real_apply = filelogs.FilelogGroup.apply

    def counted_apply(group, target, deltas):
        if interrupted:
            started_after.append(group.name)
        return real_apply(group, target, deltas)

    monkeypatch.setattr(filelogs.FilelogGroup, 'apply', counted_apply)
    with pytest.raises(KeyboardInterrupt):
        pull(make_ui(), ext, source)
    assert waiting and waiting[0] >= 20, 'no group waited at the interrupt'
    assert not appliers_alive()
    assert store_state(ext.root) == before
    # the groups in line were dropped: none started after the interrupt
    assert started_after == []


@pytest.fixture
def split_group(monkeypatch):
    """``split(name)``: every changegroup read names the file revlog
    ``name`` twice, its group cut in two (core's bundler never does; a
    crafted bundle may)"""

    def split(name):
        real_header = changegroup.cg1unpacker.filelogheader
        real_deltas = changegroup.cg1unpacker.deltaiter
        state = {}

        def filelogheader(self):
            if state.get('second') is not None:
                header, state['second'] = state['second'], None
                state['rest'] = state.pop('later')
                return header
            header = real_header(self)
            if header and header[b'filename'] == name:
                deltas = list(real_deltas(self))
                cut = max(1, len(deltas) // 2)
                state['now'], state['later'] = deltas[:cut], deltas[cut:]
                state['second'] = dict(header)
            return header

        def deltaiter(self):
            for key in ('now', 'rest'):
                if key in state:
                    return iter(state.pop(key))
            return real_deltas(self)

        monkeypatch.setattr(changegroup.cg1unpacker, 'filelogheader',
                            filelogheader)
        monkeypatch.setattr(changegroup.cg1unpacker, 'deltaiter', deltaiter)

    return split


def test_a_revlog_named_twice_is_applied_after_its_first_group(
        tmp_path, source, stepped, split_group, summaries, monkeypatch):
    core, ext = two_clones(tmp_path, source, 'ext')
    split_group(b'd0/f42')
    # the first group's apply slow: the second would run beside it
    real_apply = filelogs.FilelogGroup.apply
    during = []

    def slow_apply(group, target, deltas):
        if group.name == b'd0/f42':
            during.append(len(during))
            time.sleep(0.2)
        return real_apply(group, target, deltas)

    monkeypatch.setattr(filelogs.FilelogGroup, 'apply', slow_apply)
    core_pull(core, source)
    pull(make_ui(), ext, source)
    assert during == [0, 1]  # two groups
    assert summaries[-1][1] >= 1
    assert store_state(core.root) == store_state(ext.root)


class FakeFilelog:
    """a filelog whose addgroup calls ``adding(deltas)`` and adds one
    revision"""

    def __init__(self, adding):
        self._adding = adding

    def __len__(self):
        return 0

    def addgroup(self, deltas, revmap, tr):
        self._adding(deltas)
        return [1]


class FakeTarget:
    """what appliers apply groups with: a FakeFilelog for every name"""

    revmap = tr = None
    extras = {}

    def __init__(self, adding):
        self._adding = adding

    def filelog(self, name):
        return FakeFilelog(self._adding)


def fake_group(name, content):
    """a group of one delta, ``content``, for a FakeTarget"""
    group = filelogs.FilelogGroup(name, False)
    group.deltas = [content]
    return group


def test_appliers_stay_until_the_end():
    """two threads that end their groups together, one group in line:
    one takes it, the other waits for the next, rather than end while
    groups may keep coming"""
    release = threading.Event()

    class SlowToLetGo(threading.Condition):
        """a gap after each time an applier lets the lock go, where a
        thread that looked at the line and took nothing from it yet lets
        the other thread take the group first"""

        def __exit__(self, *exc):
            released = super().__exit__(*exc)
            if threading.current_thread().name == THREAD_NAME:
                time.sleep(0.002)
            return released

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(threading, 'Condition', SlowToLetGo)
        appliers = filelogs.Appliers(
            FakeTarget(lambda deltas: release.wait(10)), 2, 1 << 20)
    for i in range(3):
        appliers.hand_over(fake_group(b'f%d' % i, None))
    time.sleep(0.05)
    release.set()
    time.sleep(0.1)
    alive = len(appliers_alive())
    assert appliers.finish(failing=False) is None
    assert appliers.threads == 2 and alive == 2
    assert not appliers_alive()


def test_a_thread_starts_for_each_group_more_than_threads_waiting():
    """threads told of a group but not run yet count as waiting once: the
    applying thread hands groups over faster than they wake"""
    release = threading.Event()
    running = []

    def adding(deltas):
        if next(deltas) == b'wait':
            running.append(1)
            release.wait(10)

    appliers = filelogs.Appliers(FakeTarget(adding), 8, 1 << 20)
    try:
        # two threads, then waiting for groups
        appliers.hand_over(fake_group(b'a', b'go'))
        appliers.hand_over(fake_group(b'b', b'go'))
        deadline = time.monotonic() + 5
        while appliers._idle < appliers.threads and time.monotonic() < deadline:
            time.sleep(0.01)
        started = appliers.threads
        # four at once, each held until released
        for name in (b'c', b'd', b'e', b'f'):
            appliers.hand_over(fake_group(name, b'wait'))
        deadline = time.monotonic() + 5
        while len(running) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(running) == 4, (started, appliers.threads)
    finally:
        release.set()
        appliers.finish(failing=False)
    assert not appliers_alive()


# the gate -------------------------------------------------------------------


def gate(repo, writes=b'true', extras=None):
    """whether the appliers stand in for core's step in ``repo``"""
    repo.ui.setconfig(b'worker', b'backgroundclosewrites', writes, b'test')
    with repo.lock(), repo.transaction(b'test') as tr:
        return filelogs.applies(
            repo, changegroup._addchangegroupfiles, tr,
            extras if extras is not None else {
                'addrevisioncb': None, 'debug_info': None})


@pytest.fixture
def plain(tmp_path):
    return hg.repository(make_ui(), os.fsencode(str(tmp_path / 'plain')),
                         create=True)


def test_the_gate_opens_for_a_plain_repository_with_writers(plain):
    assert gate(plain)


def test_no_appliers_where_writers_are_off_or_inline(plain):
    assert not gate(plain, writes=b'false')
    plain.ui.setconfig(b'worker', b'backgroundclosepolicy', b'inline',
                       b'test')
    plain.ui.setconfig(b'worker', b'backgroundclosewrites', None, b'test')
    with plain.lock(), plain.transaction(b'test') as tr:
        assert not filelogs.applies(plain, changegroup._addchangegroupfiles,
                                    tr, {})


def test_adaptive_writers_apply_on_threads_only_off_a_local_disk(
        plain, monkeypatch):
    from hgext3rd.backgroundclose.shared import filesystems
    plain.ui.setconfig(b'worker', b'backgroundclosewrites', None, b'test')
    for local, expected in ((True, False), (False, True)):
        monkeypatch.setattr(filesystems, 'is_local', lambda path: local)
        with plain.lock(), plain.transaction(b'test') as tr:
            assert filelogs.applies(
                plain, changegroup._addchangegroupfiles, tr,
                {}) is expected


def test_core_s_step_with_callbacks_or_arguments_it_does_not_know(plain):
    assert not gate(plain, extras={'addrevisioncb': lambda *a: None})
    assert not gate(plain, extras={'debug_info': {}})
    assert not gate(plain, extras={'a_new_argument': 1})


def test_core_s_step_with_a_line_for_each_delta(plain):
    plain.ui.setconfig(b'debug', b'revlog.debug-delta', b'yes', b'test')
    assert not gate(plain)


def test_core_s_step_where_another_extension_wraps_the_write_path(
        plain, monkeypatch):
    def wrapper(orig, *args, **kwargs):
        return orig(*args, **kwargs)

    for container, name in ((filelog.filelog, 'addgroup'),
                            (type(plain.svfs), '__call__')):
        with extensions.wrappedfunction(container, name, wrapper):
            assert not gate(plain), (container, name)
    assert gate(plain)
    wrapped = extensions.wrappedfunction(
        changegroup, '_addchangegroupfiles', wrapper)
    with wrapped, plain.lock(), plain.transaction(b'test') as tr:
        # the function core's apply calls is another extension's wrapper
        assert not filelogs.applies(
            plain, changegroup._addchangegroupfiles, tr, {})


def test_core_s_step_with_a_flag_processor_or_a_narrow_clone(
        plain, monkeypatch):
    monkeypatch.setitem(flagutil.flagprocessors, 1 << 3,
                        (None, None, None))
    assert not gate(plain)
    monkeypatch.undo()
    assert gate(plain)
    from mercurial import requirements
    plain.requirements.add(requirements.NARROW_REQUIREMENT)
    try:
        assert not gate(plain)
    finally:
        plain.requirements.discard(requirements.NARROW_REQUIREMENT)


# the parts ------------------------------------------------------------------


class RecordingTransaction:
    """counts calls and the most that ever ran at once"""

    def __init__(self):
        self.running = 0
        self.most = 0
        self.adds = []
        self.lock = threading.Lock()

    def _enter(self):
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(0.002)
        with self.lock:
            self.running -= 1

    def add(self, file, offset):
        self.adds.append(file)
        self._enter()

    def addbackup(self, file):
        self._enter()


def test_transaction_calls_never_overlap():
    tr = RecordingTransaction()
    serial = filelogs.SerialTransaction(tr)
    barrier = threading.Barrier(8)

    def calls(n):
        barrier.wait()
        for i in range(10):
            serial.addbackup(b'f%d' % n)
            serial.add(b'f%d-%d' % (n, i), 0)

    threads = [threading.Thread(target=calls, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert tr.most == 1
    assert len(tr.adds) == 80


def test_a_file_added_again_is_answered_without_the_transaction():
    tr = RecordingTransaction()
    serial = filelogs.SerialTransaction(tr)
    serial.add(b'data/a.i', 10)
    serial.add(b'data/a.i', 20)
    serial.add(b'data/b.i', 0)
    assert tr.adds == [b'data/a.i', b'data/b.i']


def test_a_failed_add_is_asked_again():
    class Refusing(RecordingTransaction):
        def add(self, file, offset):
            super().add(file, offset)
            if len(self.adds) == 1:
                raise error.Abort(b'refused')

    tr = Refusing()
    serial = filelogs.SerialTransaction(tr)
    with pytest.raises(error.Abort):
        serial.add(b'data/a.i', 10)
    serial.add(b'data/a.i', 10)
    assert tr.adds == [b'data/a.i', b'data/a.i']


def test_a_spurious_file_node_aborts_as_core_does():
    group = filelogs.FilelogGroup(b'a', True)
    group.nodes = [b'\x01' * 20, b'\x02' * 20]
    needfiles = {b'a': {b'\x01' * 20}}
    with pytest.raises(error.Abort) as raised:
        filelogs._check_nodes(group, needfiles)
    assert b'spurious' in bytes(raised.value.message)
    needfiles = {b'a': {b'\x01' * 20}}
    group.nodes = [b'\x01' * 20]
    filelogs._check_nodes(group, needfiles)
    assert needfiles == {}
    # a revlog named again once its nodes were all received: core checks
    # a group only while its file has nodes expected
    filelogs._check_nodes(group, needfiles)


def test_the_first_error_in_the_changegroup_s_order_wins():
    spurious = filelogs.FilelogGroup(b'a', True)
    spurious.nodes = [b'\x02' * 20]
    failed = filelogs.FilelogGroup(b'b', False)
    failed.error = error.Abort(b'b failed')
    interrupted = filelogs.FilelogGroup(b'c', False)
    # server.validate's check of a group before the failure of a later one
    with pytest.raises(error.Abort) as raised:
        filelogs._outcome([spurious, failed], {b'a': {b'\x01' * 20}},
                          None, None)
    assert b'spurious' in bytes(raised.value.message)
    # a group's failure before the applying thread's
    with pytest.raises(error.Abort) as raised:
        filelogs._outcome([failed], {}, ValueError('read'), None)
    assert raised.value is failed.error
    # an interrupt before any
    interrupted.error = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt):
        filelogs._outcome([failed, interrupted], {}, None, None)


def test_core_s_modules_are_loaded_before_threads_run_them():
    # Mercurial's demandimport leaves a module to load at its first use;
    # two threads using it first at once find it half run before Python
    # 3.12.3.  filelog imports revlogutils.rewrite, lazily
    script = (
        'import importlib.util, sys\n'
        'from mercurial import demandimport\n'
        'demandimport.enable()\n'
        'from mercurial import filelog\n'
        'filelog.__doc__\n'
        'lazy = importlib.util._LazyModule\n'
        'before = type(sys.modules["mercurial.revlogutils.rewrite"])\n'
        'from hgext3rd.backgroundclose.shared import compat\n'
        'compat.load_lazy_modules([filelog])\n'
        'after = type(sys.modules["mercurial.revlogutils.rewrite"])\n'
        'print(before is lazy, after is lazy)\n'
        # a module of the standard library one of Mercurial's names
        'import types\n'
        'spec = importlib.util.find_spec("colorsys")\n'
        'spec.loader = importlib.util.LazyLoader(spec.loader)\n'
        'std = importlib.util.module_from_spec(spec)\n'
        'spec.loader.exec_module(std)\n'
        'ours = types.ModuleType("mercurial.naming_it")\n'
        'ours.colorsys = std\n'
        'before = type(std)\n'
        'compat.load_lazy_modules([ours])\n'
        'print(before is lazy, type(std) is lazy)\n'
    )
    root = os.path.join(os.path.dirname(__file__), '..')
    out = subprocess.run([sys.executable, '-c', script], cwd=root,
                         capture_output=True, check=True).stdout
    assert out.split() == [b'True', b'False', b'True', b'False']
