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

from mercurial import configitems, error, ui as uimod  # noqa: E402

import hgext3rd.backgroundclose as extension  # noqa: E402
from hgext3rd.backgroundclose import engine  # noqa: E402
from hgext3rd.backgroundclose.shared import settings  # noqa: E402

# the extension's settings and their defaults known, as when it is loaded
configitems.loadconfigtable(
    uimod.ui(), b'backgroundclose', extension.configtable)


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


def test_anything_else_is_core_s_config_error_with_the_hint():
    with pytest.raises(error.ConfigError) as caught:
        policy_of(b'maybe')
    assert caught.value.message == (
        b"worker.backgroundclose is not a boolean ('maybe')")
    assert caught.value.hint == b'see "hg help -e backgroundclose"'
    # an empty value is quoted too, not left dangling
    with pytest.raises(error.ConfigError) as caught:
        policy_of(b'')
    assert caught.value.message.endswith(b"('')")


def configured(**values):
    """a ui with ``worker.NAME=VALUE`` for each keyword, from a file"""
    ui = uimod.ui()
    for name, value in values.items():
        ui.setconfig(b'worker', name.encode('ascii'), value, b'hgrc:1')
    return ui


@pytest.mark.parametrize('value, expected', [
    (b'adaptive', engine.ADAPTIVE),
    (b'auto', engine.ADAPTIVE),
    (b'Background', engine.BACKGROUND),
    (b'inline', engine.INLINE),
])
def test_the_extension_s_own_policy_setting_names_a_policy(value, expected):
    ui = configured(backgroundclosepolicy=value)
    assert settings.chosen_policy(ui) == (expected, b'backgroundclosepolicy')


def test_the_policy_setting_wins_over_core_s_boolean():
    # a system-wide true undone where Mercurial without the extension
    # ignores the undoing
    ui = configured(backgroundclose=b'true', backgroundclosepolicy=b'adaptive')
    assert settings.policy(ui) == engine.ADAPTIVE
    ui = configured(backgroundclose=b'false',
                    backgroundclosepolicy=b'background')
    assert settings.policy(ui) == engine.BACKGROUND


def test_which_setting_chose_the_policy():
    assert settings.chosen_policy(configured()) == (engine.ADAPTIVE, None)
    assert settings.chosen_policy(configured(backgroundclose=b'no')) == (
        engine.INLINE, b'backgroundclose')


def test_a_bad_policy_is_a_config_error():
    with pytest.raises(error.ConfigError) as caught:
        settings.policy(configured(backgroundclosepolicy=b'adaptiv'))
    assert caught.value.message == (
        b"worker.backgroundclosepolicy is not adaptive, background or "
        b"inline ('adaptiv')")
    assert caught.value.hint == b'see "hg help -e backgroundclose"'


@pytest.mark.parametrize('name', sorted(settings.COUNTS))
def test_every_count_is_refused_past_its_maximum(name):
    low, high = settings.COUNTS[name]
    ui = configured(**{name.decode(): b'%d' % high})
    if name == b'backgroundclosethreadcount':
        ui.setconfig(b'worker', b'backgroundclosemaxthreadcount',
                     b'%d' % high, b'hgrc:2')
    settings.closer_options(ui)  # the maximum itself is taken
    for bad in (high + 1, low - 1, 99999999999):
        ui = configured(**{name.decode(): b'%d' % bad})
        with pytest.raises(error.ConfigError) as caught:
            settings.closer_options(ui)
        assert caught.value.message == (
            b"worker.%s must be from %d to %d ('%d')" % (name, low, high, bad))
        assert caught.value.hint == b'see "hg help -e backgroundclose"'


def test_not_an_integer_is_core_s_error_with_the_hint():
    ui = configured(backgroundclosemaxqueue=b'lots')
    with pytest.raises(error.ConfigError) as caught:
        settings.closer_options(ui)
    assert caught.value.message == (
        b"worker.backgroundclosemaxqueue is not a valid integer ('lots')")
    assert caught.value.hint == b'see "hg help -e backgroundclose"'


def test_a_start_set_alone_above_the_default_maximum_raises_it():
    # core's own setting, valid for a Mercurial without the extension
    options = settings.closer_options(
        configured(backgroundclosethreadcount=b'100'))
    assert (options['threads'], options['maxthreads']) == (100, 100)


@pytest.mark.parametrize('name, value', [
    (b'backgroundclose', False),
    (b'backgroundclose', True),
    (b'backgroundclosereport', True),
])
def test_values_a_program_set_are_read_not_tracebacks(name, value):
    ui = uimod.ui()
    ui.setconfig(b'worker', name, value, b'program')
    settings.validate(ui)
    settings.describe_policy(ui)


def test_a_count_a_program_set_is_quoted_when_refused():
    ui = uimod.ui()
    ui.setconfig(b'worker', b'backgroundclosemaxqueue', 70000, b'program')
    with pytest.raises(error.ConfigError) as caught:
        settings.closer_options(ui)
    assert caught.value.message.endswith(b"('70000')")


def test_a_start_above_the_maximum_set_is_refused():
    ui = configured(backgroundclosethreadcount=b'16',
                    backgroundclosemaxthreadcount=b'4')
    with pytest.raises(error.ConfigError) as caught:
        settings.closer_options(ui)
    assert caught.value.message == (
        b'worker.backgroundclosethreadcount (16) is more than '
        b'worker.backgroundclosemaxthreadcount (4)')


def test_the_default_start_follows_a_lowered_maximum():
    options = settings.closer_options(
        configured(backgroundclosemaxthreadcount=b'2'))
    assert (options['threads'], options['maxthreads']) == (2, 2)
    options = settings.closer_options(configured())
    assert (options['threads'], options['maxthreads']) == (4, 64)


@pytest.mark.parametrize('value, seconds', [
    (None, 30e-6), (b'0.5', 0.5e-6), (b'0', 0.0), (b'1000000', 1.0),
])
def test_the_threshold_is_microseconds_fractions_too(value, seconds):
    ui = configured() if value is None else configured(
        backgroundclosethreshold=value)
    assert settings.closer_options(ui)['threshold'] == pytest.approx(seconds)


@pytest.mark.parametrize('value, words', [
    (b'fast', b'is not a valid number'),
    (b'-1', b'must be from 0 to 1000000'),
    (b'1000001', b'must be from 0 to 1000000'),
    (b'nan', b'must be from 0 to 1000000'),
    (b'inf', b'must be from 0 to 1000000'),
])
def test_a_bad_threshold_is_refused(value, words):
    with pytest.raises(error.ConfigError) as caught:
        settings.closer_options(configured(backgroundclosethreshold=value))
    assert caught.value.message == (
        b"worker.backgroundclosethreshold %s ('%s')" % (words, value))


@pytest.mark.parametrize('values, expected', [
    ({}, engine.ADAPTIVE),
    ({'backgroundclose': b'true'}, engine.ADAPTIVE),
    # inline asked for: no writer thread either, unless asked for
    ({'backgroundclose': b'false'}, engine.INLINE),
    ({'backgroundclosepolicy': b'inline'}, engine.INLINE),
    ({'backgroundclose': b'false', 'backgroundclosewrites': b'true'},
     engine.BACKGROUND),
    ({'backgroundclosewrites': b'false'}, engine.INLINE),
])
def test_false_means_no_writer_threads_unless_asked_for(values, expected):
    assert settings.writes(configured(**values)) == expected


def test_a_bad_report_value_carries_the_hint():
    with pytest.raises(error.ConfigError) as caught:
        settings.report(configured(backgroundclosereport=b'jsn'))
    assert caught.value.message == (
        b"worker.backgroundclosereport is not a boolean or json ('jsn')")
    assert caught.value.hint == b'see "hg help -e backgroundclose"'
