# confighelp.py - the extension's settings in hg help config.worker
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""While the extension is loaded, :hg:`help config.worker` shows its
settings, taken from the "Settings" section of the extension's own help,
in place of core's four ``backgroundclose*`` entries (core's say "default:
true on Windows", which the extension changes).  One text, two places.
And :hg:`config worker.backgroundclosepolicy` says which policy is in
effect and which setting chose it."""

import re
import sys

from mercurial.i18n import _, gettext
from mercurial import (
    help,
    pycompat,
)
from mercurial.utils import stringutil

from ..shared import settings

# the first entry of the extension's settings, in its help
_FIRST_SETTING = b'``backgroundclosepolicy``\n'
# core's entries in the worker section: a name, then lines indented or
# empty, up to the next entry
_CORE_ENTRY = re.compile(
    rb'``backgroundclose[a-z]*``\n(?:(?: {4}.*)?\n)*'
)
_WORKER_SECTION = b'``worker``\n----------\n'


def settings_text(extdoc):
    """the settings entries of the extension's help ``extdoc`` (bytes),
    indented as core's config help is"""
    start = extdoc.find(_FIRST_SETTING)
    if start < 0:
        return None
    entries = extdoc[start:].rstrip(b'\n') + b'\n\n'
    return re.sub(rb'(?m)^  (?=\S)', b'    ', entries)


def help_with_settings(orig, ui, *args, **opts):
    """:hg:`help` (wrapped): the ``config`` topic's hook put in place
    first (loading the help module only where help is shown)"""
    _put_hook_in_place()
    return orig(ui, *args, **opts)


def serve_with_settings(orig, ui, *args, **opts):
    """:hg:`serve` (wrapped): the same for hgweb's help pages; not for the
    ssh server (``--stdio``) or the command server, which show no help
    page (a command server's :hg:`help` runs ``help_with_settings``)"""
    if not opts.get('stdio') and not opts.get('cmdserver'):
        _put_hook_in_place()
    return orig(ui, *args, **opts)


def _put_hook_in_place():
    """once in a process"""
    if _hook not in help.helphooks.get(b'config', ()):
        help.addtopichook(b'config', _hook)


def _hook(ui, topic, doc):
    """the topic hook for ``config``: the settings from the extension's
    own help"""
    # the extension's package, one up from face/
    extension = sys.modules[__package__.rpartition('.')[0]]
    return rewrite(extension)(ui, topic, doc)


def rewrite(extension):
    """the topic hook for ``config`` (help.addtopichook), with the
    settings in the help of the module ``extension``"""

    def hook(ui, topic, doc):
        extdoc = pycompat.getdoc(extension)
        if not extdoc:
            # python -OO: no docstrings, core's text then
            return doc
        entries = settings_text(gettext(extdoc))
        section = doc.find(_WORKER_SECTION)
        if entries is None or section < 0:
            return doc
        first = _CORE_ENTRY.search(doc, section)
        if first is None:
            return doc
        end = first.end()
        while True:
            following = _CORE_ENTRY.match(doc, end)
            if following is None:
                break
            end = following.end()
        return doc[: first.start()] + entries + doc[end:]

    return hook


# the names :hg:`config` is asked for that get the policy explained
_POLICY_NAMES = (
    b'worker',
    b'worker.backgroundclose',
    b'worker.' + settings.POLICY,
)


def explain_policy(orig, ui, repo, *values, **opts):
    """:hg:`config` (wrapped): asked for the ``worker`` section, for
    ``worker.backgroundclose`` or for ``worker.backgroundclosepolicy``, it
    also says, on standard error, which policy the extension follows and
    which setting chose it (unset, core prints nothing and returns 1 where
    the extension decides for itself).  The output and the return code
    stay core's; ``-q``, ``-T`` and the other options leave it out."""
    result = orig(ui, repo, *values, **opts)
    if (
        len(values) == 1
        and values[0] in _POLICY_NAMES
        and not any(opts.values())
        and not ui.quiet
    ):
        ui.write_err(b'(%s)\n' % _policy_sentence(ui))
    return result


def _policy_sentence(ui):
    try:
        return _(b'backgroundclose: %s') % settings.describe_policy(ui)
    except Exception as exc:  # a bad value: core's config error words
        return _(b'backgroundclose: %s') % stringutil.forcebytestr(exc)
