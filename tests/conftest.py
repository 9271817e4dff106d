# conftest.py - fixtures shared by the unit tests
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.

import os

import pytest


@pytest.fixture
def lanerepo(tmp_path):
    """a new repository whose ui has the settings that make every seam's
    closer close in the background on the C lane (the extension is not
    loaded here, so its settings have no registered defaults)"""
    from mercurial import hg, ui as uimod

    ui = uimod.ui.load()
    for name, value in (
        (b'backgroundclosemaxthreadcount', b'4'),
        (b'backgroundclosethreshold', b'30'),
        (b'backgroundclosenative', b'yes'),
        (b'backgroundclose', b'yes'),
        (b'backgroundcloseminfilecount', b'0'),
    ):
        ui.setconfig(b'worker', name, value, b'test')
    return hg.repository(ui, os.fsencode(str(tmp_path / 'repo')), create=True)
