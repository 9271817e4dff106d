# test_readahead.py - the store read ahead of a checkout's files
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""``StoreReads`` (checkout/readahead.py) on its own, against a fake
changeset context: no repository, no store.  The fake's reads may sleep
(a store on a network file system) or fail, and each records the thread
it ran on and the node it was asked for, so that a test can tell which
reads the applying thread made and which a reader made ahead of it."""

import errno
import os
import random
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.dirname(__file__))

from mercurial import error  # noqa: E402

from hgext3rd.backgroundclose import engine  # noqa: E402
from hgext3rd.backgroundclose.checkout import readahead  # noqa: E402
from waiting import true_by  # noqa: E402

READER = 'backgroundclose-read'
# the longest any one test's checkout may take before it counts as hung
HUNG = 5.0


def content(name, size):
    """the data of ``name``, ``size`` bytes of it: each file's its own"""
    unit = name + b':'
    return (unit * (size // len(unit) + 1))[:size]


def names_of(count):
    return [b'dir/file%04d' % i for i in range(count)]


class Store:
    """a fake changeset context: ``filenode`` and ``filectx(name,
    fileid=None)``, with ``size()`` and ``data()``.  ``sizes``: name -> size (``size`` otherwise);
    ``sleep``: name -> seconds each read of it waits; ``failing``: name ->
    the exception object its read raises.  Records each read (name, the
    thread it ran on, the node asked for), in the order they ran."""

    def __init__(self, size=100, sizes=None, sleep=None, failing=None):
        self.size = size
        self.sizes = sizes or {}
        self.sleep = sleep or (lambda name: 0.0)
        self.failing = failing or {}
        self.lock = threading.Lock()
        self.reads = []  # (name, thread, fileid)
        self.lookups = []  # (name, thread): filenode's callers
        self.inflight = 0

    def data_of(self, name):
        return content(name, self.sizes.get(name, self.size))

    def filenode(self, name):
        with self.lock:
            self.lookups.append((name, threading.current_thread()))
        return b'n' + name

    def filectx(self, name, fileid=None):
        return _FileCtx(self, name, fileid)

    def read_by(self):
        """name -> the thread that read it"""
        return {name: thread for name, thread, fileid in self.reads}

    def readers(self):
        """the distinct reader threads that read something"""
        return {thread for name, thread, fileid in self.reads
                if thread.name == READER}


class _FileCtx:
    """made as a release's filectx that takes no node: readahead's
    file_context() gives it its node (``_filenode``) on the applying
    thread"""

    def __init__(self, store, name, fileid):
        self._store = store
        self._name = name
        self.fileid = fileid

    def size(self):
        """what core's filectx.size() gives: from the filelog's index,
        before the data is read"""
        return len(self._store.data_of(self._name))

    def data(self):
        store, name = self._store, self._name
        with store.lock:
            store.reads.append((name, threading.current_thread(),
                                vars(self).get('_filenode', self.fileid)))
            store.inflight += 1
        try:
            seconds = store.sleep(name)
            if seconds:
                time.sleep(seconds)
            if name in store.failing:
                raise store.failing[name]
            return store.data_of(name)
        finally:
            with store.lock:
                store.inflight -= 1


def within(seconds, function, *args):
    """``function(*args)`` run on a thread of its own (the applying
    thread), its result or its failure: a test fails, rather than hangs,
    where it does not return within ``seconds``"""
    outcome = {}

    def run():
        try:
            outcome['result'] = function(*args)
        except BaseException as exc:
            outcome['error'] = exc

    thread = threading.Thread(target=run, name='applying', daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), 'hung: not done in %s seconds' % seconds
    if 'error' in outcome:
        raise outcome['error']
    return outcome['result']


def readers_alive():
    """the readers running: not one whose start() an interrupt cut short
    before it ran, which never will (Python keeps it listed, unstarted)"""
    return [t for t in threading.enumerate()
            if t.name == READER and (t.is_alive() or t.ident is not None)]


def checkout(store, names, mode, ahead=True, pause=0.0, during=None):
    """``StoreReads`` of ``names`` from ``store``, every file taken in
    order by a thread of its own, sleeping ``pause`` seconds after each
    (``during(reads)`` after each, if given), then stopped: the
    ``StoreReads``, what each take returned, and the applying thread"""
    def apply():
        reads = readahead.StoreReads(
            store, names, mode, ahead, time.perf_counter)
        taken = []
        try:
            for name in names:
                taken.append(reads.take(name))
                if during is not None:
                    during(reads)
                if pause:
                    time.sleep(pause)
        finally:
            reads.stop()
            assert reads.join() is None
        return reads, taken, threading.current_thread()

    return within(HUNG, apply)


@pytest.fixture(autouse=True)
def sizes_from_the_fake(monkeypatch):
    """the size a reader counts before its read: the fake's, where
    readahead asks the filelog's index"""
    monkeypatch.setattr(readahead, 'stored_size', lambda fctx: fctx.size())


@pytest.fixture(autouse=True)
def no_reader_left():
    """every test: each reader it started was joined by its stop()"""
    yield
    assert readers_alive() == []


# 1. ---------------------------------------------------------------------

def _in_order_from_readers(mode):
    rng = random.Random(1)
    sleeps = {}
    names = names_of(300)
    for name in names:
        sleeps[name] = rng.choice((0.0, 0.0, 0.0002, 0.0005, 0.001))
    sizes = {name: rng.randrange(0, 600) for name in names}
    store = Store(sizes=sizes, sleep=sleeps.__getitem__)
    reads, taken, applying = checkout(store, names, mode)
    # each take, in order, the data of its own name and no other
    assert taken == [store.data_of(name) for name in names]
    # each file read once, readers' reads of the node the applying thread
    # looked up in the manifest
    assert sorted(name for name, thread, fileid in store.reads) == names
    for name, thread, fileid in store.reads:
        if thread.name == READER:
            assert fileid == b'n' + name
        else:
            assert thread is applying and fileid is None
    assert all(thread is applying for name, thread in store.lookups)
    # read ahead, on more than one reader
    assert len(store.readers()) > 1
    assert reads.started >= len(store.readers())
    assert readers_alive() == []
    return store


def test_reads_ahead_give_each_take_its_own_data_in_order():
    """Once reads wait (adaptive mode, reads that sleep), the data of 300
    files of random sizes, read on several reader threads at random
    speeds, is handed to the applying thread each in its own take, in
    the checkout's order; readers read the node the applying thread
    looked up; stop() leaves no reader alive."""
    _in_order_from_readers(engine.ADAPTIVE)


def test_background_mode_reads_ahead_from_the_second_file():
    """In background mode, with core's read path (ahead=True), the first
    file is read by the applying thread (which fills the repository's
    caches a read starts with, before two threads could) and the files
    after it are read ahead on reader threads, each take still getting
    its own data in order; stop() leaves no reader alive."""
    store = _in_order_from_readers(engine.BACKGROUND)
    names = names_of(300)
    assert store.read_by()[names[0]].name == 'applying'
    assert store.read_by()[names[1]].name == READER


# 2. ---------------------------------------------------------------------

@pytest.mark.parametrize('mode', [engine.BACKGROUND, engine.ADAPTIVE])
def test_another_extension_s_read_path_is_read_on_the_applying_thread(mode):
    """With ahead=False (another extension wraps the read path, which may
    not be safe on other threads), every read runs on the applying
    thread, through ``filectx(name)`` as core's batchget makes it, and no
    reader starts: in background mode, and in adaptive mode with reads
    slow enough that it would otherwise read ahead."""
    names = names_of(60)
    store = Store(sleep=lambda name: 0.001)
    reads, taken, applying = checkout(store, names, mode, ahead=False)
    assert taken == [store.data_of(name) for name in names]
    assert [name for name, thread, fileid in store.reads] == names
    assert all(thread is applying and fileid is None
               for name, thread, fileid in store.reads)
    assert reads.started == 0
    assert reads.reads.count == len(names)


# 3. ---------------------------------------------------------------------

def test_adaptive_cheap_reads_start_no_reader():
    """In adaptive mode, reads that do not wait (a local store) are all
    made by the applying thread: no reader starts over 200 files."""
    names = names_of(200)
    store = Store()
    reads, taken, applying = checkout(store, names, engine.ADAPTIVE)
    assert taken == [store.data_of(name) for name in names]
    assert reads.started == 0
    assert all(thread is applying for name, thread, fileid in store.reads)
    assert reads.reads.count == 200
    assert reads.waits.count == 0


def test_adaptive_reads_that_wait_start_readers_after_the_first_few():
    """In adaptive mode, reads that wait ~2 ms each: the first few are
    the applying thread's own (measured), then readers start, and the
    later reads all run on reader threads."""
    names = names_of(80)
    store = Store(sleep=lambda name: 0.002)
    reads, taken, applying = checkout(store, names, engine.ADAPTIVE)
    assert taken == [store.data_of(name) for name in names]
    by = store.read_by()
    assert all(by[name] is applying for name in names[:4])
    assert reads.started >= 2
    assert all(by[name].name == READER for name in names[40:])
    # every read counted once, wherever it ran
    assert reads.reads.count == len(names)


# 4. ---------------------------------------------------------------------

FAILURES = [
    pytest.param(lambda: OSError(errno.EIO, 'store read failed'),
                 id='OSError'),
    pytest.param(lambda: error.Abort(b'store read failed'), id='Abort'),
]


@pytest.mark.parametrize('failure', FAILURES)
@pytest.mark.parametrize('where', ['here', 'ahead'])
def test_a_read_that_fails_raises_its_failure_at_its_file(failure, where):
    """A read that fails raises, on the applying thread, at the take of
    its own file, the very exception object the read raised (its class
    and message): whether the applying thread read that file itself
    (early) or a reader read it ahead (late); the takes before it got
    their data, and stop() afterwards leaves no reader alive."""
    names = names_of(60)
    k = 2 if where == 'here' else 40
    exc = failure()
    store = Store(sleep=lambda name: 0.002, failing={names[k]: exc})
    taken = []

    def apply():
        reads = readahead.StoreReads(
            store, names, engine.ADAPTIVE, True, time.perf_counter)
        try:
            for name in names:
                taken.append(reads.take(name))
        finally:
            reads.stop()
            assert reads.join() is None

    with pytest.raises(type(exc)) as raised:
        within(HUNG, apply)
    assert raised.value is exc
    assert str(raised.value) == str(failure())
    assert taken == [store.data_of(name) for name in names[:k]]
    thread = store.read_by()[names[k]]
    if where == 'here':
        assert thread.name == 'applying'
    else:
        assert thread.name == READER
    assert readers_alive() == []


# 5. ---------------------------------------------------------------------

def test_the_bytes_held_ahead_stay_bounded(monkeypatch):
    """With HELD at 1000 bytes and files of 300, an applying thread that
    takes slowly (a slow write) does not let the readers run ahead
    without bound: a reader counts the size of its file as held before
    it reads it, and waits while that would pass HELD; but they do run
    ahead, two files and more.  Every take still gets its own data."""
    monkeypatch.setattr(readahead, 'HELD', 1000)
    names = names_of(60)
    store = Store(size=300, sleep=lambda name: 0.001)
    reads, taken, applying = checkout(
        store, names, engine.ADAPTIVE, pause=0.002)
    assert taken == [store.data_of(name) for name in names]
    assert reads.started >= 2
    assert 600 <= reads.peakheld <= 1000 + 300  # HELD and the next file


def test_no_more_than_held_and_one_file_are_held(monkeypatch):
    """What readahead.HELD says: at most HELD bytes read ahead and not
    taken, but for the one file that passes it (a file larger than HELD
    read alone).  Files of 2000 bytes with HELD at 1000, each read
    waiting 5 ms, taken slowly: never more than 3000 bytes held."""
    monkeypatch.setattr(readahead, 'HELD', 1000)
    names = names_of(30)
    store = Store(size=2000, sleep=lambda name: 0.005)
    reads, taken, applying = checkout(
        store, names, engine.ADAPTIVE, pause=0.01)
    assert taken == [store.data_of(name) for name in names]
    assert reads.peakheld <= 1000 + 2000


def test_a_file_larger_than_held_is_still_read(monkeypatch):
    """A file larger than HELD is read all the same, once the files
    before it are taken: no deadlock, whether it comes while the readers
    are held back or not (two readers at most, so that a reader held
    back must be woken by the takes, not replaced by a new one)."""
    monkeypatch.setattr(readahead, 'HELD', 1000)
    monkeypatch.setattr(readahead, 'MOST_THREADS', 2)
    names = names_of(50)
    big = {names[20]: 5000, names[35]: 3000, names[36]: 4000}
    store = Store(size=300, sizes=big, sleep=lambda name: 0.001)
    reads, taken, applying = checkout(
        store, names, engine.ADAPTIVE, pause=0.002)
    assert taken == [store.data_of(name) for name in names]
    assert all(store.read_by()[name].name == READER for name in big)


# 6. ---------------------------------------------------------------------

def test_stop_halfway_joins_the_readers_in_their_reads():
    """stop() after half the files are taken, while readers are in
    reads that wait 50 ms: it returns (each reader ends after the read it
    is in, reading nothing more) and no reader is alive after it."""
    names = names_of(60)
    half = len(names) // 2
    slow = set(names[half:])
    store = Store(sleep=lambda name: 0.05 if name in slow else 0.002)
    seen = {}

    def apply():
        reads = readahead.StoreReads(
            store, names, engine.ADAPTIVE, True, time.perf_counter)
        try:
            for name in names[:half]:
                assert reads.take(name) == store.data_of(name)
            assert reads.started >= 2
            # readers in their reads of the files not taken
            assert true_by(time.monotonic() + 1, lambda: store.inflight > 0)
        finally:
            reads.stop()
            assert reads.join() is None
        seen['alive'] = readers_alive()
        seen['inflight'] = store.inflight

    within(HUNG, apply)
    assert seen['alive'] == []
    assert seen['inflight'] == 0
    # nothing more read than the files given to readers before the stop
    assert len(store.reads) < len(names)


# 7. ---------------------------------------------------------------------

def test_no_more_readers_than_most_threads(monkeypatch):
    """However long the applying thread waits for reads, it starts no
    more than MOST_THREADS readers (3 here): it grows to the cap, not
    past it."""
    monkeypatch.setattr(readahead, 'MOST_THREADS', 3)
    names = names_of(100)
    store = Store(sleep=lambda name: 0.003)
    most = []

    def during(reads):
        most.append(len(readers_alive()))

    reads, taken, applying = checkout(
        store, names, engine.ADAPTIVE, during=during)
    assert taken == [store.data_of(name) for name in names]
    assert reads.started == 3
    assert len(store.readers()) <= 3
    assert max(most) <= 3


# 8. the teardown -----------------------------------------------------------

def test_join_after_an_interrupt_leaves_a_hung_read_after_the_grace(
        monkeypatch):
    """A reader in a read that does not return (a network file system
    that stopped answering): after an interrupt, join() waits GRACE
    seconds for it, no more, and leaves it to end by itself."""
    monkeypatch.setattr(readahead, 'GRACE', 0.2)
    names = names_of(20)
    release = threading.Event()
    entered = threading.Event()

    class Hanging(Store):
        def filectx(self, name, fileid=None):
            fctx = _FileCtx(self, name, fileid)
            if name == names[5]:
                real = fctx.data

                def data():
                    entered.set()
                    release.wait(10)
                    return real()
                fctx.data = data
            return fctx

    hung = Hanging(sleep=lambda name: 0.002)
    reads = readahead.StoreReads(
        hung, names, engine.BACKGROUND, True, time.perf_counter)
    for name in names[:5]:
        assert reads.take(name) == hung.data_of(name)
    assert entered.wait(2)
    reads.stop()
    start = time.monotonic()
    assert reads.join(interrupted=True) is None
    assert time.monotonic() - start < 2
    assert readers_alive()  # the one in its read, left
    release.set()
    assert true_by(time.monotonic() + 5, lambda: not readers_alive())


def test_an_interrupt_while_readers_are_joined_is_returned_and_they_joined(
        monkeypatch):
    """A Ctrl-C while join() waits for a reader is kept and returned, for
    the teardown to raise (or not, abandoned), and the readers are joined
    all the same within the grace period: none is left behind."""
    names = names_of(40)
    store = Store(sleep=lambda name: 0.01)
    reads = readahead.StoreReads(
        store, names, engine.BACKGROUND, True, time.perf_counter)
    for name in names[:10]:
        reads.take(name)
    assert reads.started >= 2
    real = threading.Thread.join
    raised = []

    def join(thread, timeout=None):
        if not raised:
            raised.append(True)
            raise KeyboardInterrupt
        return real(thread, timeout)

    monkeypatch.setattr(threading.Thread, 'join', join)
    reads.stop()
    caught = reads.join()
    monkeypatch.setattr(threading.Thread, 'join', real)
    assert isinstance(caught, KeyboardInterrupt)
    assert readers_alive() == []


def test_lfs_s_flag_processor_on_the_store_keeps_reads_to_core(tmp_path):
    """lfs registers its flag processor with the repository's store
    options, not core's global table: the read path is then not core's,
    and nothing is read ahead"""
    from mercurial import hg, ui as uimod
    ui = uimod.ui.load()
    repo = hg.repository(ui, bytes(tmp_path / 'r'), create=True)
    assert readahead.core_s_read_path(repo, repo[b'.'])
    repo.svfs.options[b'flagprocessors'] = {1 << 13: (None, None, None)}
    assert not readahead.core_s_read_path(repo, repo[b'.'])


def test_a_store_on_a_local_file_system_is_not_read_ahead_by_measure(
        tmp_path, monkeypatch):
    """adaptive: where the store's file system is a local one (tmpfs,
    ext4, ...), its reads never wait on a round trip and are read by the
    applying thread; elsewhere (a FUSE or network file system), or where
    the type is unknown, the reads' times decide; background and inline
    as asked"""
    from mercurial import hg, ui as uimod, util
    repo = hg.repository(uimod.ui.load(), bytes(tmp_path / 'r'), create=True)
    for fstype, adaptive in ((b'tmpfs', engine.INLINE),
                             (b'ext2', engine.INLINE),
                             (b'fuse.rttfs', engine.ADAPTIVE),
                             (b'nfs4', engine.ADAPTIVE),
                             (None, engine.ADAPTIVE)):
        monkeypatch.setattr(util, 'getfstype', lambda path, t=fstype: t)
        assert readahead.read_mode(repo, engine.ADAPTIVE) == adaptive
        assert readahead.read_mode(repo, engine.BACKGROUND) == engine.BACKGROUND
        assert readahead.read_mode(repo, engine.INLINE) == engine.INLINE


def test_ctrl_c_at_any_moment_of_a_wait_for_a_read_leaves_the_lock_whole(
        monkeypatch):
    """Ctrl-C lands wherever the applying thread is as it waits for a
    read ahead, also as Condition.wait() takes its lock back: the take
    raises KeyboardInterrupt and nothing else (never 'release unlocked
    lock'), and the teardown joins every reader.  Many interrupts, at
    random moments (a handler that raises only while armed, so that the
    test's own teardown is never cut)."""
    import signal
    monkeypatch.setattr(readahead, 'GRACE', 2.0)
    rng = random.Random(3)
    names = names_of(400)
    store = Store(sleep=lambda name: 0.0005)
    armed = []

    def handler(signum, frame):
        # one Ctrl-C an attempt: disarmed as it raises, so that it never
        # lands in the test's own handling of it
        if armed:
            armed.clear()
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    interrupts = errors = 0
    try:
        for attempt in range(30):
            reads = readahead.StoreReads(
                store, names, engine.BACKGROUND, True, time.perf_counter)
            stop = threading.Event()
            delay = rng.uniform(0.001, 0.01)

            def fire():
                # the signal is the main thread's to take, never this one's
                signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
                while not stop.wait(delay):
                    os.kill(os.getpid(), signal.SIGINT)

            firing = threading.Thread(target=fire)
            firing.start()
            try:
                armed.append(True)
                for name in names:
                    reads.take(name)
            except KeyboardInterrupt:
                interrupts += 1
            except RuntimeError:
                errors += 1
            finally:
                armed.clear()
                stop.set()
                firing.join()
                reads.stop()
                # bounded: a lock an interrupt left held would keep a
                # reader from ever ending
                assert reads.join(interrupted=True) is None
                assert readers_alive() == []
    finally:
        # a SIGINT sent last is handled here, disarmed, not by pytest's
        time.sleep(0.05)
        signal.signal(signal.SIGINT, previous)
    assert errors == 0
    assert interrupts > 20


def test_another_extension_on_the_read_path_keeps_reads_to_core(tmp_path):
    """each function a read runs through, wrapped or overridden by
    another extension, keeps the reads core's: ``filectx.data`` and
    ``filelog.read`` wrapped, the repository's ``file`` overridden by a
    subclass of its own (as one made in a ``reposetup``) or an instance
    attribute, the changeset's ``filectx`` by an instance attribute"""
    from mercurial import context, extensions, filelog, hg, ui as uimod
    repo = hg.repository(uimod.ui.load(), bytes(tmp_path / 'r'), create=True)
    assert readahead.core_s_read_path(repo, repo[b'.'])

    def passing(orig, *args, **kwargs):
        return orig(*args, **kwargs)

    for container, name in ((context.filectx, 'data'),
                            (filelog.filelog, 'read')):
        extensions.wrapfunction(container, name, passing)
        try:
            assert not readahead.core_s_read_path(repo, repo[b'.'])
        finally:
            extensions.unwrapfunction(container, name, passing)
        assert readahead.core_s_read_path(repo, repo[b'.'])

    unfi = repo.unfiltered()
    core_class = unfi.__class__

    class Subclass(core_class):
        def file(self, path, *args, **kwargs):
            return super().file(path, *args, **kwargs)

    unfi.__class__ = Subclass
    try:
        assert not readahead.core_s_read_path(repo, repo[b'.'])
    finally:
        unfi.__class__ = core_class
    unfi.file = unfi.file
    try:
        assert not readahead.core_s_read_path(repo, repo[b'.'])
    finally:
        del unfi.file
    mctx = repo[b'.']
    mctx.filectx = mctx.filectx
    assert not readahead.core_s_read_path(repo, mctx)
