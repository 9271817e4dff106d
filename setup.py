# setup.py - the optional C modules of the hg-backgroundclose extension
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
#
# Everything else (name, version, packages, metadata) is in pyproject.toml.
# `python setup.py build_ext --inplace` builds the C modules in a checkout.
import os

from setuptools import Extension, setup

# The close lane is C so that its threads never take the GIL; where it cannot
# be built (no compiler, not POSIX) the extension closes on Python threads
# instead, so the build is optional.  So is the timing report's counters'
# (_opstat.c): without it they count in Python, for a little more time.
ext_modules = []
if os.name == 'posix':
    for name in ('_closelane', '_opstat'):
        ext_modules.append(
            Extension(
                'hgext3rd.backgroundclose.engine.' + name,
                ['hgext3rd/backgroundclose/engine/%s.c' % name],
                optional=True,
            )
        )

setup(ext_modules=ext_modules)
