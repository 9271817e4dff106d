# cbuild.py - build one of the extension's C modules as a test needs it
"""Build ``hgext3rd/backgroundclose/engine/<name>.c`` into a test's
directory with extra compiler flags, against this Python's headers, and load
it in a child Python: for the builds this machine cannot run natively (macOS
without ``pthread_condattr_setclock``, a free-threaded Python)."""

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import textwrap

import pytest


def c_compiler():
    """the compiler this Python was built with, or cc (None: neither)"""
    for cc in (sysconfig.get_config_var('CC'), 'cc'):
        argv = shlex.split(cc or '')
        if argv and shutil.which(argv[0]):
            return argv
    return None


def build_module(name, directory, *flags):
    """build ``name``.c into ``directory`` with extra compiler ``flags``:
    the path of the module (skips the test where no compiler is found)"""
    cc = c_compiler()
    if cc is None:
        pytest.skip('no C compiler found to build %s.c with %s'
                    % (name, ' '.join(flags)))
    src = os.path.join(os.path.dirname(__file__), '..', 'hgext3rd',
                       'backgroundclose', 'engine', name + '.c')
    out = os.path.join(
        str(directory), name + sysconfig.get_config_var('EXT_SUFFIX'))
    paths = sysconfig.get_paths()
    built = subprocess.run(
        cc + ['-shared', '-fPIC', '-pthread', '-O2', '-Wall',
              '-Werror=implicit-function-declaration']
        + list(flags)
        + ['-I', paths['include'], '-I', paths['platinclude'],
           '-o', out, src],
        capture_output=True, text=True,
    )
    assert built.returncode == 0, built.stderr
    return out


def load_in_child(modname, path):
    """what loading the module at ``path`` as ``modname`` prints in a child
    Python: 'loaded', or 'ImportError: ' and the message.  Lazy binding:
    such a build may name functions only another libpython has."""
    result = subprocess.run(
        [sys.executable, '-c', textwrap.dedent(
            '''
            import importlib.util, os, sys
            sys.setdlopenflags(os.RTLD_LAZY)
            spec = importlib.util.spec_from_file_location(%r, %r)
            try:
                importlib.util.module_from_spec(spec)
                print('loaded')
            except ImportError as exc:
                print('ImportError:', exc)
            '''
            % (modname, path))],
        capture_output=True, text=True, timeout=120,
    )
    return result.stdout, result.stderr
