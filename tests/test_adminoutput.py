# test_adminoutput.py - what an administrator reads: the report's streams,
# the ui.log line, the settings in hg help config.worker, failure messages
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.

import io
import json
import types
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))

from mercurial import error, ui as uimod  # noqa: E402
from mercurial.utils import resourceutil  # noqa: E402

import hgext3rd.backgroundclose as extension  # noqa: E402
from hgext3rd.backgroundclose import engine  # noqa: E402
from hgext3rd.backgroundclose.face import confighelp  # noqa: E402
from hgext3rd.backgroundclose.shared import (  # noqa: E402
    messages,
    report as reportmod,
)

SETTINGS = (
    b'backgroundclosepolicy', b'backgroundclose', b'backgroundclosethreadcount',
    b'backgroundclosemaxthreadcount', b'backgroundclosemaxqueue',
    b'backgroundcloseminfilecount', b'backgroundclosethreshold',
    b'backgroundclosenative', b'backgroundclosewrites',
    b'backgroundclosejournal', b'backgroundclosereport',
)


def make_ui(quiet=False):
    """a ui whose standard output and error are two buffers"""
    ui = uimod.ui()
    ui.fout = io.BytesIO()
    ui.ferr = io.BytesIO()
    if quiet:
        ui.setconfig(b'ui', b'quiet', b'true', b'test')
    return ui


def one_report():
    """the report of an apply of three files, one closed on a thread"""
    ops = {
        name: engine.PythonOpStat()
        for name in reportmod.OPERATIONS + reportmod.CLOSE_OPERATIONS
        + reportmod.WRITER_OPERATIONS
    }
    for name, seconds in (('open', 1e-5), ('write', 2e-5), ('close', 3e-5)):
        for _ in range(3):
            ops[name].add(seconds)
    ops['close-background'].add(1e-3)
    closer = {
        b'policy': b'adaptive', b'reason': b'', b'mode': b'background',
        b'threads': 4, b'max-queued': 384, b'peak-queued': 2, b'switches': 1,
        b'dirs-made': 0, b'dirs-existing': 0, b'writers': 0,
        b'written-by-writers': 0, b'peak-held': 0,
    }
    return reportmod.ApplyReport(b'v2', 0.5, ops, closer)


# the report after an apply inside clone, pull, unbundle -------------------


def test_the_table_is_status_output():
    ui = make_ui()
    reportmod.show_after_apply(ui, one_report(), b'text')
    out = ui.fout.getvalue()
    assert out.startswith(b'stream apply (v2): 3 files')
    assert b'close, applier' in out and b'close, threads' in out
    assert ui.ferr.getvalue() == b''


@pytest.mark.parametrize('lowered', [False, True])
def test_the_closer_line_says_when_its_threads_gave_way(lowered):
    # one line whatever the closer did (Mercurial's tests glob it), with
    # the lowered priority inside its parentheses
    report = one_report()
    report.closer[b'lowered'] = lowered
    ui = make_ui()
    reportmod.show_after_apply(ui, report, b'text')
    [line] = [
        line for line in ui.fout.getvalue().splitlines()
        if line.startswith(b'  closer: ')
    ]
    assert line.startswith(b'  closer: adaptive, background, 4 threads, ')
    if lowered:
        assert line.endswith(b'(peak 2; threads at a lower priority)')
    else:
        assert line.endswith(b'(peak 2)')


@pytest.mark.parametrize('lowered', [False, True])
def test_the_debug_line_says_it_after_its_counts(lowered):
    # Mercurial's own tests glob "* threads, * switches" in this line
    # (tests/upstream/allowlist.txt)
    closes = engine.PythonOpStat()
    for _ in range(5):
        closes.add(1e-3)
    closer = types.SimpleNamespace(
        decisions=types.SimpleNamespace(reason=None, switches=1),
        mode='background', threadcount=4, native=True, lowered=lowered,
    )
    stats = {'close': closes, 'close-background': closes}
    line = messages.closer_summary(closer, b'revlog', b', 2 opens left to '
                                   b'core', stats)
    assert line.startswith(
        b'backgroundclose: 5 revlog closes (5 on threads), background mode, '
        b'4 native threads, 1 switches, '
    )
    assert line.endswith(b', 2 opens left to core\n')
    assert (b'threads at a lower priority' in line) == lowered


def test_an_operation_counted_but_not_timed_shows_no_time():
    # a forced policy counts the writes without timing them: no "0 ns"
    report = one_report()
    for _ in range(3):
        report.ops['mkdir'].add(0.0)
    ui = make_ui()
    reportmod.show_after_apply(ui, report, b'text')
    rows = {line.split()[0]: line.split()[1:]
            for line in ui.fout.getvalue().splitlines()[2:]}
    assert rows[b'mkdir'] == [b'3', b'-', b'-', b'-']
    assert rows[b'open'][0] == b'3' and rows[b'open'][1] != b'-'


def test_quiet_silences_the_table():
    ui = make_ui(quiet=True)
    reportmod.show_after_apply(ui, one_report(), b'text')
    assert ui.fout.getvalue() == b'' and ui.ferr.getvalue() == b''


@pytest.mark.parametrize('quiet', [False, True])
def test_json_goes_to_standard_error_whatever_quiet_says(quiet):
    ui = make_ui(quiet=quiet)
    reportmod.show_after_apply(ui, one_report(), b'json')
    assert ui.fout.getvalue() == b''
    # one object on one line, saying what it is
    [line] = ui.ferr.getvalue().splitlines()
    data = json.loads(line)
    assert data['kind'] == 'stream'
    assert data['files'] == 3 and data['closer']['threads'] == 4
    assert data['ops']['close-threads']['count'] == 1


# the ui.log line ----------------------------------------------------------


class Logger:
    """a logger as the blackbox extension is one"""

    def __init__(self):
        self.events = []

    def tracked(self, event):
        return True

    def log(self, ui, event, msg, opts):
        self.events.append((event, msg, opts))


def closed_on_threads(tmp_path, count):
    """a closer forced to the background that closed ``count`` files"""
    closer = engine.Closer(policy=engine.BACKGROUND, minfilecount=0)
    for index in range(count):
        closer.close(open(tmp_path / ('f%d' % index), 'wb'))
    closer.finish(False)
    return closer


def test_a_summary_line_goes_to_the_log_whatever_the_verbosity(tmp_path):
    ui = make_ui(quiet=True)
    logger = Logger()
    ui.setlogger(b'test', logger)
    closer = closed_on_threads(tmp_path, 5)
    messages.summarize(ui, closer, b'revlog', b'changegroup files',
                       b'closes', 0.25, b', 2 revlogs left to core')
    [(event, msg, opts)] = logger.events
    assert event == b'backgroundclose'
    assert msg.startswith(
        b'backgroundclose: changegroup files: 5 closes in 0.25 s; '
        b'closes on 4 threads took '
    )
    assert msg.endswith(b'; policy background, ended background, '
                        b'0 switches, 2 revlogs left to core\n')
    assert opts[b'backgroundclose_count'] == 5
    assert opts[b'backgroundclose_policy'] == b'background'
    assert opts[b'backgroundclose_threads'] == 4
    assert opts[b'backgroundclose_hidden_seconds'] > 0
    # nothing printed: the log is not the output
    assert ui.fout.getvalue() == b'' and ui.ferr.getvalue() == b''


class FailingLogger(Logger):
    """a logger that fails on the extension's event, or on ``events``"""

    def __init__(self, events=(b'backgroundclose',)):
        super().__init__()
        self.failing = events

    def log(self, ui, event, msg, opts):
        if event in self.failing:
            raise OSError(28, 'No space left on device')


def test_a_logger_that_fails_does_not_fail_the_work(tmp_path):
    # the line is logged inside the command's transaction: a raise there
    # would roll back a pull that succeeded
    ui = make_ui()
    ui.setconfig(b'ui', b'debug', b'true', b'test')
    ui.setlogger(b'test', FailingLogger())
    messages.summarize(ui, closed_on_threads(tmp_path, 1), b'file',
                       b'working-copy update', b'files', 0.1)
    assert b'logging the summary failed: ' in ui.fout.getvalue()
    # a logger that fails on the debug line about it too (a closer that
    # started no thread prints no other debug line)
    ui.setlogger(b'test', FailingLogger(events=(b'backgroundclose', b'debug')))
    inline = engine.Closer(policy=engine.INLINE)
    inline.finish(False)
    messages.summarize(ui, inline, b'file', b'working-copy update',
                       b'files', 0.1)


def test_the_debug_line_only_for_a_closer_that_started_threads(tmp_path):
    ui = make_ui()
    ui.setconfig(b'ui', b'debug', b'true', b'test')
    inline = engine.Closer(policy=engine.INLINE)
    inline.close(open(tmp_path / 'f', 'wb'))
    inline.finish(False)
    messages.summarize(ui, inline, b'file', b'files', b'files', 0.1)
    assert ui.fout.getvalue() == b''
    messages.summarize(ui, closed_on_threads(tmp_path, 2), b'file', b'files',
                       b'files', 0.1)
    assert ui.fout.getvalue().startswith(
        b'backgroundclose: 2 file closes (2 on threads), background mode')


# hg help config.worker ----------------------------------------------------


def core_config_topic():
    with resourceutil.open_resource(b'mercurial.helptext',
                                    b'config.txt') as fp:
        return fp.read()


def worker_section(doc):
    start = doc.index(b'``worker``\n------')
    following = doc.find(b'\n------', start + 20)
    return doc[start:following if following >= 0 else len(doc)]


def test_the_extension_settings_replace_cores_in_the_worker_section():
    core = core_config_topic()
    hook = confighelp.rewrite(extension)
    shown = hook(None, b'config', core)
    section = worker_section(shown)
    for name in SETTINGS:
        assert section.count(b'\n``%s``\n' % name) == 1, name
    # core's Windows note is gone, the rest of the section is core's
    assert b'true on Windows, false elsewhere' not in shown
    assert b'``numcpus``' in section and b'``enabled``' in section
    outside = shown.replace(section, b'')
    assert outside == core.replace(worker_section(core), b'')
    # entries are indented as core's are
    assert b'\n``backgroundclosewrites``\n    Write whole stream and working-copy' in shown


def test_a_topic_without_cores_entries_is_left_alone():
    hook = confighelp.rewrite(extension)
    doc = b'``worker``\n----------\n\n``enabled``\n    Yes.\n'
    assert hook(None, b'config', doc) == doc
    assert hook(None, b'config', b'no section here\n') == b'no section here\n'


def test_the_settings_text_is_the_extensions_help():
    text = confighelp.settings_text(extension.__doc__.encode('utf-8'))
    assert text.startswith(
        b'``backgroundclosepolicy``\n    ``adaptive`` (or ``auto``) times')
    assert text.count(b'\n``backgroundclose') == len(SETTINGS) - 1


# failure messages ---------------------------------------------------------


@pytest.mark.parametrize('action', ['opening', 'writing', 'closing'])
def test_a_failed_file_is_one_whole_sentence_per_action(action):
    failure = engine.FileError(b'data/a.i', OSError(5, 'Input/output error'),
                               action)
    abort = messages.file_abort(failure, b'data/a.i')
    assert isinstance(abort, error.Abort)
    assert abort.message == (
        b'error %s data/a.i: Input/output error' % action.encode('ascii'))


def test_the_closers_reasons_are_worded_for_the_user():
    assert messages.reason('fewer files than minfilecount') == (
        b'fewer files than worker.backgroundcloseminfilecount')
    # a reason not known here is shown as the engine gives it
    assert messages.reason('something new') == b'something new'


def test_a_close_refused_to_a_non_owner_is_reported_once_on_debug(
        monkeypatch):
    # in use, a number given to close_owned() by code that does not own it
    # is left open and said once, with --debug, after the session
    from hgext3rd.backgroundclose.engine import descriptors

    monkeypatch.setattr(descriptors, 'STRICT', False)
    descriptors.take_unowned()
    ui = make_ui()
    ui.setconfig(b'ui', b'debug', b'true', b'test')
    descriptors.close_owned(1 << 20, set())
    messages.report_unowned(ui)
    messages.report_unowned(ui)
    said = ui.fout.getvalue() + ui.ferr.getvalue()
    assert said.count(b'were left open (a bug') == 1, said
    assert b'1 descriptors were to be closed by code' in said
    # without --debug: nothing
    quiet = make_ui()
    descriptors.close_owned(1 << 20, set())
    messages.report_unowned(quiet)
    assert not quiet.fout.getvalue() + quiet.ferr.getvalue()
