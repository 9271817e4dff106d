# settings.py - read and validate the [worker] settings of the closer
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Turn the ``[worker]`` configuration into arguments for the closer.

Core Mercurial's four settings keep their meaning; the extension adds a few
of its own (registered in ``__init__``), which a Mercurial without it
ignores.  Every value is checked here, before anything is written, and a
bad one is a ``config error:`` naming the setting and quoting the value,
as core's own are.
"""

from mercurial.i18n import _
from mercurial import error, pycompat
from mercurial.utils import stringutil

from .. import engine
from . import messages

SECTION = b'worker'

# the extension's own name for the policy: a Mercurial without the
# extension ignores it, where it refuses anything but a boolean in core's
# worker.backgroundclose
POLICY = b'backgroundclosepolicy'
_POLICIES = {
    b'adaptive': engine.ADAPTIVE,
    b'auto': engine.ADAPTIVE,
    b'background': engine.BACKGROUND,
    b'inline': engine.INLINE,
}

# report values: off, human table, JSON
REPORT_OFF = b'off'
REPORT_TEXT = b'text'
REPORT_JSON = b'json'

# every count's lowest and highest value, checked before anything starts
# (a typo must not start tens of thousands of threads, each with its own
# stack): four times the default maximum of threads, and a queue of files
# past which the descriptor limit clamps it on any usual system anyway
MAXTHREADS = 256
COUNTS = {
    b'backgroundclosethreadcount': (1, MAXTHREADS),
    b'backgroundclosemaxthreadcount': (1, MAXTHREADS),
    b'backgroundclosemaxqueue': (1, 65536),
    b'backgroundcloseminfilecount': (0, 1000000000),
}
# microseconds: a second
THRESHOLD = b'backgroundclosethreshold'
MAXTHRESHOLD = 1000000


def _hint():
    return _(b'see "hg help -e backgroundclose"')


def _bad(name, value, what):
    """core's kind of error for a setting: ``config error:``, the value
    quoted (bytes from a file; anything from a program that set it), the
    one hint"""
    return error.ConfigError(
        _(b"%s.%s %s ('%s')")
        % (SECTION, name, what, pycompat.bytestr(value)),
        hint=_hint(),
    )


def _read(reader, name, *default):
    """read a setting with one of core's readers, its config error given
    the hint every setting of the extension carries"""
    try:
        return reader(SECTION, name, *default)
    except error.ConfigError as exc:
        raise error.ConfigError(exc.message, hint=_hint()) from None


def _count(ui, name):
    value = _read(ui.configint, name)
    low, high = COUNTS[name]
    if value is None or not low <= value <= high:
        raise _bad(
            name,
            ui.config(SECTION, name),
            _(b'must be from %d to %d') % (low, high),
        )
    return value


def _threshold(ui):
    """microseconds, a number (a fraction too)"""
    try:
        value = ui.configwith(float, SECTION, THRESHOLD, desc=b'number')
    except error.ConfigError as exc:
        raise error.ConfigError(exc.message, hint=_hint()) from None
    # (a NaN compares false both ways)
    if not 0 <= value <= MAXTHRESHOLD:
        raise _bad(
            THRESHOLD,
            ui.config(SECTION, THRESHOLD),
            _(b'must be from 0 to %d') % MAXTHRESHOLD,
        )
    return value


def policy(ui):
    """what the settings ask of the closer: ``engine.ADAPTIVE``,
    ``BACKGROUND`` or ``INLINE`` (see ``chosen_policy``)"""
    return chosen_policy(ui)[0]


def chosen_policy(ui):
    """``(policy, setting)``: the closer's policy and the name of the
    setting that chose it, None where neither is set.

    ``worker.backgroundclosepolicy`` first: ``adaptive`` (or ``auto``),
    ``background``, ``inline``.  Unset, core's ``worker.backgroundclose``:
    a boolean forces closing on background threads or on the applying
    thread; unset, adaptive.  Its ``auto``, which Mercurial without the
    extension refuses, is still read as adaptive.
    """
    value = ui.config(SECTION, POLICY)
    if value is not None:
        chosen = _POLICIES.get(pycompat.bytestr(value).strip().lower())
        if chosen is None:
            raise _bad(
                POLICY, value, _(b'is not adaptive, background or inline')
            )
        return chosen, POLICY
    # core registers this one with a default that depends on the platform,
    # and such an item must be read with an explicit default (devel
    # warnings say so); None stands for "unset" here
    value = ui.config(SECTION, b'backgroundclose', None)
    if value is None:
        return engine.ADAPTIVE, None
    if isinstance(value, bool):  # set by a program, as core's may be
        forced = value
    elif value.strip().lower() == b'auto':
        return engine.ADAPTIVE, b'backgroundclose'
    else:
        forced = stringutil.parsebool(value)
    if forced is None:
        # core's own words for it
        raise _bad(b'backgroundclose', value, _(b'is not a boolean'))
    return (
        engine.BACKGROUND if forced else engine.INLINE
    ), b'backgroundclose'


def describe_policy(ui):
    """the policy in effect and the setting that chose it, as a sentence
    (bytes) for :hg:`config` and :hg:`debugprobeclose`"""
    chosen, setting = chosen_policy(ui)
    policy = messages.word(chosen)
    if setting is None:
        return _(
            b'the %s policy, as neither worker.backgroundclosepolicy nor '
            b'worker.backgroundclose is set'
        ) % policy
    value = pycompat.bytestr(ui.config(SECTION, setting, None)).strip()
    source = ui.configsource(SECTION, setting) or b'?'
    sentence = _(b'the %s policy, as worker.%s=%s (%s)') % (
        policy, setting, value, source
    )
    if setting == b'backgroundclose' and value.lower() == b'auto':
        sentence += _(
            b'; Mercurial without the extension refuses "auto": set '
            b'worker.backgroundclosepolicy=adaptive instead'
        )
    return sentence


def closer_options(ui):
    """keyword arguments for ``closer.Closer`` from the configuration"""
    chosen = policy(ui)
    minfilecount = _count(ui, b'backgroundcloseminfilecount')
    if chosen == engine.ADAPTIVE and not ui.configsource(
        SECTION, b'backgroundcloseminfilecount'
    ):
        # core's default (2048) guards against starting threads for a few
        # files; the adaptive mode starts none unless closes are measured to
        # be slow, so it only honours a minimum the user set
        minfilecount = 0
    threads = _count(ui, b'backgroundclosethreadcount')
    maxthreads = _count(ui, b'backgroundclosemaxthreadcount')
    if threads > maxthreads:
        startset = ui.configsource(SECTION, b'backgroundclosethreadcount')
        maxset = ui.configsource(SECTION, b'backgroundclosemaxthreadcount')
        if startset and maxset:
            raise error.ConfigError(
                _(
                    b'%s.backgroundclosethreadcount (%d) is more than '
                    b'%s.backgroundclosemaxthreadcount (%d)'
                )
                % (SECTION, threads, SECTION, maxthreads),
                hint=_hint(),
            )
        if startset:
            # core's own setting, set alone (a Mercurial without the
            # extension takes it): the default maximum makes room
            maxthreads = threads
        else:
            # core's default start, below a maximum the user lowered
            threads = maxthreads
    return {
        'policy': chosen,
        'threads': threads,
        'maxthreads': maxthreads,
        'maxqueue': _count(ui, b'backgroundclosemaxqueue'),
        'minfilecount': minfilecount,
        'threshold': _threshold(ui) * 1e-6,
    }


def writes(ui):
    """what ``worker.backgroundclosewrites`` asks for: unset, writer
    threads when opens are measured to wait (adaptive), none where the
    policy is inline; true, always; false, never"""
    if ui.config(SECTION, b'backgroundclosewrites') is None:
        # inline asked for: no thread of any kind
        if policy(ui) == engine.INLINE:
            return engine.INLINE
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
    if isinstance(value, bool):  # set by a program
        return REPORT_TEXT if value else REPORT_OFF
    if value.strip().lower() == REPORT_JSON:
        return REPORT_JSON
    flag = stringutil.parsebool(value)
    if flag is None:
        raise _bad(
            b'backgroundclosereport', value, _(b'is not a boolean or json')
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
