# test_streamapply.py - taking a failed stream apply back
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""A failed stream apply removes what it wrote.  A second Ctrl-C while it
does (a user who presses it twice) must not leave half of the apply behind,
nor keep the transaction's own abort from removing its journal."""

import contextlib
import os
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))

from waiting import true_by  # noqa: E402
from hgext3rd.backgroundclose import engine  # noqa: E402
from hgext3rd.backgroundclose.shared import compat  # noqa: E402
from hgext3rd.backgroundclose.stream import (  # noqa: E402
    apply as streamapply,
    wrappers as streamwrappers,
)


@pytest.fixture
def applied(lanerepo):
    """a session, and the files a stream apply wrote after it began"""
    session = streamapply.ApplySession(lanerepo, b'v1')
    written = []
    for name in (b'data/a.i', b'data/sub/b.i', b'data/sub/c.d', b'00log.i'):
        lanerepo.svfs.write(name, b'x')
        written.append(lanerepo.svfs.join(name))
    yield session, written
    session.closer.finish(failing=True)


def interrupting(monkeypatch, times):
    """util.tryunlink raises KeyboardInterrupt on its first ``times``
    calls, before it removes anything"""
    real = streamapply.util.tryunlink
    left = [times]

    def tryunlink(path):
        if left[0]:
            left[0] -= 1
            raise KeyboardInterrupt
        return real(path)

    monkeypatch.setattr(streamapply.util, 'tryunlink', tryunlink)


def escaping(call):
    """``call()``; a KeyboardInterrupt it lets out fails the test (instead
    of stopping pytest as a user's Ctrl-C would)"""
    try:
        return call()
    except KeyboardInterrupt:
        pytest.fail('an interrupt escaped')


def test_undo_removes_what_the_apply_wrote(applied):
    session, written = applied
    assert session.journal.undo() is None
    assert not any(os.path.exists(p) for p in written)


def test_one_interrupt_during_undo_is_absorbed_and_the_walk_finished(
    applied, monkeypatch
):
    session, written = applied
    interrupting(monkeypatch, 1)
    absorbed = escaping(session.journal.undo)
    assert isinstance(absorbed, KeyboardInterrupt)
    assert not any(os.path.exists(p) for p in written)


def test_the_teardown_raises_the_interrupt_it_absorbed_once_done(
    applied, monkeypatch
):
    session, written = applied
    interrupting(monkeypatch, 1)
    with pytest.raises(KeyboardInterrupt):
        session.finish(failing=True)
    assert not any(os.path.exists(p) for p in written)
    assert session.taken_back


@pytest.mark.parametrize(
    'after', ['nothing', 'a post-close callback fails', 'the close fails'])
def test_nothing_is_taken_back_once_the_transaction_committed(
    applied, monkeypatch, after
):
    # a failure after the apply's transaction committed (in the consumer
    # after it, or in the command around it, or in one of the transaction's
    # own post-close callbacks, which core runs once its journal is gone)
    # leaves the repository's new files alone: they are its history now.
    # A close that fails before its journal is gone committed nothing
    from mercurial import error, transaction

    session, written = applied
    repo = session._repo

    def warming(tr):
        raise KeyboardInterrupt  # a Ctrl-C while caches are warmed

    def full(tr):
        raise error.Abort(b'No space left on device')  # writing undo files

    with repo.lock():
        tr = repo.transaction(b'test')
        try:
            session.watch_transaction()
            if after == 'nothing':
                tr.close()
            elif after == 'a post-close callback fails':
                tr.addpostclose(b'-warm-cache', warming)
                with pytest.raises(KeyboardInterrupt):
                    tr.close()
            else:
                monkeypatch.setattr(transaction.transaction, '_writeundo',
                                    full)
                with pytest.raises(error.Abort):
                    tr.close()
                assert not tr.running()
        finally:
            tr.release()
        escaping(lambda: session.finish(failing=True))
        assert session.taken_back
        committed = after != 'the close fails'
        assert [os.path.exists(p) for p in written] == [committed] * len(
            written)
    if after == 'the close fails':
        # left for hg recover: core's finalizer would fail to abort it, its
        # journal file closed already
        tr._journal = None


def test_a_teardown_cut_short_before_the_closer_finished_finishes_it_next(
    applied, monkeypatch
):
    # the closers' step counts as done only once the closer says it is
    # finished: one an interrupt cut short is done by the next call
    session, written = applied
    finish = session.closer.finish
    calls = []

    def cut_short(*args, **kwargs):
        calls.append(args)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return finish(*args, **kwargs)

    monkeypatch.setattr(session.closer, 'finish', cut_short)
    with pytest.raises(KeyboardInterrupt):
        session.finish(failing=True)
    assert not session.closer.finished
    escaping(lambda: session.finish(failing=True))
    assert session.closer.finished
    assert len(calls) == 2
    assert not any(os.path.exists(p) for p in written)


def test_a_third_ctrl_c_leaves_a_take_back_that_hangs(applied, monkeypatch):
    # on a dead mount every unlink hangs: pressing Ctrl-C again must end it
    session, written = applied
    interrupting(monkeypatch, 2)
    with pytest.raises(KeyboardInterrupt):
        session.journal.undo()


def test_the_abort_callback_never_raises_an_interrupt(applied, monkeypatch):
    # raised from an abort callback, the interrupt would keep core's
    # transaction from removing its journal
    session, written = applied
    repo = session._repo
    with repo.lock():
        tr = repo.transaction(b'test')
        session.watch_transaction()
        interrupting(monkeypatch, 1)
        escaping(tr.abort)
    assert not any(os.path.exists(p) for p in written)
    assert not repo.svfs.exists(b'journal')


def refusing(monkeypatch, part):
    """util.tryunlink refuses to remove any path containing ``part``, as
    a read-only directory does (for a user other than root)"""
    real = streamapply.util.tryunlink

    def tryunlink(path):
        if part in path:
            raise PermissionError(13, 'Permission denied', path)
        return real(path)

    monkeypatch.setattr(streamapply.util, 'tryunlink', tryunlink)


def warnings_of(session):
    """what the session's ui warns from now on, as a list"""
    seen = []
    session.ui.warn = lambda *msgs, **opts: seen.append(b''.join(msgs))
    return seen


@pytest.mark.parametrize('undo', ['teardown', 'abort callback'])
def test_a_file_that_cannot_be_removed_is_left_and_named_once(
    applied, monkeypatch, undo
):
    # a read-only data/sub: its files stay, the others go; the abort
    # callback still lets core's rollback remove its journal; after the
    # teardown, the abort takes nothing back again, and warns of nothing
    session, written = applied
    repo = session._repo
    refusing(monkeypatch, b'/data/sub/')
    warned = warnings_of(session)
    with repo.lock():
        tr = repo.transaction(b'test')
        session.watch_transaction()
        if undo == 'teardown':
            escaping(lambda: session.finish(failing=True))
        escaping(tr.abort)
    assert [os.path.exists(p) for p in written] == [False, True, True, False]
    assert not repo.svfs.exists(b'journal')
    assert len(warned) == 2, warned
    assert warned[0].startswith(
        b'warning: 2 files the failed stream apply wrote could not be '
        b'removed, the first data/sub/'
    )
    assert warned[0].endswith(b': Permission denied\n')


def test_the_abort_callback_warns_of_a_take_back_cut_short(
    applied, monkeypatch
):
    # a second Ctrl-C while the abort callback takes the apply back: core's
    # rollback still runs, and the user is told files are left
    session, written = applied
    repo = session._repo
    warned = warnings_of(session)
    with repo.lock():
        tr = repo.transaction(b'test')
        session.watch_transaction()
        interrupting(monkeypatch, 2)
        escaping(tr.abort)
    assert not repo.svfs.exists(b'journal')
    assert [w for w in warned if b'stopped' in w] == [
        b'warning: taking back the failed stream apply stopped '
        b'(KeyboardInterrupt): some of its files are left in the store\n'
    ]


def test_a_take_back_cut_short_has_removed_the_changelog_first(
    lanerepo, monkeypatch
):
    # whatever a take-back cut short leaves reads as an empty repository
    # with stray files, not as revisions whose files are missing
    session = streamapply.ApplySession(lanerepo, b'v1')
    names = (b'data/a.i', b'data/sub/b.i', b'00manifest.i', b'00changelog.i',
             b'00changelog.d')
    for name in names:
        lanerepo.svfs.write(name, b'x')
    real = streamapply.util.tryunlink
    removed = []

    def tryunlink(path):
        if removed:  # every call after the first one
            raise KeyboardInterrupt
        removed.append(os.path.basename(path))
        return real(path)

    monkeypatch.setattr(streamapply.util, 'tryunlink', tryunlink)
    try:
        with pytest.raises(KeyboardInterrupt):
            session.journal.undo()
    finally:
        session.closer.finish(failing=True)
    # its index: without it there is no revision, data file or not
    assert removed == [b'00changelog.i']
    assert not lanerepo.svfs.exists(b'00changelog.i')
    assert lanerepo.svfs.exists(b'00changelog.d')
    assert lanerepo.svfs.exists(b'data/a.i')


# the transaction owns what the stream writes ------------------------------


@pytest.fixture
def transacting(repo_with):
    """``transacting(settings)``: a session inside a transaction, as a
    stream apply runs, in a repository with the ``[worker]`` settings; the
    repository and a reader of the transaction's two journals"""
    @contextlib.contextmanager
    def make(settings):
        # the extension is not loaded: these have no registered defaults
        repo = repo_with([
            (b'backgroundclosemaxthreadcount', b'4'),
            (b'backgroundclosethreshold', b'30'),
        ] + settings)
        with repo.lock():
            tr = repo.transaction(b'clone')
            session = streamapply.ApplySession(repo, b'v2')
            session.watch_transaction()

            def journals():
                return (
                    repo.svfs.read(b'journal'),
                    repo.svfs.tryread(b'journal.backupfiles'),
                )

            try:
                yield session, repo, journals
            finally:
                session.closer.finish(failing=True)
                tr.release()

    return make


@pytest.fixture
def journaling(transacting):
    """the same with worker.backgroundclosejournal on"""
    with transacting([(b'backgroundclosejournal', b'yes')]) as made:
        yield made


def test_nothing_is_registered_by_default(transacting):
    # core's journal entry costs every file of the apply: opt-in
    with transacting([]) as (session, repo, journals):
        session.journal.check_name(repo.svfs, b'journal')  # nothing to protect
        session.journal.register(repo.svfs, b'data/Foo.i')
        assert journals()[0] == b''


def test_a_store_file_is_registered_by_its_name_in_the_store(journaling):
    session, repo, journals = journaling
    assert session.journal.journaled
    # upper case: the store's encoding changes the name on disk; the
    # transaction opens it through the store's vfs, which encodes it
    session.journal.register(repo.svfs, b'data/Foo.i')
    session.journal.register(repo.store.rawvfs, b'data/_foo.i')  # not again
    # not the store's
    session.journal.register(repo.cachevfs, b'branch2-served')
    assert journals() == (b'data/Foo.i\x000\n', b'')


@pytest.mark.parametrize(
    'name',
    [
        b'data/a\nb.i',  # a line of the journal each
        b'data/a\x00b.i',
        b'journal',  # the transaction's own files, written over
        b'journal.backupfiles',
        b'undo',
        b'lock',
    ],
)
def test_a_name_turned_against_the_transaction_is_refused_before_the_open(
    journaling, name
):
    session, repo, journals = journaling
    with pytest.raises(streamapply.error.Abort, match='malformed'):
        session.journal.check_name(repo.svfs, name)
    with pytest.raises(streamapply.error.Abort, match='malformed'):
        opening(session, repo, name)
    assert journals()[0] == b''


@pytest.mark.parametrize(
    'name', [b'phaseroots', b'data/journal.i', b'data/lock.i', b'00changelog.i']
)
def test_the_stream_s_own_names_pass(journaling, name):
    session, repo, journals = journaling
    session.journal.check_name(repo.svfs, name)
    # not the store's root
    session.journal.check_name(repo.cachevfs, b'journal')


def test_the_abort_removes_a_registered_file_even_without_the_undo(
    journaling, monkeypatch
):
    session, repo, journals = journaling
    monkeypatch.setattr(session.journal, 'undo', lambda: None)
    session.journal.register(repo.svfs, b'data/Foo.i')
    repo.svfs.write(b'data/Foo.i', b'x')
    repo.currenttransaction().abort()
    assert not repo.svfs.exists(b'data/Foo.i')


@pytest.mark.parametrize('end', ['abort', 'close'])
def test_a_writer_that_registers_after_the_transaction_ended_adds_nothing(
    journaling, end
):
    # a writer thread left to a slow file as the apply's transaction ends:
    # registering then would raise core's "transaction already
    # committed/aborted" on that thread; its file is the take-back's
    session, repo, journals = journaling
    getattr(repo.currenttransaction(), end)()
    session.journal.register(repo.svfs, b'data/late.i')


def opening(session, repo, name):
    """open ``name`` for writing through the store's vfs, inside the
    session's backgroundclosing() as a stream apply does"""
    rawvfs = repo.store.rawvfs
    rawvfs._backgroundfilecloser = streamwrappers.SessionCloser(session)
    try:
        storevfs = repo.svfs
        fp = streamwrappers.storeopen(
            session, type(storevfs).__call__, storevfs, name, b'wb'
        )
        fp.close()
    finally:
        del rawvfs._backgroundfilecloser


@pytest.mark.parametrize('how', ['directory', 'file-parent', 'absolute'])
def test_a_name_the_open_refused_is_never_registered(
    journaling, tmp_path, how
):
    # the rollback would fail on it for good ("rollback failed - please run
    # hg recover", and the recover fails too), or remove what the audit
    # kept the stream from writing
    session, repo, journals = journaling
    if how == 'directory':
        os.makedirs(repo.svfs.join(b'data/x.i'))
        name = b'data/x.i'
    elif how == 'file-parent':
        name = b'requires/x.i'  # a file of every share-safe store
        repo.svfs.write(b'requires', b'')
    else:
        name = os.fsencode(tmp_path / 'outside.i')
    with pytest.raises((OSError, streamapply.error.Abort)):
        opening(session, repo, name)
    assert journals()[0] == b''


def test_a_file_opened_through_the_store_is_registered(journaling):
    session, repo, journals = journaling
    opening(session, repo, b'data/Foo.i')
    assert journals()[0] == b'data/Foo.i\x000\n'


def test_an_apply_s_abort_removes_new_files_and_truncates_others(
    journaling, monkeypatch
):
    # Mercurial 6.5's abort truncates files registered at offset 0, making
    # one removed meanwhile (by the undo) again, empty: the transaction of
    # an apply removes them there too (compat.remove_new_files_on_abort)
    session, repo, journals = journaling
    monkeypatch.setattr(session.journal, 'undo', lambda: None)
    repo.svfs.write(b'grown', b'0123')
    tr = repo.currenttransaction()
    tr.add(b'grown', 4)  # a file that existed, at 4 bytes
    repo.svfs.write(b'grown', b'0123456789')
    # removed before the abort
    session.journal.register(repo.svfs, b'data/gone.i')
    session.journal.register(repo.svfs, b'data/new.i')
    repo.svfs.write(b'data/new.i', b'x')
    tr.abort()
    assert not repo.svfs.exists(b'data/gone.i')
    assert not repo.svfs.exists(b'data/new.i')
    assert repo.svfs.read(b'grown') == b'0123'


# core's writer threads (stream v2, worker.parallel-stream-bundle-processing)


@pytest.mark.parametrize('closes', ['inline', 'background'])
def test_a_take_back_waits_for_core_s_writer_and_closes_none_of_its_files(
    repo_with, closes
):
    # the applying thread was interrupted (in core's join()) while one of
    # core's writer threads was in the middle of a file: the take-back must
    # neither close that writer's descriptor (it would write into a closed
    # or reused number) nor let it write any file after the take-back
    repo = repo_with([
        (b'backgroundclosemaxthreadcount', b'4'),
        (b'backgroundclosethreshold', b'30'),
        (b'backgroundclose', b'yes' if closes == 'background' else b'no'),
        (b'backgroundcloseminfilecount', b'0'),
    ])
    session = streamapply.ApplySession(repo, b'v2')
    data = repo.svfs.join(b'data')
    os.makedirs(data)
    midway = threading.Event()
    resume = threading.Event()

    def first_file():
        yield b'first part, '
        midway.set()
        resume.wait(10)
        yield b'second part'

    def files():
        yield os.path.join(data, b'a.i'), None, first_file()
        yield os.path.join(data, b'b.i'), None, iter([b'never written'])

    writer = threading.Thread(
        target=session.v2.write_files, args=(files(),),
        name='core writer',
    )
    writer.start()
    try:
        assert midway.wait(10)
        # the writer holds its descriptor: none of the session's own
        assert session.closer.owned == set()
        threading.Timer(0.3, resume.set).start()
        # the teardown waits for the writer to leave write_files()
        session.finish(failing=True)
        assert session.v2._corewriting == 0
        writer.join(5)
        assert not writer.is_alive()
    finally:
        resume.set()
        writer.join(10)
        session.closer.finish(failing=True)
    assert not session.closer.failed()  # nothing written into a closed fd
    # the writer stopped within the file: its second chunk never written
    assert session.book.merged()['write'].bytes == len(b'first part, ')
    assert os.listdir(repo.svfs.join(b'')) in ([], [b'requires'])


@pytest.fixture
def inline_v2(repo_with):
    """a repository whose closes are inline, and a stream v2 session into
    it, for one of core's writer threads to write through"""
    repo = repo_with([
        (b'backgroundclosemaxthreadcount', b'4'),
        (b'backgroundclosethreshold', b'30'),
        (b'backgroundclose', b'no'),
    ])
    return repo, streamapply.ApplySession(repo, b'v2')


@pytest.mark.parametrize('chunks', [[b'manifest'], []],
                         ids=['with data', 'empty'])
def test_a_core_writer_whose_open_outlasts_the_take_back_removes_its_file(
    inline_v2, monkeypatch, chunks
):
    # one of core's writers is still in its open when the apply fails; the
    # take-back waits the grace period for it, then goes on without it.
    # The open then returns, creating the file after the take-back: the
    # writer must remove it, or an empty file stays in a failed clone
    repo, session = inline_v2
    monkeypatch.setattr(engine.Closer, 'GRACE', 0.2)
    opening = threading.Event()
    release = threading.Event()
    real_open = engine.open_owned

    def held_open(path, *args, **kwargs):
        if threading.current_thread().name == 'core writer':
            opening.set()
            release.wait(10)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(engine, 'open_owned', held_open)
    # at the top of the store, which the take-back leaves in place
    name = repo.svfs.join(b'00manifest.i')
    writer = threading.Thread(
        target=session.v2.write_files,
        args=([(name, None, iter(chunks))],),
        name='core writer',
    )
    writer.start()
    try:
        assert opening.wait(10)
        session.finish(failing=True)  # gives up on the writer after 0.2 s
        assert session.v2._corewriting == 1
        release.set()
        writer.join(10)
        assert not writer.is_alive()
    finally:
        release.set()
        writer.join(10)
        session.closer.finish(failing=True)
    assert not os.path.lexists(name)
    assert session.v2._corewriting == 0


def test_a_failure_other_than_a_file_error_on_a_core_writer_is_the_files(
    inline_v2, monkeypatch
):
    # a MemoryError on one of core's writers is kept for the applying
    # thread as a failure of that file, not left to Python's thread hook;
    # the writer reads on, so that core's reader is not held up
    repo, session = inline_v2
    data = repo.svfs.join(b'data')
    os.makedirs(data)
    hooked = []
    monkeypatch.setattr(threading, 'excepthook', hooked.append)
    real_write = engine.write_all

    def failing_write(fd, chunk):
        if chunk == b'boom':
            raise MemoryError
        return real_write(fd, chunk)

    monkeypatch.setattr(engine, 'write_all', failing_write)
    read = []

    def chunks(*parts):
        for part in parts:
            read.append(part)
            yield part

    files = [
        (os.path.join(data, b'a.i'), None, chunks(b'boom', b'rest of a')),
        (os.path.join(data, b'b.i'), None, chunks(b'b')),
    ]
    writer = threading.Thread(
        target=session.v2.write_files, args=(iter(files),),
        name='core writer',
    )
    writer.start()
    writer.join(10)
    try:
        assert not writer.is_alive() and hooked == []
        assert read == [b'boom', b'rest of a', b'b']
        with pytest.raises(engine.FileError) as caught:
            session.closer.raise_failure()
        assert caught.value.name == files[0][0]
        assert isinstance(caught.value.error, MemoryError)
        assert caught.value.action == 'writing'
    finally:
        session.closer.finish(failing=True)


@pytest.mark.skipif(
    compat.DATA_QUEUE is None,
    reason="core has no reading thread for stream v2 before Mercurial 7.0",
)
def test_a_failing_parallel_apply_ends_core_s_reading_thread_and_writers():
    # core's reading thread waits for room under its memory target, and
    # nothing reads any more: core's abort() alone leaves it waiting (the
    # apply hung in core's join)
    queue = compat.DATA_QUEUE(memory_target=1024)
    reads = []

    def chunks():
        for _ in range(100):
            reads.append(1)
            yield b'x' * 4096

    reader = threading.Thread(target=queue.fill_from, args=(chunks(),))
    reader.daemon = True  # should the test fail, it must not hang pytest
    reader.start()
    assert true_by(time.monotonic() + 10, lambda: queue._wait.locked())
    session = type(
        'Session', (), {'cancelled': threading.Event(), 'running': True}
    )()
    streamwrappers.abort_data_queue(session, type(queue).abort, queue)
    reader.join(10)
    assert not reader.is_alive()
    assert len(reads) < 100  # it saw the abort, and read no further
    # core's writers, which core joins next, write nothing more
    assert session.cancelled.is_set()
