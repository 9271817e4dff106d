# shared - what the seams share
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""What more than one seam uses: a session over the engine's closer
(session.py) and the wrappers in place while it runs (seams.py); who owns
a descriptor a vfs opened (handover.py) and the file objects core gets
(handedfiles.py); writer threads (deferredwrite.py); parent directories
made once (directories.py), ahead of the writers (dirmaker.py), unless
on a local file system (filesystems.py); the ``[worker]`` settings
(settings.py), the
messages (messages.py), the timing report (report.py), and Mercurial's
release differences (compat.py).  These import the engine and each other,
never a seam or the face.  See docs/design.rst, "The layers".
"""
