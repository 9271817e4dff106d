# test_seams.py - wrappers bound to a session, and the store's session mark
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""A session's wrappers find it as their first argument, and the store's
raw vfs says which session writes into it: no module global holds a
session, so nothing of one apply can reach the next."""

import gc
import os
import sys
import types

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))

from mercurial import vfs as vfsmod  # noqa: E402

from hgext3rd.backgroundclose.changegroup import (  # noqa: E402
    revlogs as revlogwrite,
)
from hgext3rd.backgroundclose.shared import seams  # noqa: E402
from hgext3rd.backgroundclose.stream import (  # noqa: E402
    apply as streamapply,
    wrappers as streamwrappers,
)


class Target:
    """something to wrap, as a Mercurial class"""

    def call(self, value):
        return ('core', value)


def test_bound_wrappers_get_their_session_first():
    seen = []

    def wrapper(session, orig, self, value):
        seen.append(session)
        return ('wrapped', orig(self, value))

    first, second = object(), object()
    with seams.installed(seams.bound(first, [(Target, 'call', wrapper)])):
        with seams.installed(
            seams.bound(second, [None, (Target, 'call', wrapper)])
        ):
            assert Target().call(1) == ('wrapped', ('wrapped', ('core', 1)))
        assert Target().call(2) == ('wrapped', ('core', 2))
    assert Target().call(3) == ('core', 3)
    assert seen == [second, first, first]


def test_the_store_says_which_session_writes_into_it(tmp_path):
    storevfs = vfsmod.vfs(os.fsencode(str(tmp_path)))
    session = types.SimpleNamespace(running=True)
    assert seams.writing(storevfs) is None
    with pytest.raises(KeyboardInterrupt):
        with seams.attached(storevfs, session):
            assert seams.writing(storevfs) is session
            raise KeyboardInterrupt
    assert seams.writing(storevfs) is None
    assert not any('backgroundclose' in name for name in vars(storevfs))
    # a mark an interrupt left behind names a session that has ended
    seams.attached(storevfs, session).__enter__()
    session.running = False
    assert seams.writing(storevfs) is None


def _compact(vfs):
    """whether the vfs holds its attributes' values itself, not through
    a dict (gc sees them as what it refers to)"""
    base = vfs.base
    return any(ref is base for ref in gc.get_referents(vfs))


def _fresh_vfs_class():
    """a class of core's vfs that no other test made objects of: Python
    stops keeping the attributes of a class's new objects compact once
    its objects, all together, had many different ones (the unit tests
    before this one make hundreds of vfs objects, of every kind)"""

    class vfs(vfsmod.vfs):
        pass

    return vfs


def _shows_compact_attributes():
    """whether this Python keeps an object's attributes compact until its
    __dict__ is touched, and gc shows which (3.11 and 3.12)"""
    probe = _fresh_vfs_class()(b'/nonexistent')
    if not _compact(probe):
        return False
    probe.__dict__
    return not _compact(probe)


@pytest.mark.skipif(
    not _shows_compact_attributes(),
    reason="this Python's objects read attributes as fast after their "
    '__dict__ is touched (before 3.11, from 3.13)',
)
def test_marking_the_store_keeps_its_compact_attributes(tmp_path):
    # a changegroup opens every file of its second step through the vfs
    # its first step marked: with its attributes turned into a dict, each
    # read of one takes twice as long
    storevfs = _fresh_vfs_class()(os.fsencode(str(tmp_path)))
    session = types.SimpleNamespace(running=True)
    for _step in range(2):
        with seams.attached(storevfs, session):
            assert seams.writing(storevfs) is session
        assert seams.writing(storevfs) is None
    assert _compact(storevfs)


def test_a_wrapper_left_in_a_chain_after_its_session_does_nothing(lanerepo):
    # another extension may hold our wrapper in its chain after the
    # session ended (it wrapped the seam meanwhile): core's open then
    session = revlogwrite.RevlogSession(lanerepo)
    session._enter(session.state.CLOSING)
    calls = []

    def orig(vfs, path, mode=b'rb', *args, **kwargs):
        calls.append((path, mode))
        return 'core'

    assert revlogwrite.vfsopen(
        session, orig, session.rawvfs, b'data/a.i', b'ab'
    ) == 'core'
    assert revlogwrite.pathop(
        session, lambda vfs, path: 'core', session.rawvfs, b'data/a.i'
    ) == 'core'
    # a skip of the session that never ended counts nothing now
    session.source, session.leaving, session.skipping = 'source', True, 1
    assert revlogwrite.revloggroup(
        session, lambda source: {b'filename': b'a'}, 'source'
    ) == {b'filename': b'a'}
    assert (session.leaving, session.skipping) == (True, 1)
    apply = streamapply.ApplySession(lanerepo, b'v1')
    apply.finish(failing=False)
    assert streamwrappers.vfsopen(
        apply, orig, session.rawvfs, b'data/b.i', b'wb'
    ) == 'core'
    assert streamapply.streamv2.write_files(
        apply, lambda info: 'core', []) == 'core'
    assert calls == [(b'data/a.i', b'ab'), (b'data/b.i', b'wb')]
    session.closer.finish(failing=True)


class Other:
    def call(self, value):
        return ('core', value)


def test_an_interrupt_right_after_a_wrapping_leaves_no_wrapper(monkeypatch):
    # Ctrl-C as wrapfunction returns (CPython runs signal handlers right
    # after a call): the wrapper is in place, and must still come off
    real = seams.extensions.wrapfunction
    calls = []

    def wrapfunction(container, name, wrapper):
        real(container, name, wrapper)
        calls.append(name)
        if len(calls) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(seams.extensions, 'wrapfunction', wrapfunction)

    def wrapper(session, orig, self, value):
        return ('wrapped', orig(self, value))

    seam = seams.installed(
        seams.bound(None, [(Target, 'call', wrapper), (Other, 'call', wrapper)])
    )
    try:
        seam.install()
    except KeyboardInterrupt:
        pass
    else:
        pytest.fail('the interrupt was lost')
    assert Target().call(1) == ('core', 1)
    assert Other().call(1) == ('core', 1)


def test_a_seam_that_cannot_be_wrapped_leaves_none_wrapped():
    # all or nothing (the extension's setup relies on it): a function
    # this Mercurial lacks fails the install, and the seams before it
    # come off again
    def wrapper(session, orig, self, value):
        return ('wrapped', orig(self, value))

    seam = seams.installed(
        seams.bound(
            None, [(Target, 'call', wrapper), (Other, 'missing', wrapper)]
        )
    )
    with pytest.raises(AttributeError):
        seam.install()
    assert Target().call(1) == ('core', 1)
