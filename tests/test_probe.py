# test_probe.py - hg debugprobeclose's decision and estimate, from close
# timings given (no thread, no sleep), and how it cleans up
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.

import errno
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))

from mercurial import error, ui as uimod  # noqa: E402

from hgext3rd.backgroundclose.engine import policy as policymod  # noqa: E402
from hgext3rd.backgroundclose.face import probe as probemod  # noqa: E402

WRITER = 10e-6  # the writer's own time per file: mkdir, open, write


def synthetic(closes, writer=WRITER):
    """a Probe that measured ``closes`` ((wall, cpu) of each, in order),
    each file costing the writer ``writer`` seconds"""
    probe = probemod.Probe()
    for wall, cpu in closes:
        probe.closes.append((wall, cpu))
        probe.ops['close'].add(wall)
        probe.ops['open'].add(writer)
    return probe


def waiting(wall, count=probemod.FILES):
    return [(wall, 0.0)] * count


def burning(wall, count=probemod.FILES):
    return [(wall, wall)] * count


def options(policy=policymod.ADAPTIVE, **kwargs):
    """the closer's options as settings.closer_options() gives them"""
    result = dict(
        policy=policy, threads=4, maxthreads=64, maxqueue=384,
        minfilecount=0, threshold=30e-6, cores=2,
    )
    result.update(kwargs)
    return result


# the time saved ------------------------------------------------------------


def test_one_thread_saves_no_more_than_the_writers_own_time():
    # 2 ms closes that burn CPU, on the one thread asked for: the writer
    # waits for each close all the same, and saves only its own time
    probe = synthetic(burning(2e-3))
    policy, threads = probe.decide(options(
        policymod.BACKGROUND, threads=1, maxthreads=1, cores=4))
    assert threads == 1
    assert probe.saved(policy, threads) == pytest.approx(
        WRITER * probemod.ESTIMATE_FILES)


def test_waiting_closes_are_shared_by_the_threads():
    probe = synthetic(waiting(700e-6))
    policy, _threads = probe.decide(options())
    assert probe.saved(policy, 2) == pytest.approx(
        (WRITER + 700e-6 - 350e-6) * probemod.ESTIMATE_FILES)
    # more threads than needed: the writer no longer waits
    assert probe.saved(policy, 100) == pytest.approx(
        700e-6 * probemod.ESTIMATE_FILES)


def test_burning_closes_are_shared_by_the_cores_at_most():
    probe = synthetic(burning(700e-6))
    policy, _threads = probe.decide(options(cores=2))
    inline = WRITER + 700e-6
    assert probe.saved(policy, 8) == pytest.approx(
        inline / 2 * probemod.ESTIMATE_FILES)


def test_nothing_saved_inline():
    probe = synthetic(waiting(700e-6))
    policy, threads = probe.decide(options(policymod.INLINE))
    assert probe.saved(policy, threads) == 0.0


# the decision --------------------------------------------------------------


def test_forced_inline_is_reported_as_asked_not_as_cheap():
    probe = synthetic(burning(700e-6))
    policy, threads = probe.decide(options(policymod.INLINE))
    assert threads == 0
    assert policy.requested == policymod.INLINE
    assert policy.reason is None
    # the closer times no close in CPU time then, and neither does the probe
    assert policy.cpushare is None
    assert probe.kind(policy.threshold) == probemod.BURNING


@pytest.mark.parametrize('asked', [policymod.ADAPTIVE, policymod.BACKGROUND])
def test_a_minimum_above_the_count_closes_inline_and_says_why(asked):
    probe = synthetic(waiting(700e-6))
    policy, threads = probe.decide(options(asked, minfilecount=200000))
    assert threads == 0
    assert policy.requested == asked
    assert policy.mode == policymod.INLINE
    assert policy.reason == 'fewer files than minfilecount'


def test_forced_background_does_not_learn_that_closes_burn():
    # the closer hands every file over from the first: it never times a
    # close inline, so its pool is not capped at the cores
    probe = synthetic(burning(700e-6))
    policy, threads = probe.decide(options(
        policymod.BACKGROUND, threads=8, cores=2))
    assert not policy.burning
    assert threads > policy.cores


def test_adaptive_learns_that_closes_burn_and_stops_at_the_cores():
    probe = synthetic(burning(700e-6))
    policy, threads = probe.decide(options(threads=4, cores=2))
    assert policy.mode == policymod.BACKGROUND
    assert policy.burning
    assert threads == 2


def test_cheap_closes_are_not_timed_in_cpu_time():
    probe = synthetic(burning(2e-6))
    policy, threads = probe.decide(options())
    assert threads == 0
    assert policy.cpushare is None


def test_after_the_switch_only_the_closers_probes_are_learnt():
    # slow closes that wait, then burn: handed over, the burning ones are
    # not measured by the closer until its first inline probe
    early = waiting(700e-6, 20) + burning(700e-6, 80)
    policy, threads = synthetic(early).decide(options(cores=2))
    assert policy.mode == policymod.BACKGROUND
    assert not policy.burning
    assert threads > 2
    # the probe comes PROBE_FIRST files after the switch
    late = waiting(700e-6, 20) + burning(700e-6, 280)
    policy, threads = synthetic(late).decide(options(cores=2))
    assert policy.burning
    assert threads == 2


@pytest.mark.parametrize('share, percent, kind', [
    (0.499, 49, probemod.WAITING),
    (0.5, 50, probemod.BURNING),
    (0.97, 97, probemod.BURNING),
])
def test_the_percentage_printed_and_the_label_agree(share, percent, kind):
    probe = synthetic([(1e-3, 1e-3 * share)] * 10)
    assert probe.cpupercent() == percent
    assert probe.kind(30e-6) == kind


# the command: descriptors, cleanup, errors --------------------------------


def make_ui():
    ui = uimod.ui()
    for name, value in (
        (b'backgroundclosemaxthreadcount', b'64'),
        (b'backgroundclosethreshold', b'30'),
        (b'backgroundclosenative', b'true'),
    ):
        ui.setconfig(b'worker', name, value, b'test_probe')
    ui.pushbuffer(error=True)
    return ui


def open_descriptors():
    return set(os.listdir('/proc/self/fd'))


class Interrupted(KeyboardInterrupt):
    """a Ctrl-C raised by the probe's clock, told apart from a real one"""


def interrupting_clock(at):
    """a clock that raises at its ``at``-th reading: the probe reads it
    around every step, between the open and the close too"""
    readings = [0]

    def clock():
        readings[0] += 1
        if readings[0] == at:
            raise Interrupted
        return readings[0] * 1e-6

    return clock, readings


@pytest.mark.skipif(not os.path.isdir('/proc/self/fd'), reason='needs /proc')
@pytest.mark.parametrize('fsync', [False, True], ids=['close', 'fsync'])
def test_an_interrupt_at_any_step_leaves_no_descriptor_open(tmp_path, fsync):
    # a command server or chg lives on after a Ctrl-C: whichever step of
    # the first files it falls in, no descriptor of the probe stays open
    files = 3
    clock, readings = interrupting_clock(at=0)
    probemod.Probe().write_files(bytes(tmp_path / 'all'), files, fsync, clock)
    steps = readings[0]
    assert steps >= files * (8 if fsync else 6)
    before = open_descriptors()
    for at in range(1, steps + 1):
        clock, _readings = interrupting_clock(at)
        workdir = bytes(tmp_path / ('%d' % at))
        with pytest.raises(Interrupted):
            probemod.Probe().write_files(workdir, files, fsync, clock)
        assert open_descriptors() == before, at


def test_a_directory_left_behind_is_said(tmp_path, monkeypatch):
    monkeypatch.setattr(probemod.shutil, 'rmtree', lambda *a, **k: None)
    ui = make_ui()
    probemod.run(ui, None, bytes(tmp_path), {})
    out = ui.popbuffer()
    [left] = os.listdir(tmp_path)
    assert b'warning: could not remove %s' % os.path.join(
        bytes(tmp_path), os.fsencode(left)) in out
    assert b'332 files written and closed\n' in out
    assert b'removed' not in out.replace(b'could not remove', b'')


@pytest.mark.parametrize('call', ['open', 'makedirs'])
def test_a_failed_open_or_mkdir_aborts_as_a_failed_write_does(
    tmp_path, monkeypatch, call
):
    # the probe opens through the closer's open_owned()
    module = probemod.engine if call == 'open' else os
    attr = 'open_owned' if call == 'open' else call
    real = getattr(module, attr)

    def refused(name, *args, **kwargs):
        # the probe's files (.i) or their directories (data/...), not what
        # shutil.rmtree opens (names relative to a directory, as str)
        path = os.fsencode(name)
        if b'hg-probeclose-' in path and (
            path.endswith(b'.i') if call == 'open' else b'/data/' in path
        ):
            raise OSError(errno.EACCES, os.strerror(errno.EACCES), name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(module, attr, refused)
    with pytest.raises(error.Abort) as caught:
        probemod.run(make_ui(), None, bytes(tmp_path), {})
    message = bytes(caught.value.message)
    assert message.startswith(b'error opening %s/hg-probeclose-'
                              % bytes(tmp_path)), message
    assert message.endswith(b'.i: Permission denied'), message
    assert os.listdir(tmp_path) == []


def test_an_interrupt_as_the_work_directory_is_made_leaves_nothing(
    tmp_path, monkeypatch
):
    # a Ctrl-C right as the directory is made (CPython runs signal
    # handlers as a call returns): the cleanup must know its name already
    real = os.mkdir

    def mkdir_then_interrupted(name, *args, **kwargs):
        real(name, *args, **kwargs)
        if b'hg-probeclose-' in os.fsencode(name):
            raise Interrupted

    monkeypatch.setattr(os, 'mkdir', mkdir_then_interrupted)
    with pytest.raises(Interrupted):
        probemod.run(make_ui(), None, bytes(tmp_path), {})
    assert os.listdir(tmp_path) == []


def test_a_directory_it_cannot_write_in_aborts(tmp_path, monkeypatch):
    def refused(name, *args, **kwargs):
        raise OSError(errno.EACCES, os.strerror(errno.EACCES), name)

    monkeypatch.setattr(os, 'mkdir', refused)
    with pytest.raises(error.Abort) as caught:
        probemod.run(make_ui(), None, bytes(tmp_path), {})
    assert bytes(caught.value.message) == (
        b'cannot write in %s: Permission denied' % bytes(tmp_path)
    )
    assert os.listdir(tmp_path) == []
