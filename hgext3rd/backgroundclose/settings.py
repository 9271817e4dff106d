# settings.py - read and validate the [worker] settings of the closer
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Turn the ``[worker]`` configuration into arguments for the closer.

Core Mercurial's four settings keep their meaning; the extension adds a few
of its own (registered in ``__init__``).  Every value is checked here, before
anything is written, and a bad one aborts with a message naming the setting.
"""

from mercurial.i18n import _
from mercurial import error
from mercurial.utils import stringutil

from . import engine

SECTION = b'worker'

# report values: off, human table, JSON
REPORT_OFF = b'off'
REPORT_TEXT = b'text'
REPORT_JSON = b'json'


def _read(reader, name, *default):
    """read a setting, turning core's config error into an abort"""
    try:
        return reader(SECTION, name, *default)
    except error.ConfigError as exc:
        raise error.Abort(exc.message, hint=_(b'see "hg help -e backgroundclose"'))


def _positive(ui, name, minimum=1):
    value = _read(ui.configint, name)
    if value is None or value < minimum:
        if minimum:
            message = _(b'%s.%s must be a positive integer, not %s')
        else:
            message = _(b'%s.%s must be zero or more, not %s')
        raise error.Abort(
            message % (SECTION, name, ui.config(SECTION, name)),
            hint=_(b'see "hg help -e backgroundclose"'),
        )
    return value


def policy(ui):
    """what ``worker.backgroundclose`` asks for

    Left unset or ``auto``, the extension decides while it applies
    (adaptive); a boolean forces closing on background threads or on the
    writing thread.  ``auto`` overrides a ``true`` or ``false`` set in a
    file read before (a system-wide one) without ``%unset``.
    """
    # core registers this one with a default that depends on the platform,
    # and such an item must be read with an explicit default (devel
    # warnings say so); None stands for "unset" here
    value = ui.config(SECTION, b'backgroundclose', None)
    if value is None or value.strip().lower() == b'auto':
        return engine.ADAPTIVE
    forced = stringutil.parsebool(value)
    if forced is None:
        raise error.Abort(
            _(b'%s.backgroundclose must be a boolean or "auto", not %s')
            % (SECTION, value),
            hint=_(b'see "hg help -e backgroundclose"'),
        )
    return engine.BACKGROUND if forced else engine.INLINE


def closer_options(ui):
    """keyword arguments for ``closer.Closer`` from the configuration"""
    chosen = policy(ui)
    minfilecount = _positive(ui, b'backgroundcloseminfilecount', 0)
    if chosen == engine.ADAPTIVE and not ui.configsource(
        SECTION, b'backgroundcloseminfilecount'
    ):
        # core's default (2048) guards against starting threads for a few
        # files; the adaptive mode starts none unless closes are measured to
        # be slow, so it only honours a minimum the user set
        minfilecount = 0
    return {
        'policy': chosen,
        'threads': _positive(ui, b'backgroundclosethreadcount'),
        'maxthreads': _positive(ui, b'backgroundclosemaxthreadcount'),
        'maxqueue': _positive(ui, b'backgroundclosemaxqueue'),
        'minfilecount': minfilecount,
        'threshold': _positive(ui, b'backgroundclosethreshold', 0) * 1e-6,
    }


def writes(ui):
    """what ``worker.backgroundclosewrites`` asks for: unset, writer
    threads when opens are measured to wait (adaptive); true, always;
    false, never"""
    if ui.config(SECTION, b'backgroundclosewrites') is None:
        return engine.ADAPTIVE
    if _read(ui.configbool, b'backgroundclosewrites'):
        return engine.BACKGROUND
    return engine.INLINE


def native(ui):
    """whether ``worker.backgroundclosenative`` lets descriptors be closed
    on the C lane's threads (where it is built)"""
    return bool(_read(ui.configbool, b'backgroundclosenative'))


def journal(ui):
    """whether ``worker.backgroundclosejournal`` registers each store file
    a stream apply writes with its transaction"""
    return bool(_read(ui.configbool, b'backgroundclosejournal'))


def report(ui):
    """how to print the timing report after a stream apply

    ``worker.backgroundclosereport`` takes a boolean or ``json``; unset, no
    report (not in verbose mode either: Mercurial's own tests and users'
    scripts read core's verbose output as it is)
    """
    value = ui.config(SECTION, b'backgroundclosereport')
    if value is None:
        return REPORT_OFF
    if value.strip().lower() == REPORT_JSON:
        return REPORT_JSON
    flag = stringutil.parsebool(value)
    if flag is None:
        raise error.Abort(
            _(b'%s.backgroundclosereport must be a boolean or "json", not %s')
            % (SECTION, value)
        )
    return REPORT_TEXT if flag else REPORT_OFF


def report_declined(ui):
    """whether ``worker.backgroundclosereport`` is set to false: unset, a
    command whose output is the report (debugapplystreamclonebundle)
    prints it all the same"""
    return (
        report(ui) == REPORT_OFF
        and ui.config(SECTION, b'backgroundclosereport') is not None
    )


def validate(ui):
    """check every setting now, so that a typo aborts before any write"""
    closer_options(ui)
    native(ui)
    writes(ui)
    journal(ui)
    report(ui)


# The entry points of everything that closes files through the extension
# check the settings before they write: a bad value met later, where the
# closer is made, would abort an update after it removed files (in each of
# its forked workers), or a pull after its transaction began.


def checked(orig, repo, *args, **kwargs):
    """for ``exchange.pull`` (pull, clone) and ``merge._update`` (every
    update and merge)"""
    validate(repo.ui)
    return orig(repo, *args, **kwargs)


def checked_apply(orig, unpacker, repo, *args, **kwargs):
    """for ``cg1unpacker.apply`` (hg unbundle, a push on the server, and
    Mercurial used as a library): before the changelog is written"""
    validate(repo.ui)
    return orig(unpacker, repo, *args, **kwargs)
