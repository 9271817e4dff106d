# test_session.py - what the three seams' sessions share
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""A stream apply, a changegroup step and a working-copy update each run a
session (session.py): one way to end it, one wording for a failed close,
and no state outside the repository it writes into."""

import io
import os
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.dirname(__file__))

from mercurial import error, hg, util  # noqa: E402

import streamcraft  # noqa: E402

from hgext3rd.backgroundclose import engine as closermod  # noqa: E402
from hgext3rd.backgroundclose.changegroup import (  # noqa: E402
    revlogs as revlogwrite,
)
from hgext3rd.backgroundclose.checkout import (  # noqa: E402
    filecloser as workingcopy,
)
from hgext3rd.backgroundclose.shared import (  # noqa: E402
    compat,
    deferredwrite,
    handedfiles,
    handover,
    report as reportmod,
    seams,
    session as sessionmod,
)
from hgext3rd.backgroundclose.stream import (  # noqa: E402
    apply as streamapply,
    wrappers as streamwrappers,
)
from hgext3rd.backgroundclose.engine import policy as policymod  # noqa: E402
from hgext3rd.backgroundclose.engine import (  # noqa: E402
    writepolicy as writepolicymod,
)

needs_lane = pytest.mark.skipif(
    not closermod.native_available(),
    reason='the C module (_closelane) is not built for this Python',
)

SESSIONS = {
    'stream apply': lambda repo: streamapply.ApplySession(repo, b'v1'),
    'changegroup step': revlogwrite.RevlogSession,
    'working-copy update': lambda repo: workingcopy.WorkingCopyCloser(
        repo.ui
    ),
}


@pytest.fixture(params=sorted(SESSIONS))
def session(request, lanerepo):
    made = SESSIONS[request.param](lanerepo)
    yield made
    made.finish(failing=True)


class File:
    """a file object that says whether it was closed"""

    closed = False

    def write(self, data):
        return len(data)

    def flush(self):
        pass

    def close(self):
        self.closed = True


def kept_from_its_close(session):
    """a file of the session that an interrupt kept from its close, and
    the file object under it"""
    fp = File()
    proxy = handedfiles.HandedOverFile(fp, session.closer, b'data/a.i',
                                    files=session.files)
    return proxy, fp


def test_every_seam_runs_the_one_session(session):
    assert isinstance(session, sessionmod.Session)
    assert session.usable()
    seen = []
    thread = threading.Thread(target=lambda: seen.append(session.usable()))
    thread.start()
    thread.join()
    assert seen == [False]  # only the main thread writes for a session


def test_finishing_a_failed_session_closes_what_an_interrupt_kept(session):
    proxy, fp = kept_from_its_close(session)
    session.finish(failing=True)
    assert fp.closed
    assert not session.usable()


def test_finishing_a_session_that_succeeded_leaves_open_files_open(session):
    # a revlog core keeps open past the step is core's to close
    proxy, fp = kept_from_its_close(session)
    session.finish(failing=False)
    assert not fp.closed
    proxy.close()
    assert not session.running


def system_threads():
    """the threads of this process, C lane threads included"""
    return set(os.listdir('/proc/self/task'))


def threads_outliving(before, bound=10.0):
    """the threads of this process that ``before`` did not list, once
    those that are ending have gone, or after ``bound`` seconds: the
    kernel lists a thread a moment past its join (Python's join returns
    once the thread's state is cleared, glibc's once the kernel has
    cleared its thread id), while a thread nobody stopped stays listed"""
    end = time.monotonic() + bound
    while True:
        new = system_threads() - before
        if not new or time.monotonic() > end:
            return new
        time.sleep(0.01)


def test_finishing_joins_every_thread_of_the_closer(session):
    # threads of other tests may end meanwhile: only new ones count
    before = system_threads()
    closer = session.closer
    for number in range(64):
        closer.close(File(), b'data/%d.i' % number)
    assert closer.threadcount > 0
    assert system_threads() - before
    session.finish(failing=False)
    assert not threads_outliving(before)


@pytest.mark.parametrize('name', ['stream apply', 'changegroup step'])
def test_a_failed_close_comes_out_of_a_run_as_an_abort(lanerepo, name):
    session = SESSIONS[name](lanerepo)
    storevfs = lanerepo.store.rawvfs
    path = lanerepo.svfs.join(b'data/a.i')
    calls = []

    def wrapper(session, orig, value):
        calls.append(value)
        return orig(value)

    def failing_step(value):
        assert seams.writing(storevfs) is session
        os.path.exists(value)
        raise closermod.FileError(path, OSError(5, 'Input/output error'),
                                  'closing')

    with pytest.raises(error.Abort) as caught:
        session.run(storevfs, [(os.path, 'exists', wrapper)], failing_step,
                    (b'x',), {})
    # the file as the user knows it: a stream apply names it in the store
    described = b'data/a.i' if name == 'stream apply' else path
    assert caught.value.message == (
        b'error closing %s: Input/output error' % described
    )
    assert isinstance(caught.value.__cause__, closermod.FileError)
    assert calls == [b'x']
    # ended: not running, its wrapper gone, the store not marked
    assert not session.running
    assert os.path.exists(b'x') is False and calls == [b'x']
    assert seams.writing(storevfs) is None


def test_reports_are_collected_for_one_repository_only(lanerepo, tmp_path):
    other = hg.repository(
        lanerepo.ui, os.fsencode(str(tmp_path / 'other')), create=True
    )
    assert reportmod.collector(lanerepo) is None
    with reportmod.collecting(lanerepo) as reports:
        # a filtered view is the same repository
        assert reportmod.collector(lanerepo.filtered(b'visible')) is reports
        assert reportmod.collector(other) is None
        apply = streamapply.ApplySession(lanerepo, b'v1')
        elsewhere = streamapply.ApplySession(other, b'v1')
        for made in (apply, elsewhere):
            made.finish(failing=False)
            made.deliver_report()
        with reportmod.collecting(lanerepo) as inner:
            assert reportmod.collector(lanerepo) is inner
        assert reportmod.collector(lanerepo) is reports
    assert [r.format for r in reports] == [b'v1']
    assert reportmod.collector(lanerepo) is None
    assert '_backgroundclose_reports' not in vars(lanerepo.unfiltered())


@pytest.fixture
def cheap_closes_repo(repo_with):
    """a repository whose closer stays adaptive, with a threshold no close
    on this machine reaches, and no writer threads"""
    return repo_with([
        (b'backgroundclosemaxthreadcount', b'4'),
        (b'backgroundclosenative', b'yes'),
        (b'backgroundclosethreshold', b'100000'),
        (b'backgroundclosewrites', b'no'),
    ])


def write_stream_files(repo, session, count, onfile=None, **options):
    """write ``count`` files as a stream consumer does, inside the
    session (``backgroundclose=True``: as stream v1 does), calling
    ``onfile(number)`` (if given) before each: the type of each file
    object core's vfs returned"""
    files = [(b'data/f%d.i' % n, len(b'%d' % n)) for n in range(count)]
    stream = io.BytesIO(b''.join(b'%d' % n for n in range(count)))
    return copy_stream_files(repo, session, files, stream, onfile, **options)


def copy_stream_files(repo, session, files, stream, onfile=None,
                      **options):
    """copy ``files`` ((name, declared size)) out of ``stream`` inside the
    session, as every stream consumer copies them but stream v2 from
    Mercurial 7.0 on (``backgroundclose=True``: as stream v1 does),
    calling ``onfile(number)`` (if given) before each: the type of each
    file object core's vfs returned"""
    kinds = []

    def consume():
        with repo.svfs.backgroundclosing(repo.ui):
            for number, (name, size) in enumerate(files):
                if onfile is not None:
                    onfile(number)
                with repo.svfs(name, b'w', **options) as fp:
                    kinds.append(type(fp))
                    for chunk in util.filechunkiter(stream, limit=size):
                        fp.write(chunk)

    session.stream = stream
    with repo.lock():
        session.run(repo.store.rawvfs,
                    streamapply.session_seams(session, repo),
                    consume, (), {})
    return kinds


def own_file(session):
    """the type of the files the session opens itself where it leaves
    none to core: written straight into their descriptors where the C
    module is built (the repositories here ask for it)"""
    if closermod.native_available():
        return handedfiles.DescriptorFile
    return handedfiles.HandedOverFile


def stream_bytes(count):
    return sum(len(b'%d' % number) for number in range(count))


def sample_skip_sample(repo, fmt):
    """a stream apply of a sample, a skip and a sample of files, whose
    bytes are checked (those of the files left to core count too):
    (session, sample, skip, count)"""
    schedule = policymod.SkipSchedule
    sample = schedule.SAMPLE
    # a v3 stream's closes are core's, untimed: its skips are short
    skip = schedule.SKIP if fmt != b'v3' else schedule.UNWATCHED
    count = sample + skip + sample
    session = streamapply.ApplySession(
        repo, fmt, expectedbytes=stream_bytes(count)
    )
    assert session.watches_skips() == (fmt != b'v3')
    return session, sample, skip, count


@pytest.mark.parametrize(
    'fmt, foreign',
    [(b'v1', True), (b'v3', False), (b'v3', True)],
    ids=['v1, another wrapper', 'v3', 'v3, another wrapper'],
)
def test_a_stream_apply_leaves_files_to_core_while_closes_are_cheap(
    cheap_closes_repo, spied_vfs_call, fmt, foreign
):
    # stream v1 opens with backgroundclose=True: core's close of a file
    # left to it comes back to the session, which counts its bytes.  It
    # leaves files to core only where it cannot open them itself: another
    # extension wraps core's open (or the C module is not built)
    options = {'backgroundclose': True} if fmt == b'v1' else {}
    repo = cheap_closes_repo
    if foreign:
        spied_vfs_call.wrap()
    session, sample, skip, count = sample_skip_sample(repo, fmt)
    wrapped = []
    kinds = write_stream_files(
        repo, session, count,
        onfile=lambda number: wrapped.append(wraps_open()), **options
    )
    # a sample is the session's own file, opened without core's open (no
    # util.posixfile wrapper to put back for each sample); core's file
    # behind the session's proxy where the C module is not built, or where
    # another extension's wrapper keeps the session from opening it itself
    own = (
        handedfiles.DescriptorFile
        if session.files.writes_direct() and not foreign
        else handedfiles.HandedOverFile
    )
    assert kinds[:sample] == [own] * sample
    assert not {handedfiles.DescriptorFile, handedfiles.HandedOverFile} & set(
        kinds[sample : sample + skip]
    )
    assert kinds[sample + skip :] == [own] * sample
    assert session.skipped == skip
    # the files left to core open through core's vfs.__call__ alone
    assert wrapped == [True] * sample + [False] * skip + [True] * sample
    assert not wraps_open()
    # core's files are whole and closed
    assert repo.svfs.read(b'data/f%d.i' % (count - 1)) == b'%d' % (count - 1)


def test_a_stream_v1_apply_opens_every_file_itself_where_it_can(
    cheap_closes_repo,
):
    # core's path for a v1 file left to it (backgroundclose=True, core's
    # delayclosedfile, the close back through the session) costs more than
    # the session's direct open: no file is left to core, and nothing
    # counts files for skips
    if not closermod.native_available():
        pytest.skip('the C module is not built here: v1 leaves files to '
                    'core (test above)')
    repo = cheap_closes_repo
    session, sample, skip, count = sample_skip_sample(repo, b'v1')
    assert session.files.corecall is not None
    assert not session.may_ever_skip()
    assert not any(
        getattr(seam, '__name__', None) == 'filechunkiter'
        for _c, _n, seam in filter(
            None, streamapply.session_seams(session, repo)
        )
    )
    kinds = write_stream_files(repo, session, count, backgroundclose=True)
    assert kinds == [handedfiles.DescriptorFile] * count
    assert session.skipped == 0
    assert repo.svfs.read(b'data/f%d.i' % (count - 1)) == b'%d' % (count - 1)


def wraps_open():
    """whether the stream apply's wrapper of vfs.__call__ is in place"""
    from mercurial import extensions, vfs as vfsmod

    return any(
        getattr(wrapper, 'func', None) is streamwrappers.vfsopen
        for wrapper in extensions.getwrapperchain(vfsmod.vfs, '__call__')
    )


def test_only_the_stream_s_own_copies_count_files_left_to_core(
    cheap_closes_repo
):
    # util.filechunkiter over anything else than the stream, while files
    # are left to core, is no file of the stream
    from mercurial import util

    repo = cheap_closes_repo
    session, sample, skip, count = sample_skip_sample(repo, b'v3')

    def other_copy(number):
        assert list(util.filechunkiter(io.BytesIO(b'other'), limit=5))

    kinds = write_stream_files(repo, session, count, onfile=other_copy)
    assert runs_of(kinds) == [(True, sample), (False, skip), (True, sample)]
    assert session.skipped == skip


def test_files_copied_without_filechunkiter_are_never_left_to_core(
    cheap_closes_repo
):
    # nothing would count the files left to core, and so end a skip: none
    # begins
    repo = cheap_closes_repo
    session = streamapply.ApplySession(repo, b'v3')
    count = policymod.SkipSchedule.SAMPLE * 3
    kinds = []

    def consume():
        with repo.svfs.backgroundclosing(repo.ui):
            for number in range(count):
                with repo.svfs(b'data/f%d.i' % number, b'w') as fp:
                    kinds.append(type(fp))
                    fp.write(b'%d' % number)

    session.stream = io.BytesIO()
    with repo.lock():
        session.run(repo.store.rawvfs,
                    streamapply.session_seams(session, repo), consume, (), {})
    assert session.skipped == 0
    assert set(kinds) <= {handedfiles.DescriptorFile, handedfiles.HandedOverFile}
    assert len(kinds) == count


def test_the_bytes_of_files_left_to_core_are_checked(cheap_closes_repo):
    repo = cheap_closes_repo
    count = policymod.SkipSchedule.SAMPLE * 2
    session = streamapply.ApplySession(
        repo, b'v3', expectedbytes=stream_bytes(count) + 1
    )
    with pytest.raises(error.Abort) as caught:
        write_stream_files(repo, session, count)
    assert caught.value.message.endswith(
        b': %d bytes of file data, the header declares %d'
        % (stream_bytes(count), stream_bytes(count) + 1)
    )


@pytest.fixture
def v2_through_the_vfs(cheap_closes_repo, monkeypatch):
    """a repository, a stream v2 apply session as before Mercurial 7.0
    (files written through the vfs), and the files of its stream: one
    sample through the session, then as many left to core"""
    monkeypatch.setattr(streamapply.compat, 'HAS_WRITE_FILES', False)
    count = policymod.SkipSchedule.SAMPLE * 2
    files = [(b'data/f%d.i' % n, len(b'%d' % n)) for n in range(count)]
    data = b''.join(b'%d' % n for n in range(count))
    session = streamapply.ApplySession(
        cheap_closes_repo, b'v2', expectedcount=count,
        expectedbytes=len(data)
    )
    return cheap_closes_repo, session, files, data


def stats_of(monkeypatch, paths):
    """which of ``paths`` os.stat() is asked about from now on, in order"""
    stats = []
    stat = os.stat

    def counting_stat(path, *args, **kwargs):
        # os.stat() also takes descriptors
        if isinstance(path, (str, bytes, os.PathLike)) and (
            os.fsencode(path) in paths
        ):
            stats.append(path)
        return stat(path, *args, **kwargs)

    monkeypatch.setattr(os, 'stat', counting_stat)
    return stats


def test_files_left_to_core_count_the_sizes_the_stream_declares(
    v2_through_the_vfs, monkeypatch
):
    repo, session, files, data = v2_through_the_vfs
    # the sample's files are the session's own, then the rest left to core
    left = [repo.svfs.join(name) for name, _size in files[len(files) // 2:]]
    stats = stats_of(monkeypatch, set(left))
    counted = spy(monkeypatch, session, '_counted')
    copy_stream_files(repo, session, files, io.BytesIO(data))
    assert session.skipped == len(left)
    # counted by the sizes the stream declares, but the last one's chunks
    # as they are copied; none measured on disk
    assert len(counted) == 1
    assert stats == []
    assert repo.svfs.read(files[-1][0]) == b'%d' % (len(files) - 1)


def test_a_stream_that_ends_inside_a_file_left_to_core_is_found_short(
    v2_through_the_vfs
):
    repo, session, files, data = v2_through_the_vfs
    with pytest.raises(error.Abort) as caught:
        copy_stream_files(repo, session, files, io.BytesIO(data[:-1]))
    assert session.skipped == len(files) // 2
    assert caught.value.message.endswith(
        b': %d bytes of file data, the header declares %d'
        % (len(data) - 1, len(data))
    )


# stream v2 before Mercurial 7.0: core's consumev2 opens each file through
# the vfs and copies it with util.filechunkiter
needs_v2_through_the_vfs = pytest.mark.skipif(
    compat.HAS_WRITE_FILES,
    reason='from Mercurial 7.0 on, _write_files writes stream v2 files',
)


def v2_consumed(repo, count, cut=0):
    """apply a stream v2 of ``count`` files through core's consumev2 in a
    session, the stream cut ``cut`` bytes short"""
    from mercurial import streamclone

    payload = streamcraft.v2_payload(
        [(b's', b'data/f%d.i' % n, b'%d' % n) for n in range(count)]
    )
    consume = streamapply.consumer(b'v2')
    consume(streamclone.consumev2, repo,
            io.BytesIO(payload[:len(payload) - cut]), count,
            stream_bytes(count))


@needs_v2_through_the_vfs
def test_core_s_v2_consumer_declares_the_sizes_of_files_left_to_core(
    cheap_closes_repo, monkeypatch
):
    repo = cheap_closes_repo
    count = policymod.SkipSchedule.SAMPLE * 2
    # the sample's files are the session's own, then the rest left to core
    left = [repo.svfs.join(b'data/f%d.i' % n)
            for n in range(count // 2, count)]
    stats = stats_of(monkeypatch, set(left))
    leftto = calls_of(monkeypatch, streamapply.ApplySession, 'core_opened')
    v2_consumed(repo, count)
    # counted by the sizes the stream declares as core asks for them, none
    # measured on disk
    assert [size for _chunks, size in leftto] == [
        len(b'%d' % n) for n in range(count // 2, count)]
    assert stats == []
    assert repo.svfs.read(b'data/f%d.i' % (count - 1)) == b'%d' % (count - 1)


@needs_v2_through_the_vfs
def test_core_s_v2_consumer_cut_inside_a_last_file_left_to_core_aborts(
    cheap_closes_repo, monkeypatch
):
    repo = cheap_closes_repo
    count = policymod.SkipSchedule.SAMPLE * 2
    leftto = calls_of(monkeypatch, streamapply.ApplySession, 'core_opened')
    with pytest.raises(error.Abort) as caught:
        v2_consumed(repo, count, cut=1)
    assert caught.value.message.endswith(
        b': %d bytes of file data, the header declares %d'
        % (stream_bytes(count) - 1, stream_bytes(count))
    )
    # the sample's files were the session's own, then the rest core's
    assert len(leftto) == count // 2
    assert not repo.svfs.exists(b'data/f%d.i' % (count - 1))


@pytest.mark.skipif(
    not closermod.native_available(),
    reason='DescriptorFiles need the C module (_closelane.c)',
)
def test_a_stream_apply_never_wraps_posixfile_for_its_own_files(
    cheap_closes_repo
):
    # the session opens the files the stream writes itself (_open_direct):
    # no util.posixfile wrapper costs every other open of the process a
    # call, during the samples or the skips between them
    from mercurial import extensions, util

    repo = cheap_closes_repo
    session, sample, skip, count = sample_skip_sample(repo, b'v3')
    chain = len(extensions.getwrapperchain(util, 'posixfile'))
    wrapped = []
    kinds = write_stream_files(
        repo, session, count,
        onfile=lambda number: wrapped.append(
            len(extensions.getwrapperchain(util, 'posixfile'))
        ),
    )
    assert kinds[:sample] == [handedfiles.DescriptorFile] * sample
    assert session.skipped == skip
    assert wrapped == [chain] * count
    assert not session.files.wraps_posixfile()


# what core's vfs.__call__ does for a file opened 'w', the session does
# for the stream's own files (ApplySession._open_direct)


@pytest.mark.parametrize('closes', ['background', 'adaptive'])
def test_a_link_where_a_stream_file_goes_is_replaced_not_written_through(
    request, tmp_path, closes
):
    repo = request.getfixturevalue(
        'lanerepo' if closes == 'background' else 'cheap_closes_repo'
    )
    outside = tmp_path / 'outside'
    outside.write_bytes(b'not the stream\n')
    data = tmp_path / 'repo' / '.hg' / 'store' / 'data'
    data.mkdir()
    os.symlink(outside, data / 'f0.i')
    os.link(outside, data / 'f1.i')
    session = streamapply.ApplySession(repo, b'v3')
    kinds = write_stream_files(repo, session, 2)
    if closermod.native_available():
        assert kinds == [handedfiles.DescriptorFile] * 2
    assert outside.read_bytes() == b'not the stream\n'
    assert not os.path.islink(data / 'f0.i')
    assert (data / 'f0.i').read_bytes() == b'0'
    assert (data / 'f1.i').read_bytes() == b'1'
    assert os.stat(outside).st_nlink == 1


def test_the_store_s_file_mode_is_given_to_the_stream_s_files(lanerepo):
    repo = lanerepo
    # a store shared by a group (core takes createmode from the mode of
    # .hg/store)
    repo.store.rawvfs.createmode = 0o2770
    old = os.umask(0o077)
    try:
        session = streamapply.ApplySession(repo, b'v3')
        kinds = write_stream_files(repo, session, 2)
    finally:
        os.umask(old)
    if closermod.native_available():
        assert kinds == [handedfiles.DescriptorFile] * 2
    for number in range(2):
        mode = os.stat(repo.svfs.join(b'data/f%d.i' % number)).st_mode
        assert mode & 0o7777 == 0o660, oct(mode)


def test_a_directory_removed_while_the_stream_writes_is_made_again(
    lanerepo
):
    repo = lanerepo
    session = streamapply.ApplySession(repo, b'v3')

    def remove_data(number):
        if number == 1:  # data/ was made for f0, now known to the session
            os.unlink(repo.svfs.join(b'data/f0.i'))
            os.rmdir(repo.svfs.join(b'data'))

    write_stream_files(repo, session, 2, onfile=remove_data)
    assert repo.svfs.read(b'data/f1.i') == b'1'
    assert session.directories.created == 2


class SpiedVfsCall(list):
    """the names another extension's wrapper of vfs.__call__ sees opened
    for writing, once ``wrap()`` put it in place (below the session's
    own)"""

    def wrap(self):
        from mercurial import extensions, vfs as vfsmod

        extensions.wrapfunction(vfsmod.vfs, '__call__', self.spy)

    def spy(self, orig, vfs, path, mode=b'rb', *args, **kwargs):
        if mode in (b'w', b'wb'):
            self.append(path)
        return orig(vfs, path, mode, *args, **kwargs)

    def unwrap(self):
        from mercurial import extensions, vfs as vfsmod

        if self.spy in extensions.getwrapperchain(vfsmod.vfs, '__call__'):
            extensions.unwrapfunction(vfsmod.vfs, '__call__', self.spy)


@pytest.fixture
def spied_vfs_call():
    seen = SpiedVfsCall()
    try:
        yield seen
    finally:
        seen.unwrap()


@pytest.mark.parametrize('closes', ['background', 'adaptive'])
@pytest.mark.parametrize('wrapped', ['first', 'once the session was made'])
def test_another_extension_s_open_wrapper_sees_the_stream_s_files(
    request, spied_vfs_call, closes, wrapped
):
    # the session opens a stream's files itself only where core's open is
    # core's alone: another extension's wrapper keeps its view of them
    repo = request.getfixturevalue(
        'lanerepo' if closes == 'background' else 'cheap_closes_repo'
    )
    if wrapped == 'first':
        spied_vfs_call.wrap()
    session = streamapply.ApplySession(repo, b'v3')
    if wrapped == 'first':
        assert session.files.corecall is None
    else:
        spied_vfs_call.wrap()
    write_stream_files(repo, session, 4)
    assert [
        path for path in spied_vfs_call if path.startswith(b'data/')
    ] == [b'data/f%d.i' % n for n in range(4)]
    assert repo.svfs.read(b'data/f3.i') == b'3'


@needs_lane
@pytest.mark.parametrize('wrapped', ['first', 'once the closer was made'])
def test_another_extension_s_open_wrapper_sees_an_update_s_files(
    lanerepo, spied_vfs_call, wrapped
):
    if wrapped == 'first':
        spied_vfs_call.wrap()
        made = None
    else:
        made = spied_vfs_call.wrap
    kinds = update_writes(lanerepo, [(b'a', b'x'), (b'b/c', b'y')],
                          made=made)
    assert spied_vfs_call == [b'a', b'b/c']
    # core's open, its descriptor for the lane all the same
    assert kinds == [(handedfiles.DescriptorFile, True)] * 2
    assert lanerepo.wvfs.read(b'b/c') == b'y'


@needs_lane
@pytest.mark.parametrize('seam', ['stream', 'update'])
def test_another_extension_s_join_wrapper_names_the_own_files(
    lanerepo, seam
):
    # a name is joined without a call to vfs.join only where it is core's
    # alone
    from mercurial import extensions, vfs as vfsmod

    joined = []

    def spy(orig, self, path, *insidef):
        joined.append(path)
        return orig(self, path, *insidef)

    extensions.wrapfunction(vfsmod.vfs, 'join', spy)
    try:
        if seam == 'stream':
            session = streamapply.ApplySession(lanerepo, b'v3')
            kinds = write_stream_files(lanerepo, session, 3)
            names = [b'data/f%d.i' % n for n in range(3)]
        else:
            kinds = [kind for kind, _wrapped in update_writes(
                lanerepo, [(b'a', b'x'), (b'b/c', b'y')])]
            names = [b'a', b'b/c']
    finally:
        extensions.unwrapfunction(vfsmod.vfs, 'join', spy)
    assert kinds == [handedfiles.DescriptorFile] * len(names)
    # each through the wrapper (Mercurial 6.5 joins a stream's names once
    # more elsewhere)
    assert set(names) <= set(joined)


@needs_lane
def test_the_stream_s_own_opens_keep_core_s_audit(lanerepo, tmp_path):
    repo = lanerepo
    outside = tmp_path / 'outside'
    outside.mkdir()
    os.symlink(outside, tmp_path / 'repo' / '.hg' / 'store' / 'data')
    session = streamapply.ApplySession(repo, b'v3')
    with pytest.raises(error.Abort) as caught:
        write_stream_files(repo, session, 1)
    assert b'symbolic link' in caught.value.message
    assert os.listdir(outside) == []
    assert session.files.fds == set()


@needs_lane
def test_a_nul_byte_in_a_stream_file_s_name_aborts_naming_it(lanerepo):
    from mercurial import vfs as vfsmod

    repo = lanerepo
    session = streamapply.ApplySession(repo, b'v3')
    with pytest.raises(error.Abort) as caught:
        copy_stream_files(repo, session, [(b'data/a\0b.i', 1)],
                          io.BytesIO(b'x'))
    assert b'data/a' in caught.value.message
    assert session.files.fds == set()
    assert vfsmod.vfs  # core's open was not needed to refuse it


@needs_lane
@pytest.mark.parametrize('seam', ['stream', 'update'])
def test_an_interrupt_as_core_fixes_an_own_file_s_mode_leaks_nothing(
    lanerepo, monkeypatch, seam
):
    from mercurial import vfs as vfsmod

    repo = lanerepo
    fixed = []
    real = vfsmod.vfs._fixfilemode

    def interrupted(self, name):
        fixed.append(name)
        if len(fixed) == 3:
            raise KeyboardInterrupt
        return real(self, name)

    monkeypatch.setattr(vfsmod.vfs, '_fixfilemode', interrupted)
    opened = set(os.listdir('/proc/self/fd'))
    with pytest.raises(KeyboardInterrupt):
        if seam == 'stream':
            session = streamapply.ApplySession(repo, b'v3')
            write_stream_files(repo, session, 5)
        else:
            update_writes(repo, [(b'f%d' % n, b'x') for n in range(5)])
    assert len(fixed) == 3
    if seam == 'stream':
        assert session.files.fds == set()
    assert set(os.listdir('/proc/self/fd')) <= opened


def update_writes(repo, files, made=None, **options):
    """write ``files`` ((name, data)) into the working copy as an update
    worker does (``backgroundclose=True`` inside
    ``wvfs.backgroundclosing()``), with a WorkingCopyCloser on the lane
    (``made()`` called once it is made): the type of each file object the
    vfs returned, and whether util.posixfile was wrapped to open it
    (core's open took it)"""
    closer = workingcopy.WorkingCopyCloser(repo.ui)
    if made is not None:
        made()
    kinds = []
    with closer:
        repo.wvfs._backgroundfilecloser = closer
        try:
            for name, data in files:
                with repo.wvfs(name, b'wb', backgroundclose=True,
                               atomictemp=False, **options) as fp:
                    kinds.append((type(fp), closer.files.wraps_posixfile()))
                    fp.write(data)
        finally:
            del repo.wvfs._backgroundfilecloser
    return kinds


@needs_lane
def test_an_update_opens_its_files_as_core_s_vfs_would(lanerepo, tmp_path):
    repo = lanerepo
    root = tmp_path / 'repo'
    outside = tmp_path / 'outside'
    outside.write_bytes(b'not the update\n')
    os.symlink(outside, root / 'link')
    os.link(outside, root / 'hardlink')
    (root / 'old').write_bytes(b'an older, longer version\n')
    repo.wvfs.createmode = 0o2770
    old = os.umask(0o077)
    try:
        kinds = update_writes(repo, [
            (b'link', b'a'), (b'hardlink', b'b'), (b'old', b'c'),
            (b'new/deep/file', b'd'),
        ])
    finally:
        os.umask(old)
    assert kinds == [(handedfiles.DescriptorFile, False)] * 4
    assert outside.read_bytes() == b'not the update\n'
    assert os.stat(outside).st_nlink == 1
    assert not os.path.islink(root / 'link')
    for name, data in (('link', b'a'), ('hardlink', b'b'), ('old', b'c'),
                       ('new/deep/file', b'd')):
        assert (root / name).read_bytes() == data
        mode = os.stat(root / name).st_mode & 0o7777
        assert mode == 0o660, (name, oct(mode))
    # the directories made are core's util.makedirs', with its mode
    assert os.stat(root / 'new' / 'deep').st_mode & 0o7777 == 0o2770


@needs_lane
def test_an_update_s_open_core_s_audit_refuses_writes_nothing(
    lanerepo, tmp_path
):
    repo = lanerepo
    root = tmp_path / 'repo'
    os.symlink(tmp_path, root / 'escape')
    with pytest.raises(error.Abort) as caught:
        update_writes(repo, [(b'escape/x', b'x')])
    assert b'escape' in caught.value.message
    assert not os.path.exists(tmp_path / 'x')


@needs_lane
def test_an_update_s_open_with_other_arguments_is_core_s(lanerepo):
    kinds = update_writes(lanerepo, [(b'f', b'x')], notindexed=True)
    assert kinds == [(handedfiles.DescriptorFile, True)]
    assert lanerepo.wvfs.read(b'f') == b'x'


def runs_of(kinds):
    """``[(own, count), ...]``: how many files in a row went through the
    session's own path (own) or were left to core"""
    runs = []
    for kind in kinds:
        own = kind in (handedfiles.HandedOverFile, handedfiles.DescriptorFile)
        if runs and runs[-1][0] == own:
            runs[-1][1] += 1
        else:
            runs.append([own, 1])
    return [tuple(run) for run in runs]


def skips_while(repo, session, count, cheap):
    """write ``count`` stream files in ``session``, whose samples find
    closes cheap while ``cheap(number)`` says so for the file being
    written: the runs of own and core files (runs_of)"""
    may_skip = session.may_skip
    writing = [0]
    session.may_skip = lambda: cheap(writing[0]) and may_skip()

    def onfile(number):
        writing[0] = number

    return runs_of(write_stream_files(repo, session, count, onfile=onfile))


def test_each_cheap_sample_doubles_the_next_skip_up_to_a_bound(
    cheap_closes_repo
):
    # a long apply on a fast file system takes ever fewer of its files
    # through the session's own path; a file system that turns slow is
    # still noticed within SKIP << DOUBLINGS opens
    repo = cheap_closes_repo
    session = streamapply.ApplySession(repo, b'v3')
    session.schedule.SAMPLE, session.schedule.SKIP = 4, 16
    assert session.schedule.DOUBLINGS == 3
    # as if it timed a skip's closes (v2 from 7.0 on, v1): core closes a v3
    # skip's files, so its skips are short (the test after the next)
    session.watches_skips = lambda: True
    skips = [16, 32, 64, 128, 128]
    count = sum(skips) + 4 * (len(skips) + 1)
    runs = skips_while(repo, session, count, lambda number: True)
    expected = [(True, 4)]
    for skip in skips:
        expected += [(False, skip), (True, 4)]
    assert runs == expected
    assert session.skipped == sum(skips)
    assert repo.svfs.read(b'data/f%d.i' % (count - 1)) == b'%d' % (count - 1)


def test_a_sample_that_finds_closes_dear_starts_the_skips_over(
    cheap_closes_repo
):
    repo = cheap_closes_repo
    session = streamapply.ApplySession(repo, b'v3')
    session.schedule.SAMPLE, session.schedule.SKIP = 4, 16
    session.watches_skips = lambda: True  # as above
    # files 0-3 sampled, 4-19 skipped, 20-23 sampled, 24-55 skipped: the
    # sample of files 56-59 finds closes dear, the next one cheap again
    dear = range(56, 60)
    runs = skips_while(repo, session, 64 + 16 + 4 + 32 + 4, lambda number:
                       number not in dear)
    assert runs == [(True, 4), (False, 16), (True, 4), (False, 32),
                    (True, 8), (False, 16), (True, 4), (False, 32),
                    (True, 4)]


# stream v2 from Mercurial 7.0 on: core prepares each file through the
# vfs, then its _write_files opens, writes and closes them by path
needs_v2_writer = pytest.mark.skipif(
    not (compat.HAS_WRITE_FILES and compat.HAS_PREPARE_STREAMED_FILE),
    reason='this Mercurial writes stream v2 files through the vfs',
)


def spy(monkeypatch, session, name):
    """the list of the first arguments ``session.name`` is called with"""
    calls = []
    method = getattr(session, name)

    def called(*args, **kwargs):
        calls.append(args[0] if args else None)
        return method(*args, **kwargs)

    monkeypatch.setattr(session, name, called)
    return calls


def sessions_made(monkeypatch):
    """the list of the stream apply sessions made from now on"""
    made = []
    init = streamapply.ApplySession.__init__

    def recorded(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(streamapply.ApplySession, '__init__', recorded)
    return made


def skip_writes(monkeypatch):
    """stream v2 from Mercurial 7.0 on: the list of the files the session
    writes untimed in skips from now on (StreamV2Writer._write_skip), each
    as (path, whether core's own prepare_streamed_file was in place when
    the skip took it).  Core's own _write_files must never run meanwhile."""
    from mercurial import streamclone, vfs as vfsmod

    writes = []
    write_skip = streamapply.streamv2.StreamV2Writer._write_skip
    prepare = vfsmod.abstractvfs.prepare_streamed_file

    def record(item):
        writes.append(
            (item[0], vfsmod.abstractvfs.prepare_streamed_file is prepare)
        )
        return item

    def recorded(self, first, info):
        return write_skip(self, record(first), map(record, info))

    def core_s_own(info):
        pytest.fail('core\'s _write_files ran in a session')

    monkeypatch.setattr(
        streamapply.streamv2.StreamV2Writer, '_write_skip', recorded)
    monkeypatch.setattr(streamclone, '_write_files', core_s_own)
    return writes


def v2_files(count):
    """a stream v2 payload's files: [(name, data)]"""
    return [(b'data/f%d.i' % n, b'%d' % n) for n in range(count)]


def v2_applied(repo, files, stream=io.BytesIO, cut=0):
    """apply a stream v2 of ``files`` through core's consumev2 in a
    session, the stream read from ``stream(data)`` cut ``cut`` bytes
    short"""
    from mercurial import streamclone

    payload = streamcraft.v2_payload([(b's', n, data) for n, data in files])
    consume = streamapply.consumer(b'v2')
    consume(streamclone.consumev2, repo,
            stream(payload[:len(payload) - cut]), len(files),
            sum(len(data) for _name, data in files))


@needs_v2_writer
def test_stream_v2_writes_whole_skips_untimed_in_place_of_core_s_writer(
    cheap_closes_repo, monkeypatch
):
    from mercurial import vfs as vfsmod

    repo = cheap_closes_repo
    core_s_prepare = vfsmod.abstractvfs.prepare_streamed_file
    sample, skip = policymod.SkipSchedule.SAMPLE, 8
    monkeypatch.setattr(policymod.SkipSchedule, 'SKIP', skip)
    # a sample, a skip, a sample, a skip twice as long, cut short by the
    # stream's end
    count = sample * 2 + skip + skip
    sessions = sessions_made(monkeypatch)
    core = skip_writes(monkeypatch)
    prepared = prepares_of(monkeypatch)
    v2_applied(repo, v2_files(count))
    session, = sessions
    rawvfs = repo.store.rawvfs
    left = (list(range(sample, sample + skip))
            + list(range(sample * 2 + skip, count)))
    # the skips wrote exactly the skips' files, and core prepared every
    # file alone: with no writer thread, the session's prepare wrapper has
    # nothing to do, and is never put in place
    assert [path for path, _core in core] == [
        rawvfs.join(b'data/f%d.i' % n) for n in left]
    assert [n for n, (_path, ascore) in zip(left, core) if not ascore] == []
    assert prepared == []
    assert session.skipped == len(left)
    assert session.skipping == 0
    # the bytes of every file counted, those of the skips too (the apply
    # checks them against the stream's declared total)
    assert session.book.merged()['write'].bytes + session.corebytes == (
        stream_bytes(count))
    for number in (0, sample, sample + skip, count - 1):
        assert repo.svfs.read(b'data/f%d.i' % number) == b'%d' % number
    assert not session.closer.owned
    assert vfsmod.abstractvfs.prepare_streamed_file is core_s_prepare


class SlowAt:
    """stream/v2.py's time module, whose perf_counter (_write_skip's clock)
    moves a microsecond a call, and a second at the call that ends the
    ``nth`` timed close (1-based): that close is slow, whatever the
    threshold"""

    def __init__(self, nth):
        self.now, self.calls, self.nth = 0.0, 0, nth

    def perf_counter(self):
        self.calls += 1
        slow = self.calls == 2 * self.nth
        self.now += 1.0 if slow else 1e-6
        return self.now


@needs_v2_writer
@pytest.mark.parametrize('nth', [1, 3])
def test_a_slow_close_in_a_stream_v2_skip_ends_it_at_once(
    cheap_closes_repo, monkeypatch, nth
):
    # one close in a window of the skip's is timed, the first first: the
    # nth timed one is slow, so the skip ends after that file, and the
    # next files are the session's again (a sample, cheap here, then the
    # next skip, which doubles as before)
    from hgext3rd.backgroundclose.stream import v2 as streamv2

    repo = cheap_closes_repo
    sample, window = policymod.SkipSchedule.SAMPLE, policymod.SkipWatch.WINDOW
    skip = policymod.SkipSchedule.SKIP
    clock = SlowAt(nth)
    monkeypatch.setattr(streamv2, 'time', clock)
    sessions = sessions_made(monkeypatch)
    core = skip_writes(monkeypatch)
    ended = (nth - 1) * window + 1
    count = sample + ended + sample + 2 * skip
    v2_applied(repo, v2_files(count))
    session, = sessions
    assert session.watch.ended == 1
    # the first skip: up to the file whose close was slow; after the
    # sample, a skip of twice SKIP: the early end did not reset the doubling
    rawvfs = repo.store.rawvfs
    left = (list(range(sample, sample + ended))
            + list(range(2 * sample + ended, count)))
    assert [path for path, _core in core] == [
        rawvfs.join(b'data/f%d.i' % n) for n in left]
    assert session.skipped == ended + 2 * skip
    # one timed close in each window of the two skips, no more
    windows = nth + 2 * skip // window
    assert clock.calls == 2 * windows
    assert repo.svfs.read(b'data/f%d.i' % (count - 1)) == b'%d' % (count - 1)
    assert not session.closer.owned


@needs_v2_writer
@pytest.mark.parametrize('where', ['inside a skip', 'sampled'])
def test_a_stream_v2_cut_inside_the_last_file_aborts(
    cheap_closes_repo, monkeypatch, where
):
    repo = cheap_closes_repo
    sample = policymod.SkipSchedule.SAMPLE
    monkeypatch.setattr(policymod.SkipSchedule, 'SKIP', 8)
    # the stream ends four files into a skip of 8, or with the first file
    # of the sample after it
    count = sample + (4 if where == 'inside a skip' else 8 + 1)
    core = skip_writes(monkeypatch)
    files = v2_files(count)
    with pytest.raises(error.Abort) as caught:
        v2_applied(repo, files, cut=1)
    total = sum(len(data) for _name, data in files)
    assert caught.value.message.endswith(
        b': %d bytes of file data, the header declares %d'
        % (total - 1, total))
    # a skip wrote the last file, or the session's timed path
    assert len(core) == (4 if where == 'inside a skip' else 8)
    assert not repo.svfs.exists(files[-1][0])


def journaled_repo(repo_with, writers):
    """the cheap_closes_repo's settings, the journal on, and writer threads
    always (``writers``) or never"""
    return repo_with([
        (b'backgroundclosemaxthreadcount', b'4'),
        (b'backgroundclosenative', b'yes'),
        (b'backgroundclosethreshold', b'100000'),
        (b'backgroundclosewrites', b'yes' if writers else b'no'),
        (b'backgroundclosejournal', b'yes'),
    ])


@needs_v2_writer
def test_a_journaled_stream_v2_registers_the_files_of_its_skips(
    repo_with, monkeypatch
):
    # the cheap_closes_repo's settings, and the journal: each file is
    # registered with the transaction by the session, once opened, also
    # those of a skip
    repo = journaled_repo(repo_with, writers=False)
    monkeypatch.setattr(policymod.SkipSchedule, 'SKIP', 8)
    count = policymod.SkipSchedule.SAMPLE * 2
    sessions = sessions_made(monkeypatch)
    core = skip_writes(monkeypatch)
    # the transaction's abort alone removes the files
    monkeypatch.setattr(
        streamapply.journalmod.ApplyJournal, 'undo', lambda self: None)
    files = v2_files(count)
    with pytest.raises(error.Abort):
        v2_applied(repo, files, cut=1)  # fails once all are written
    session, = sessions
    assert session.skipped == 8
    assert len(core) == 8
    assert not [name for name, _data in files if repo.svfs.exists(name)]


def test_files_the_writers_finish_as_the_apply_ends_are_registered(
    repo_with, monkeypatch
):
    # journaled, with writer threads: the files they still write as the
    # stream ends are registered with the transaction all the same (the
    # journal ends once the closers are finished, not before), so that
    # hg recover after a kill removes them too
    from mercurial import transaction

    repo = journaled_repo(repo_with, writers=True)
    added = []
    add = transaction.transaction.add

    def recorded(tr, name, offset, *args, **kwargs):
        added.append(name)
        return add(tr, name, offset, *args, **kwargs)

    write = deferredwrite.FileWrite._write

    def slow(self, chunks):
        time.sleep(0.005)  # the writers are behind as the stream ends
        return write(self, chunks)

    monkeypatch.setattr(transaction.transaction, 'add', recorded)
    monkeypatch.setattr(deferredwrite.FileWrite, '_write', slow)
    files = v2_files(40)
    v2_applied(repo, files)
    assert sorted(n for n in added if n.startswith(b'data/')) == sorted(
        name for name, _data in files)
    for name, data in files:
        assert repo.svfs.read(name) == data


def counted_calls(monkeypatch, cls, name):
    """how many times ``cls.name`` is called from now on (a list of one)"""
    count = [0]
    method = getattr(cls, name)

    def called(self, *args, **kwargs):
        count[0] += 1
        return method(self, *args, **kwargs)

    monkeypatch.setattr(cls, name, called)
    return count


@pytest.mark.parametrize('failure', ['cut short', 'interrupted'])
def test_a_failed_apply_is_torn_down_once(
    cheap_closes_repo, monkeypatch, failure
):
    # three frames see a failed stream v2 apply: the exit of each closer
    # context core entered (one per vfs), the transaction's abort, and the
    # session's outermost frame.  The teardown runs once all the same: the
    # closer finished once, what an interrupt kept from it released once,
    # the apply taken back once
    repo = cheap_closes_repo
    finishes = counted_calls(monkeypatch, closermod.Closer, 'finish')
    releases = counted_calls(monkeypatch, handover.OwnedFiles, 'release')
    undos = counted_calls(
        monkeypatch, streamapply.journalmod.ApplyJournal, 'undo')
    files = v2_files(16)
    payload = streamcraft.v2_payload([(b's', n, d) for n, d in files])
    end = payload.index(files[10][0])

    class Interrupted(io.BytesIO):
        def read(self, size=-1):
            if self.tell() + (size if size >= 0 else 1) > end:
                raise KeyboardInterrupt()
            return super().read(size)

    if failure == 'cut short':
        with pytest.raises(error.Abort):
            v2_applied(repo, files, cut=1)  # found once all are written
    else:
        with pytest.raises(KeyboardInterrupt):
            v2_applied(repo, files, stream=Interrupted)
    assert (finishes, releases, undos) == ([1], [1], [1])
    assert not [name for name, _data in files if repo.svfs.exists(name)]


@needs_v2_writer
def test_stream_v2_prepare_wrapper_in_place_once_the_session_s_writers_start(
    cheap_closes_repo, monkeypatch
):
    # opens wait: the session's writer threads write whole files from the
    # third on (the policy's verdict, forced here), and make their
    # directories too, which the prepare wrapper tells core are known
    from mercurial import vfs as vfsmod

    core_s_prepare = vfsmod.abstractvfs.prepare_streamed_file
    repo = cheap_closes_repo
    count = 12
    starts = []

    def time_next(policy):
        # the third file's open is timed, and found to wait
        starts.append(len(starts))
        return 'wall' if len(starts) == 3 else None

    monkeypatch.setattr(writepolicymod.WritePolicy, 'time_next', time_next)
    monkeypatch.setattr(
        writepolicymod.WritePolicy, 'learn',
        lambda policy, wall, cpu=None, blocked=None: setattr(
            policy, 'deferring', True) or True,
    )
    sessions = sessions_made(monkeypatch)
    prepared = prepares_of(monkeypatch)
    files = [(b'data/d%d/f.i' % n, b'%d' % n) for n in range(count)]
    v2_applied(repo, files)
    session, = sessions
    # from the fourth file on, each prepared through the session's wrapper
    assert prepared == [name for name, _data in files[3:]]
    # whose directories the writers made, not core on the reading thread
    assert session.directories.created == count - 3
    for name, data in files:
        assert repo.svfs.read(name) == data
    assert not session.closer.owned
    assert vfsmod.abstractvfs.prepare_streamed_file is core_s_prepare


@needs_v2_writer
@pytest.mark.parametrize('closes', ['background', 'inline'])
def test_stream_v2_small_files_go_to_the_lane_with_their_bytes(
    repo_with, monkeypatch, closes
):
    # closing on the lane, a file of one small chunk is handed over with
    # its bytes, for the lane's thread to write; closing inline, each is
    # written here
    if closes == 'background' and not closermod.native_available():
        pytest.skip('the C lane is not built here')
    repo = repo_with([
        (b'backgroundclose', b'yes' if closes == 'background' else b'no'),
        (b'backgroundcloseminfilecount', b'0'),
        (b'backgroundclosemaxthreadcount', b'4'),
        (b'backgroundclosenative', b'yes'),
        (b'backgroundclosethreshold', b'100000'),
        (b'backgroundclosewrites', b'no'),
    ])
    handed = calls_of(monkeypatch, closermod.Closer, 'close')
    files = v2_files(8)
    v2_applied(repo, files)
    names = {repo.svfs.join(name) for name, _data in files}
    held = [args[2] for args in handed if args[1] in names]
    assert len(held) == len(files)
    if closes == 'background':
        assert held == [data for _name, data in files]
    else:
        assert held == [None] * len(files)
    for name, data in files:
        assert repo.svfs.read(name) == data


@needs_v2_writer
def test_stream_v2_leaves_no_file_to_core_on_core_s_writer_threads(
    cheap_closes_repo, monkeypatch
):
    # worker.parallel-stream-bundle-processing: core's writer threads
    # write the files; prepare_streamed_file, on the reading thread, must
    # stop reading at their first failure, so skips nothing either
    from mercurial import vfs as vfsmod

    core_s_prepare = vfsmod.abstractvfs.prepare_streamed_file
    repo = cheap_closes_repo
    repo.ui.setconfig(b'worker', b'parallel-stream-bundle-processing',
                      b'yes', b'test')
    repo.ui.setconfig(b'worker',
                      b'parallel-stream-bundle-processing.num-writer', b'2',
                      b'test')
    monkeypatch.setattr(policymod.SkipSchedule, 'SKIP', 8)
    count = policymod.SkipSchedule.SAMPLE * 3
    sessions = sessions_made(monkeypatch)
    prepared = prepares_of(monkeypatch)
    failures = calls_of(monkeypatch, closermod.Closer, 'raise_failure')
    threads = calls_of(
        monkeypatch, streamapply.streamv2.StreamV2Writer, 'write_files')
    v2_applied(repo, v2_files(count))
    session, = sessions
    assert len(threads) == 2  # written on core's two threads
    # no skip began, not even after the reading thread was done
    assert session.skipping == session.skipped == 0
    assert len(prepared) == count
    # once core's threads write, each file prepared asks for their failures
    # (the first few may be prepared before a thread began)
    assert count - 8 <= len(failures) <= count
    assert repo.svfs.read(b'data/f%d.i' % (count - 1)) == b'%d' % (count - 1)
    assert vfsmod.abstractvfs.prepare_streamed_file is core_s_prepare


@needs_v2_writer
@pytest.mark.parametrize('file', ['sampled', 'left to core'])
def test_a_stream_v2_read_that_fails_is_not_a_write_of_the_file(
    cheap_closes_repo, monkeypatch, file
):
    import errno

    # core reads each file as it writes it: the stream's failure is its
    # own, whichever way the file is written, even with an errno a write
    # may fail with
    repo = cheap_closes_repo
    monkeypatch.setattr(policymod.SkipSchedule, 'SKIP', 8)
    sample = policymod.SkipSchedule.SAMPLE
    failing = 3 if file == 'sampled' else sample + 3
    files = v2_files(sample * 2)
    payload = streamcraft.v2_payload([(b's', n, d) for n, d in files])
    # where the failing file's data begins
    end = payload.index(files[failing][0]) + len(files[failing][0])
    sessions = sessions_made(monkeypatch)

    class Failing(io.BytesIO):
        def read(self, size=-1):
            if self.tell() + (size if size >= 0 else 1) > end:
                raise OSError(errno.EIO, os.strerror(errno.EIO))
            return super().read(size)

    opened = set(os.listdir('/proc/self/fd'))
    core = skip_writes(monkeypatch)
    with pytest.raises(OSError) as caught:
        v2_applied(repo, files, stream=Failing)
    assert caught.value.errno == errno.EIO
    session, = sessions
    # the skip had written its first three files when it read the failing
    # one
    assert len(core) == (0 if file == 'sampled' else 3)
    assert not session.closer.owned
    assert set(os.listdir('/proc/self/fd')) <= opened


@pytest.mark.parametrize('setting', [
    (b'backgroundclosereport', b'yes'),  # each file is timed for it
    (b'backgroundclose', b'no'),  # an inline closer measures nothing
    (b'backgroundclosewrites', None),  # opens not measured yet
])
def test_no_file_is_left_to_core_where_the_session_needs_them(
    cheap_closes_repo, monkeypatch, setting
):
    repo = cheap_closes_repo
    repo.ui.setconfig(b'worker', setting[0], setting[1], b'test')
    repo.ui.pushbuffer()
    session = streamapply.ApplySession(repo, b'v3')
    count = policymod.SkipSchedule.SAMPLE * 2
    # opens measured after more than this stream's files, whatever one
    # slow open on a loaded machine makes the policy time
    monkeypatch.setattr(writepolicymod.WritePolicy, 'FIRST', count + 1)
    kinds = write_stream_files(repo, session, count)
    repo.ui.popbuffer()
    assert kinds == [own_file(session)] * count


def raised_in(module, exc, ofp=None, function='fail', path=None):
    """``exc`` as raised by ``function`` of ``module`` (its traceback's
    innermost frame there), whose local ``ofp`` is ``ofp`` (as core's
    stream consumers call the file they write) and ``path`` is ``path``
    (as core's _write_files does, from Mercurial 7.0 on)"""
    namespace = {'__name__': module}
    exec(compile('def %s(exc, ofp, path):\n    raise exc\n' % function,
                 module, 'exec'), namespace)
    try:
        namespace[function](exc, ofp, path)
    except BaseException as raised:
        return raised


def prepares_of(monkeypatch):
    """the paths the session's prepare_streamed_file wrapper prepares from
    now on (stream v2 from 7.0 on; none while it is not in place)"""
    calls = []
    owner, name, wrapper = streamapply.streamv2.PREPARE_SEAM

    def counted(session, orig, vfs, path, known_directories, **kwargs):
        if session.running:
            calls.append(path)
        return wrapper(session, orig, vfs, path, known_directories, **kwargs)

    monkeypatch.setattr(
        streamapply.streamv2, 'PREPARE_SEAM', (owner, name, counted))
    return calls


def calls_of(monkeypatch, cls, name):
    """the list of the arguments (after self) each call of ``cls.name``
    gets from now on"""
    calls = []
    method = getattr(cls, name)

    def called(self, *args):
        calls.append(args)
        return method(self, *args)

    monkeypatch.setattr(cls, name, called)
    return calls


@pytest.mark.parametrize('fmt', [b'v3', b'v2'], ids=['v3', 'v2'])
@pytest.mark.parametrize('position', ['inside', 'last'])
@pytest.mark.parametrize('action', ['opening', 'writing'])
def test_a_file_left_to_core_that_fails_is_named(
    cheap_closes_repo, monkeypatch, action, position, fmt
):
    # core's own stream consumer (v3; v2, from Mercurial 7.0 on through
    # its _write_files): no wrapper sees a file left to core open, nor its
    # writes; a real failure in one is named all the same, also in the
    # last file of a skip (stream v3 ends the skip as core begins to copy
    # it; stream v2 on 7.x once core's writer returns)
    import errno
    import resource
    from mercurial import streamclone

    repo = cheap_closes_repo
    sample, skip = policymod.SkipSchedule.SAMPLE, 8
    monkeypatch.setattr(policymod.SkipSchedule, 'SKIP', skip)
    count = sample * 2 + skip
    failing = sample + (skip // 2 if position == 'inside' else skip - 1)
    files = [(b'data/f%d.i' % n, b'%d' % n) for n in range(count)]
    name = files[failing][0]
    limits = resource.getrlimit(resource.RLIMIT_FSIZE)
    if action == 'opening':
        os.makedirs(repo.svfs.join(name))  # a directory in its place
        reason = b'Is a directory'
    else:
        # larger than a process may write into one file: the write fails
        # in the kernel (Python ignores SIGXFSZ)
        files[failing] = (name, b'x' * (256 << 10))
        reason = os.strerror(errno.EFBIG).encode()
    leftto = calls_of(monkeypatch, streamapply.ApplySession, 'core_opened')
    writer = fmt == b'v2' and compat.HAS_WRITE_FILES
    if writer:
        leftto = skip_writes(monkeypatch)
    opened = set(os.listdir('/proc/self/fd'))
    try:
        if action == 'writing':
            resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, limits[1]))
        with pytest.raises(error.Abort) as caught:
            if fmt == b'v3':
                payload = streamcraft.v3_payload(
                    [(b's', n, data) for n, data in files])
                consume = streamapply.consumer(b'v3')
                consume(streamclone.consumev3, repo, io.BytesIO(payload))
            else:
                v2_applied(repo, files)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limits)
    assert caught.value.message == b'error %s %s: %s' % (
        action.encode(), name, reason)
    # every file after the sample was core's, up to the failing one (which
    # core did not open, or opened and began to copy; core's writer was
    # given it either way)
    copied = failing - sample
    assert len(leftto) == copied + (action == 'writing' or writer)
    assert set(os.listdir('/proc/self/fd')) <= opened


def test_only_an_error_of_a_file_left_to_core_is_named(cheap_closes_repo):
    import errno

    repo = cheap_closes_repo
    session = streamapply.ApplySession(repo, b'v3')
    joined = repo.store.rawvfs.join(b'data/_a.i')
    denied = OSError(errno.EACCES, 'Permission denied', joined.decode())

    class Written:
        name = joined  # as core's vfs opened it

    def full(module='mercurial.streamclone', errno=errno.ENOSPC,
             ofp=Written()):
        return raised_in(module, OSError(errno, os.strerror(errno)), ofp)

    # no file left to core: the session's own files name themselves
    assert session.core_file_abort(denied) is None
    assert session.core_file_abort(full()) is None
    # a skip of two files began: the next file opens through core
    session.skipping = 2
    session.skip_begins()
    assert session.core_file_abort(denied).message == (
        b'error opening data/_a.i: Permission denied'
    )
    # no file left to core was copied yet: a write is not one of theirs
    assert session.core_file_abort(full()) is None
    session.core_opened(iter(()), 0)
    assert session.core_file_abort(full()).message == (
        b'error writing data/_a.i: No space left on device'
    )
    # not from a file left to core: the stream read where it is read, the
    # terminal or a pipe, an error no write raises, a write where no file
    # is open, a file elsewhere, a descriptor for a name, not an OSError
    # (a NUL byte in a name: the caller's malformed abort)
    class Elsewhere:
        name = b'/elsewhere'

    for other in (
        full(module='mercurial.util'),
        # core's stream v2 parser reads the stream, and calls the file it
        # prepares path too
        raised_in('mercurial.streamclone', OSError(errno.EIO, 'I/O'),
                  function='_v2_parse_files', path=joined),
        raised_in('mercurial.streamclone', error.StdioError(
            OSError(errno.ENOSPC, 'No space left on device')), Written()),
        full(errno=errno.EPIPE),
        full(ofp=None),
        full(ofp=Elsewhere()),
        OSError(errno.EACCES, 'Permission denied', '/elsewhere'),
        OSError(errno.EBADF, 'Bad file descriptor', 3),
        ValueError('embedded null byte'),
    ):
        assert session.core_file_abort(other) is None, other
    # once the stream is written, an error is the transaction's, though
    # the stream ended inside a skip
    assert session.leaving
    session.streamed()
    assert session.core_file_abort(denied) is None
    assert session.core_file_abort(full()) is None
    session.finish(failing=False)


def test_a_file_left_to_core_closed_through_the_session_counts_and_fails(
    cheap_closes_repo,
):
    # stream v1 opens with backgroundclose=True: core's close comes back
    # to the session, which closes it there
    import errno

    class Failing(File):
        def tell(self):
            return 3

        def close(self):
            raise OSError(errno.EIO, 'Input/output error')

    session = streamapply.ApplySession(cheap_closes_repo, b'v1',
                                       expectedbytes=3)
    rawvfs = cheap_closes_repo.store.rawvfs
    session.core_opened(iter([b'abc']), 3)
    assert session.closes_core_file()
    with pytest.raises(closermod.FileError) as caught:
        session.close_core_file(Failing(), rawvfs.join(b'data/_a.i'))
    assert session.abort(caught.value).message == (
        b'error closing data/_a.i: Input/output error'
    )
    assert not session.closes_core_file()  # the next close is the closer's
    session.finish(failing=True)


def changegroup_of_files(tmp_path, count):
    """a changegroup of one changeset adding ``count`` files ``f00``...,
    each holding its own name: ``(unpacker, names)``"""
    from mercurial import changegroup, context, discovery, node
    from mercurial import ui as uimod

    names = [b'f%02d' % number for number in range(count)]
    source = hg.repository(uimod.ui.load(), os.fsencode(str(
        tmp_path / 'source')), create=True)

    def filectx(repo, memctx, path):
        return context.memfilectx(repo, memctx, path, path)

    with source.lock():
        source.commitctx(context.memctx(
            source, (node.nullid, node.nullid), b'files', names, filectx,
            user=b'test',
        ))
    outgoing = discovery.outgoing(source, commonheads=[node.nullid])
    return changegroup.makechangegroup(source, outgoing, b'02',
                                       b'bundle'), names


def test_a_changegroup_step_leaves_whole_revlogs_to_core_while_cheap(
    cheap_closes_repo, tmp_path, monkeypatch
):
    # a new file revlog is opened three times: while its session leaves
    # revlogs to core, the session's vfs.__call__ wrapper is not in place
    # at all, and the skip is counted in revlog groups
    from mercurial import changegroup, extensions, vfs as vfsmod

    repo = cheap_closes_repo
    unpacker, names = changegroup_of_files(tmp_path, 60)
    monkeypatch.setattr(policymod.SkipSchedule, 'SAMPLE', 4)
    monkeypatch.setattr(policymod.SkipSchedule, 'SKIP', 8)
    # core closes the revlogs it is left, untimed: skips stay this short
    monkeypatch.setattr(policymod.SkipSchedule, 'UNWATCHED', 12)
    cores_call = vfsmod.vfs.__call__
    groups = []  # each group's name, and whether core alone opens it

    def header(self):
        chunk = real_header(self)
        if chunk:
            groups.append(chunk[b'filename'])
        return chunk

    real_header = changegroup.cg1unpacker.filelogheader
    # beneath the session's own wrapper, which counts the group once read
    monkeypatch.setattr(changegroup.cg1unpacker, 'filelogheader', header)
    repoclass = type(repo.unfiltered())
    real_file = repoclass.file

    def file(self, path, *args, **kwargs):
        # the step opens the revlog of the group just read: through
        # whose open?  (repo.file() is called for other reasons too)
        if groups and groups[-1] == path:
            groups[-1] = (path, vfsmod.vfs.__call__ is cores_call)
        return real_file(self, path, *args, **kwargs)

    monkeypatch.setattr(repoclass, 'file', file)
    handed = []
    real_init = handedfiles.HandedOverFile.__init__

    def handing(self, fp, closer, name, *args, **kwargs):
        handed.append(name)
        real_init(self, fp, closer, name, *args, **kwargs)

    monkeypatch.setattr(handedfiles.HandedOverFile, '__init__', handing)
    skipped = []
    real_summary = revlogwrite.RevlogSession.summarize

    def summary(self, *args):
        skipped.append(self.skipped)
        real_summary(self, *args)

    monkeypatch.setattr(revlogwrite.RevlogSession, 'summarize', summary)
    extensions.wrapfunction(changegroup, '_addchangegroupfiles',
                            revlogwrite.step)
    try:
        with repo.lock(), repo.transaction(b'test-apply') as tr:
            unpacker.apply(repo, tr, b'unbundle', b'bundle:files')
    finally:
        extensions.unwrapfunction(changegroup, '_addchangegroupfiles',
                                  revlogwrite.step)
    assert [name for name, _core in groups] == names
    # core alone opened exactly the revlogs whose index it closed
    assert all(core == (b'data/%s.i' % name not in handed)
               for name, core in groups)
    runs = runs_of([handedfiles.HandedOverFile if not core else None
                    for _name, core in groups])
    assert runs == [(True, 4), (False, 12)] * 3 + [(True, 4), (False, 8)]
    # 12 * 3 + 8 revlogs: the empty header after the last group counts
    # for nothing
    assert skipped == [44]
    # every wrapper of the two sessions is gone
    assert vfsmod.vfs.__call__ is cores_call
    assert changegroup.cg1unpacker.filelogheader is header
    tip = repo[b'tip']
    assert [tip[name].data() for name in names] == names


def test_a_session_interrupted_taking_its_wrappers_away_takes_them_away(
    lanerepo, monkeypatch
):
    # an interrupt in the first unwrap() at the end of a run: run() takes
    # the session's wrappers away again once it finished
    from mercurial import extensions, vfs as vfsmod

    cores_call = vfsmod.vfs.__call__
    session = revlogwrite.RevlogSession(lanerepo)
    real_chain = extensions.getwrapperchain
    interrupts = [KeyboardInterrupt()]

    def chain(container, name):
        if name == '__call__' and interrupts:
            raise interrupts.pop()
        return real_chain(container, name)

    monkeypatch.setattr(extensions, 'getwrapperchain', chain)
    with pytest.raises(KeyboardInterrupt):
        session.run(session.rawvfs, revlogwrite._SESSION_SEAMS,
                    lambda: None, (), {})
    assert not interrupts  # the interrupt came where it should
    assert vfsmod.vfs.__call__ is cores_call


def test_a_changegroup_skip_counts_only_its_own_unpacker_s_groups(
    lanerepo
):
    from mercurial import changegroup

    source = changegroup.cg1unpacker(io.BytesIO(), b'UN')
    session = revlogwrite.RevlogSession(lanerepo, source=source)
    assert session.may_skip()
    session.leaving, session.skipping = True, 2

    def group(unpacker, header=None):
        header = {b'filename': b'f'} if header is None else header
        return revlogwrite.revloggroup(session, lambda self: header,
                                       unpacker)

    # another unpacker read on the same thread (a bundle repository's)
    group(changegroup.cg1unpacker(io.BytesIO(), b'UN'))
    group(source, {})  # the empty header after the last group
    assert (session.skipping, session.skipped) == (2, 0)
    group(source)
    group(source)
    assert (session.leaving, session.skipped) == (True, 2)
    try:
        group(source)  # the skip ends before this group
        assert not session.leaving
    finally:
        session.finish(failing=True)
        session.unwrap()


def test_a_changegroup_whose_unpacker_reads_groups_its_own_way_never_skips(
    lanerepo
):
    # revloggroup() would never see its groups: a skip would never end
    from mercurial import changegroup

    class OwnHeaders(changegroup.cg1unpacker):
        def filelogheader(self):
            return {}

    session = revlogwrite.RevlogSession(
        lanerepo, source=OwnHeaders(io.BytesIO(), b'UN'))
    assert not session.may_skip()
    assert not revlogwrite.RevlogSession(lanerepo).may_skip()
    session.finish(failing=True)


@needs_v2_writer
def test_an_interrupt_as_a_skip_opens_a_file_leaks_nothing(
    cheap_closes_repo, monkeypatch
):
    # a signal raised as the open returns (CPython runs handlers right
    # after a call) would lose a descriptor opened and not yet owned, as
    # it does in core's own _write_files; a profile function raising on
    # the call's return does the same.  The skip's open puts it in the
    # owned set in the same step, for the take-back to close
    from hgext3rd.backgroundclose.engine import native

    repo = cheap_closes_repo
    monkeypatch.setattr(policymod.SkipSchedule, 'SKIP', 8)
    sample = policymod.SkipSchedule.SAMPLE
    count = sample + 8
    target = repo.store.rawvfs.join(b'data/f%d.i' % (sample + 3))
    core = skip_writes(monkeypatch)

    def interrupt(frame, event, arg):
        if (event == 'c_return'
                and arg in (os.open, native.lane_module.open_owned)
                and frame.f_locals.get('path') == target):
            sys.setprofile(None)
            raise KeyboardInterrupt()

    opened = set(os.listdir('/proc/self/fd'))
    sys.setprofile(interrupt)
    try:
        with pytest.raises(KeyboardInterrupt):
            v2_applied(repo, v2_files(count))
    finally:
        sys.setprofile(None)
    assert [path for path, _core in core][-1] == target  # a skip's file
    assert set(os.listdir('/proc/self/fd')) <= opened
    assert not repo.svfs.exists(b'data/f%d.i' % (sample + 3))


@needs_v2_writer
@pytest.mark.parametrize('journaled', [False, True],
                         ids=['unjournaled', 'journaled'])
def test_a_stream_v2_whose_file_count_is_not_told_still_skips(
    cheap_closes_repo, monkeypatch, journaled
):
    # consumev2 called with its counts by name (another extension's call)
    # tells the session nothing: a skip ends where the stream does, and
    # needs no count
    from mercurial import streamclone

    repo = cheap_closes_repo
    if journaled:
        repo.ui.setconfig(b'worker', b'backgroundclosejournal', b'yes',
                          b'test')
    monkeypatch.setattr(policymod.SkipSchedule, 'SKIP', 8)
    count = policymod.SkipSchedule.SAMPLE + 8
    files = v2_files(count)
    payload = streamcraft.v2_payload([(b's', n, d) for n, d in files])
    sessions = sessions_made(monkeypatch)
    streamapply.consumer(b'v2')(
        streamclone.consumev2, repo, io.BytesIO(payload), filecount=count,
        filesize=sum(len(data) for _name, data in files))
    session, = sessions
    assert session.skipped == 8
    assert repo.svfs.read(files[-1][0]) == files[-1][1]
