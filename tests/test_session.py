# test_session.py - what the three seams' sessions share
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""A stream apply, a changegroup step and a working-copy update each run a
session (session.py): one way to end it, one wording for a failed close,
and no state outside the repository it writes into."""

import os
import sys
import threading

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))

from mercurial import error, hg  # noqa: E402

from hgext3rd.backgroundclose import (  # noqa: E402
    closer as closermod,
    handover,
    report as reportmod,
    revlogwrite,
    seams,
    session as sessionmod,
    streamapply,
    workingcopy,
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
    proxy = handover.HandedOverFile(fp, session.closer, b'data/a.i',
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
    return len(os.listdir('/proc/self/task'))


def test_finishing_joins_every_thread_of_the_closer(session):
    before = system_threads()
    closer = session.closer
    for number in range(64):
        closer.close(File(), b'data/%d.i' % number)
    assert closer.threadcount > 0
    assert system_threads() > before
    session.finish(failing=False)
    assert system_threads() == before


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
