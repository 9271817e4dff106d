# test_streamapply.py - taking a failed stream apply back
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""A failed stream apply removes what it wrote.  A second Ctrl-C while it
does (a user who presses it twice) must not leave half of the apply behind,
nor keep the transaction's own abort from removing its journal."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))

from hgext3rd.backgroundclose import streamapply  # noqa: E402


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
    assert session.undo() is None
    assert not any(os.path.exists(p) for p in written)


def test_one_interrupt_during_undo_is_absorbed_and_the_walk_finished(
    applied, monkeypatch
):
    session, written = applied
    interrupting(monkeypatch, 1)
    absorbed = escaping(session.undo)
    assert isinstance(absorbed, KeyboardInterrupt)
    assert not any(os.path.exists(p) for p in written)


def test_take_back_raises_the_interrupt_it_absorbed_once_done(
    applied, monkeypatch
):
    session, written = applied
    interrupting(monkeypatch, 1)
    with pytest.raises(KeyboardInterrupt):
        session.take_back()
    assert not any(os.path.exists(p) for p in written)


def test_a_third_ctrl_c_leaves_a_take_back_that_hangs(applied, monkeypatch):
    # on a dead mount every unlink hangs: pressing Ctrl-C again must end it
    session, written = applied
    interrupting(monkeypatch, 2)
    with pytest.raises(KeyboardInterrupt):
        session.undo()


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
