# common.py - what the demo and the benchmark share
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Scratch space on tmpfs, timed child processes, the dummy ssh."""

import contextlib
import ctypes
import os
import resource
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DUMMYSSH = os.path.join(ROOT, 'tests', 'dummyssh')
# the ssh command the benchmarks give hg: dummyssh run by this Python, not
# by whichever python3 its #! line finds first (a pyenv shim costs each
# connection a third of a second, which is no network's)
SSH = '%s %s' % tuple(shlex.quote(p) for p in (sys.executable, DUMMYSSH))
CORPUS = os.path.join(HERE, 'corpus.py')
# the package the benchmarks load, and the hgrc section that loads it: by
# path, as byte_compile() compiles it.  By name, hg would import whichever
# copy is installed (another checkout's, installed editable), and compile
# it again in each command where its .pyc files are stale
EXTENSION = os.path.join(ROOT, 'hgext3rd', 'backgroundclose')
EXTENSION_HGRC = '[extensions]\nbackgroundclose = %s\n' % EXTENSION


def hg_env(work):
    """the environment of the benchmark's hg commands: an hgrc written in
    ``work`` that loads the extension by path, plain output, and no
    slow-close model (each command adds its own)"""
    hgrc = os.path.join(work, 'hgrc')
    with open(hgrc, 'w') as fp:
        fp.write(EXTENSION_HGRC)
        fp.write('[ui]\nusername = bench <bench@example.invalid>\n')
    env = dict(os.environ, HGRCPATH=hgrc, HGPLAIN='1')
    env.pop('LD_PRELOAD', None)
    return env


def build_corpus(hg, dest, files, seed, env, size_scale=1.0):
    """corpus.py's repository of ``files`` files at ``dest``"""
    subprocess.run(
        [sys.executable, CORPUS, '--hg', hg, '--files', str(files),
         '--seed', str(seed), '--size-scale', str(size_scale), dest],
        env=env, check=True,
    )


@contextlib.contextmanager
def workdir(size='4g', prefix='hg-backgroundclose-'):
    """a scratch directory, on tmpfs when this process may mount one

    Yields (path, on_tmpfs).  On an ordinary disk the same apply swings
    several-fold from run to run, which hides what is being measured.
    """
    path = tempfile.mkdtemp(prefix=prefix)
    mounted = False
    if os.geteuid() == 0:
        mounted = (
            subprocess.call(
                ['mount', '-t', 'tmpfs', '-o', 'size=%s' % size, 'tmpfs', path],
                stderr=subprocess.DEVNULL,
            )
            == 0
        )
    try:
        yield path, mounted
    finally:
        if mounted:
            subprocess.call(['umount', '-l', path])
        shutil.rmtree(path, ignore_errors=True)


# the latency a file system that turns slow midway turns to (onsetP)
ONSET_US = 700


def latency_env(env, shim, latency, files=None):
    """``env`` with the slow-close model loaded: ``latency`` is microseconds
    per close, 'none' for no model at all (a real file system's closes),
    'burnN' for N microseconds of CPU burnt per close (an
    antivirus scan), 'tail' for the heavy-tailed distribution, 'heavy'
    for 100 us closes with a 20 ms one in 25, or 'onsetP' for closes
    cheap until P percent of ``files`` (the store's), then ONSET_US"""
    env = dict(env)
    for name in ('SLOWCLOSE_BURN', 'SLOWCLOSE_DIST', 'SLOWCLOSE_FROM'):
        env.pop(name, None)
    if latency == 'none':  # a real file system's own closes, no model
        env.pop('LD_PRELOAD', None)
        env.pop('SLOWCLOSE_US', None)
        return env
    env['LD_PRELOAD'] = shim
    if latency.startswith('burn'):
        env['SLOWCLOSE_BURN'] = '1'
        latency = latency[len('burn'):]
    if latency.startswith('onset'):
        env['SLOWCLOSE_FROM'] = str(
            max(1, int(files * int(latency[len('onset'):]) / 100))
        )
        env['SLOWCLOSE_US'] = str(ONSET_US)
    elif latency in ('tail', 'heavy'):
        env['SLOWCLOSE_DIST'] = latency
        env['SLOWCLOSE_US'] = '0'
    else:
        env.pop('SLOWCLOSE_DIST', None)
        env['SLOWCLOSE_US'] = str(latency)
    return env


def timed(cmd, env, cwd=None, stdout=subprocess.DEVNULL):
    """run ``cmd``; return (seconds, peak RSS in KB, stdout or None, CPU
    seconds)

    The peak RSS is the largest of the command and its waited-for children;
    the CPU time (user and system) is theirs all together: an ssh clone's
    server too.  A descendant the command left running (the ssh client
    it does not wait for, and the server behind it) is counted once it
    ends: where Linux lets this process reap the orphans of its children
    (``reaping_orphans``), it waits for them after the command.
    """
    reaping = reaping_orphans()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, env=env, cwd=cwd, stdout=stdout, stderr=subprocess.PIPE
    )
    out = proc.stdout.read() if proc.stdout else None
    err = proc.stderr.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    if reaping:
        _reap_orphans()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = max(cpu, (after.ru_utime + after.ru_stime)
                  - (before.ru_utime + before.ru_stime))
    if proc.returncode:
        raise subprocess.CalledProcessError(
            proc.returncode, cmd, output=out, stderr=err
        )
    return seconds, usage.ru_maxrss, out, cpu


_REAPING = []


def reaping_orphans():
    """whether this process reaps the orphans of its descendants (Linux's
    PR_SET_CHILD_SUBREAPER, asked for once), so that their CPU counts"""
    if not _REAPING:
        ok = False
        if sys.platform.startswith('linux'):
            try:
                libc = ctypes.CDLL(None, use_errno=True)
                ok = libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
            except (OSError, AttributeError):
                ok = False
        _REAPING.append(ok)
    return _REAPING[0]


def _reap_orphans(quiet=0.2, most=10.0):
    """wait for the orphans reparented here: until none has ended for
    ``quiet`` seconds, ``most`` seconds at most (a mount's server, a
    child of this process too, runs on)"""
    deadline = time.monotonic() + most
    last = time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - last < quiet:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid:
            last = time.monotonic()
        else:
            time.sleep(0.01)


def apt_install(packages):
    """install Debian ``packages`` with apt-get; if that fails, update its
    package lists and try once more.  False where that can't be (not root,
    no apt-get) or it failed; the caller checks what it needs afterwards."""
    if os.geteuid() != 0 or not shutil.which('apt-get'):
        return False
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    command = ['apt-get', 'install', '-y', '-qq'] + list(packages)
    if subprocess.call(command, env=env, **quiet) == 0:
        return True
    subprocess.call(['apt-get', 'update', '-qq'], env=env, **quiet)
    return subprocess.call(command, env=env, **quiet) == 0


def byte_compile(hg, *packages):
    """compile the modules of each package directory for the Python that
    runs ``hg``, as pip does when it installs a package.  A checkout has
    no .pyc files, and where none can be written (PYTHONDONTWRITEBYTECODE,
    a read-only tree) every hg command would compile the extension again:
    some 20 ms a process that an installed extension never costs."""
    compile_for(script_python(hg), *packages)


def compile_for(python, *packages):
    """byte_compile() for ``python`` itself"""
    for package in packages:
        if subprocess.call([python, '-m', 'compileall', '-q', package]):
            print('warning: could not byte-compile %s: each hg command '
                  'compiles it again' % package)


def script_python(script):
    """the Python a console script such as hg runs with: its #! line's, or
    this one if that is not a Python (pip's /bin/sh launcher for long
    paths, env)"""
    with open(script, 'rb') as fp:
        first = fp.readline()
    words = first[2:].split() if first.startswith(b'#!') else []
    if words and os.path.basename(words[0]) == b'env':
        words = words[1:]
    if words and os.path.basename(words[0]).startswith(b'python'):
        found = shutil.which(os.fsdecode(words[0]))
        if found:
            return found
    return sys.executable


def freeport():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]
