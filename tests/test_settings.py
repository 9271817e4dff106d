# test_settings.py - reading the [worker] settings: worker.backgroundclose
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))

from mercurial import error, ui as uimod  # noqa: E402

from hgext3rd.backgroundclose import engine, settings  # noqa: E402


def policy_of(*values):
    """the policy read after ``values`` were set one over the other, as
    hgrc files read one after the other set them"""
    ui = uimod.ui()
    for source, value in enumerate(values):
        ui.setconfig(b'worker', b'backgroundclose', value, b'file%d' % source)
    return settings.policy(ui)


@pytest.mark.parametrize('value, expected', [
    (b'auto', engine.ADAPTIVE),
    (b' Auto ', engine.ADAPTIVE),
    (b'true', engine.BACKGROUND),
    (b'yes', engine.BACKGROUND),
    (b'false', engine.INLINE),
    (b'0', engine.INLINE),
])
def test_a_value_names_a_policy(value, expected):
    assert policy_of(value) == expected


def test_unset_is_adaptive():
    assert policy_of() == engine.ADAPTIVE


def test_auto_overrides_a_value_set_before():
    # a system-wide true, then a repository's auto: no %unset needed
    assert policy_of(b'true', b'auto') == engine.ADAPTIVE
    assert policy_of(b'false', b'auto') == engine.ADAPTIVE


def test_anything_else_aborts_and_says_what_it_takes():
    with pytest.raises(error.Abort) as caught:
        policy_of(b'maybe')
    assert caught.value.message == (
        b'worker.backgroundclose must be a boolean or "auto", not maybe')
    assert caught.value.hint == b'see "hg help -e backgroundclose"'
