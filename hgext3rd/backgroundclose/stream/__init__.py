# stream - the seam of stream clone consumers
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""The stream clone seam: ``streamclone.consumev1``, ``consumev2`` and
``consumev3`` run in an ``ApplySession`` (apply.py), with the wrappers in
place while it runs (wrappers.py), the files a consumer opens through the
vfs (opens.py) or core's ``_write_files`` is given (v2.py), the files
registered with the transaction (journal.py), the take-back of a failed
apply (takeback.py) and the aborts for malformed stream data
(malformed.py).  Imports the engine and shared/, no other seam.
"""
