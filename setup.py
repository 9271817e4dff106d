# setup.py - packaging of the hg-backgroundclose Mercurial extension
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
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
                'hgext3rd.backgroundclose.' + name,
                ['hgext3rd/backgroundclose/%s.c' % name],
                optional=True,
            )
        )

setup(
    name='hg-backgroundclose',
    version='0.1.0',
    description=(
        'Mercurial extension closing files on background threads when '
        'closing is slow (NTFS, NFS, FUSE)'
    ),
    long_description=open('README.rst').read(),
    long_description_content_type='text/x-rst',
    license='GPL-2.0-or-later',
    # Mercurial itself is not required here, like hg-evolve does: the
    # extension runs inside whatever Mercurial the user already has (6.5+)
    packages=['hgext3rd', 'hgext3rd.backgroundclose',
              'hgext3rd.backgroundclose.engine'],
    ext_modules=ext_modules,
    # what the tests use (random.randbytes) and what Mercurial 7.2 needs
    python_requires='>=3.9',
    classifiers=[
        'Environment :: Plugins',
        'License :: OSI Approved :: GNU General Public License v2 or later '
        '(GPLv2+)',
        'Programming Language :: Python :: 3',
        'Topic :: Software Development :: Version Control :: Mercurial',
    ],
)
