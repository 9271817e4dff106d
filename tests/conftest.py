# conftest.py - fixtures shared by the unit tests
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.

import os

import pytest

# a descriptor closed by a caller that does not own it raises here
# (engine/descriptors.py), where in use it is left open and reported
os.environ['BACKGROUNDCLOSE_STRICT_OWNERSHIP'] = '1'


@pytest.fixture
def repo_with(tmp_path):
    """``repo_with(settings)``: a new repository whose ui has the
    ``[worker]`` ``settings`` (name, value pairs); the extension is not
    loaded here, so its settings have no registered defaults"""
    from mercurial import hg, ui as uimod

    def make(settings):
        ui = uimod.ui.load()
        for name, value in settings:
            ui.setconfig(b'worker', name, value, b'test')
        return hg.repository(
            ui, os.fsencode(str(tmp_path / 'repo')), create=True
        )

    return make


@pytest.fixture
def lanerepo(repo_with):
    """a new repository whose ui has the settings that make every seam's
    closer close in the background on the C lane"""
    return repo_with([
        (b'backgroundclosemaxthreadcount', b'4'),
        (b'backgroundclosethreshold', b'30'),
        (b'backgroundclosenative', b'yes'),
        (b'backgroundclose', b'yes'),
        (b'backgroundcloseminfilecount', b'0'),
    ])


@pytest.fixture(autouse=True)
def no_descriptor_closed_by_a_non_owner():
    """every test: no caller asked to close a descriptor it did not own
    (engine/descriptors.py records each, raised or swallowed)"""
    from hgext3rd.backgroundclose.engine import descriptors

    descriptors.take_unowned()
    yield
    assert descriptors.take_unowned() == [], (
        'a descriptor was to be closed by a caller that did not own it'
    )
