# face - the extension's commands and help, beside its __init__.py
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""The face, with the package's ``__init__.py`` (the manual that
``hg help -e`` shows, and the wiring): ``hg debugprobeclose``
(probe.py), ``hg debugapplystreamclonebundle`` for every format
(debugapply.py), and the settings in ``hg help config.worker``
(confighelp.py).  The face imports the seams, shared/ and the engine;
nothing below imports it.
"""
