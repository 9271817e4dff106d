# test_fuzz_streams.py - randomly malformed stream bundles (hypothesis)
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Feed randomly damaged v1 and v2 stream bundles to
``hg debugapplystreamclonebundle`` with the extension on.

Whatever the damage: hg exits 0 or 255, never with a traceback, within a
minute; nothing is written outside the repository's store and cache; and a
failed apply leaves the repository as ``hg init`` made it.

``make test`` runs a fixed set of examples (derandomized, so that CI is
repeatable); ``make soak`` runs new random ones (FUZZ_EXAMPLES, FUZZ_RANDOM).
"""

import os
import shutil
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

sys.path.insert(0, os.path.dirname(__file__))

import streamcraft  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
HG = os.path.join(os.path.dirname(sys.executable), 'hg')
# 10 in make test, 30 in make test-long, new ones in make soak
EXAMPLES = int(os.environ.get('FUZZ_EXAMPLES', '10'))
RANDOM = bool(os.environ.get('FUZZ_RANDOM'))
SHIM = os.environ.get('SLOWCLOSE_SO')  # the close-latency shim, from make

# what core's transaction writes into .hg on any commit or abort
TRANSACTION_NOTES = {'journal.desc', 'undo.desc'}

pytestmark = pytest.mark.skipif(
    not os.path.exists(HG), reason='no hg next to %s' % sys.executable
)


def run_hg(env, *args, timeout=60):
    return subprocess.run(
        [HG] + list(args),
        env=env,
        capture_output=True,
        timeout=timeout,  # a hang fails the test
    )


@pytest.fixture(scope='module')
def world(tmp_path_factory):
    """a real 40-file v1 bundle, an empty repository to copy, and an hgrc"""
    root = tmp_path_factory.mktemp('fuzz')
    hgrc = root / 'hgrc'
    hgrc.write_text(
        '[ui]\nusername = test <test@example.invalid>\n'
        '[extensions]\nbackgroundclose =\n'
        '[worker]\nbackgroundcloseminfilecount = 0\n'
    )
    env = dict(os.environ, HGRCPATH=str(hgrc), HGPLAIN='1', LC_ALL='C')
    subprocess.run(
        [sys.executable, os.path.join(HERE, '..', 'bench', 'corpus.py'),
         '--hg', HG, '--files', '40', '--seed', '3', str(root / 'src')],
        env=env, check=True, capture_output=True,
    )
    bundle = root / 'real.hg'
    run_hg(env, '-R', str(root / 'src'), 'debugcreatestreamclonebundle',
           str(bundle))
    requirements, files = streamcraft.read_v1(bundle.read_bytes())
    run_hg(env, 'init', str(root / 'pristine'))
    return World(
        root=root,
        env=env,
        requirements=requirements,
        files=files,
        pristine=tree(root / 'pristine' / '.hg'),
    )


class World(dict):
    """what every example starts from (short repr: hypothesis prints it)"""

    def __repr__(self):
        return '<fuzz world in %s>' % self['root']


def tree(top):
    """every path below ``top``, relative to it"""
    found = set()
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            found.add(os.path.relpath(os.path.join(dirpath, name), top))
    return found


def outside(sandbox):
    """what the sandbox holds outside the repository's store and cache"""
    found = set()
    for path in tree(sandbox):
        parts = path.split(os.sep)
        if parts[:3] in (['r', '.hg', 'store'], ['r', '.hg', 'cache']):
            continue
        if parts[:2] == ['r', '.hg'] and parts[2:] and parts[2] in TRANSACTION_NOTES:
            continue
        found.add(path)
    return found


# damage ---------------------------------------------------------------

names = st.one_of(
    st.sampled_from([
        b'..', b'../x.i', b'/abs.i', b'.hg/hgrc', b'data/\0.i', b'data/x/../../y.i',
        b'', b'data/', b'data/a.i/b.i', b'data/' + b'n' * 300 + b'.i',
    ]),
    st.binary(min_size=0, max_size=40),
)

damage = st.one_of(
    st.tuples(st.just('truncate'), st.floats(0, 1)),
    st.tuples(st.just('flip'), st.lists(st.tuples(st.floats(0, 1), st.integers(1, 255)), min_size=1, max_size=8)),
    st.tuples(st.just('insert'), st.floats(0, 1), st.binary(min_size=1, max_size=64)),
    st.tuples(st.just('filecount'), st.integers(0, 2 ** 64 - 1)),
    st.tuples(st.just('bytecount'), st.integers(0, 2 ** 64 - 1)),
    st.tuples(st.just('size'), st.floats(0, 1), st.integers(0, 2 ** 40)),
    st.tuples(st.just('name'), st.floats(0, 1), names),
    st.tuples(st.just('source'), st.floats(0, 1), st.binary(min_size=1, max_size=1)),
)


def at(fraction, length):
    return min(int(fraction * length), max(length - 1, 0))


def damaged_bundle(fmt, world, how):
    files = list(world['files'])
    req = world['requirements']
    kind = how[0]
    kwargs = {}
    sources = [b's'] * len(files)
    if kind == 'filecount':
        kwargs['filecount'] = how[1] if fmt == 'v1' else b'%d' % how[1]
    elif kind == 'bytecount':
        kwargs['bytecount'] = how[1] if fmt == 'v1' else b'%d' % how[1]
    elif kind == 'size':
        sizes = [len(d) for _n, d in files]
        sizes[at(how[1], len(sizes))] = how[2]
        kwargs['sizes'] = sizes
    elif kind == 'name':
        index = at(how[1], len(files))
        files[index] = (how[2], files[index][1])
    elif kind == 'source':
        sources[at(how[1], len(files))] = how[2]
    if fmt == 'v1':
        data = streamcraft.v1(files, req, **kwargs)
    else:
        entries = [(s, n, d) for s, (n, d) in zip(sources, files)]
        data = streamcraft.v2(entries, req, **kwargs)
    if kind == 'truncate':
        data = data[: at(how[1], len(data))]
    elif kind == 'flip':
        data = bytearray(data)
        for fraction, mask in how[1]:
            data[at(fraction, len(data))] ^= mask
        data = bytes(data)
    elif kind == 'insert':
        cut = at(how[1], len(data))
        data = data[:cut] + how[2] + data[cut:]
    return data


# what core prints as the transaction rolls back what the apply registered
ROLLBACK_LINES = ('transaction abort!\n', 'rollback completed\n')


def check_apply(world, fmt, how):
    sandbox = world['root'] / ('case-%s' % fmt)
    shutil.rmtree(sandbox, ignore_errors=True)
    sandbox.mkdir()
    shutil.copytree(world['root'] / 'pristine', sandbox / 'r', symlinks=True)
    bundle = world['root'] / ('bundle-%s.hg' % fmt)
    bundle.write_bytes(damaged_bundle(fmt, world, how))
    before = outside(sandbox)
    result = run_hg(
        world['env'], '-R', str(sandbox / 'r'), '-q',
        'debugapplystreamclonebundle', str(bundle),
    )
    stderr = result.stderr.decode('utf-8', 'replace')
    assert b'Traceback' not in result.stderr, stderr
    assert result.returncode in (0, 255), (result.returncode, stderr)
    assert outside(sandbox) == before, 'written outside store and cache'
    # core's rollback of the files registered with the transaction never
    # fails, whatever the names (it would leave the journal for good)
    assert 'rollback failed' not in stderr, stderr
    if result.returncode == 255:
        message = stderr
        for line in ROLLBACK_LINES:
            if message.startswith(line):
                message = message[len(line) :]
        assert message.startswith('abort: '), stderr
        dothg = sandbox / 'r' / '.hg'
        left = tree(dothg) - TRANSACTION_NOTES
        if left != world['pristine']:
            # A stream carries no checksums: damage inside a revlog's data,
            # or a name swapped for another valid one, is applied like good
            # data and only found when Mercurial reads it back after the
            # transaction (warming caches, say).  Then
            # the whole stream was committed: no journal is left, the
            # transaction wrote its undo files.
            assert (dothg / 'undo.desc').exists(), sorted(
                left ^ world['pristine'])[:10]
            assert not (dothg / 'store' / 'journal').exists()


def fuzz_settings():
    return settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=not RANDOM,
        suppress_health_check=[HealthCheck.function_scoped_fixture,
                               HealthCheck.too_slow],
    )


@fuzz_settings()
@given(how=damage)
def test_damaged_v1_bundles(world, how):
    check_apply(world, 'v1', how)


@fuzz_settings()
@given(how=damage)
def test_damaged_v2_bundles(world, how):
    check_apply(world, 'v2', how)


def test_undamaged_bundles_apply(world):
    # the fuzzer's starting point must be sound, or it proves nothing
    for fmt in ('v1', 'v2'):
        sandbox = world['root'] / ('good-%s' % fmt)
        shutil.rmtree(sandbox, ignore_errors=True)
        sandbox.mkdir()
        shutil.copytree(world['root'] / 'pristine', sandbox / 'r', symlinks=True)
        bundle = world['root'] / ('good-%s.hg' % fmt)
        bundle.write_bytes(damaged_bundle(fmt, world, ('intact',)))
        result = run_hg(world['env'], '-R', str(sandbox / 'r'), '-q',
                        'debugapplystreamclonebundle', str(bundle))
        assert result.returncode == 0, result.stderr
        verify = run_hg(world['env'], '-R', str(sandbox / 'r'), 'verify', '-q')
        assert verify.returncode == 0, verify.stdout + verify.stderr


@pytest.mark.parametrize('closing', ['no', 'yes'])
def test_a_name_sent_twice_ends_as_core_writes_it(world, closing):
    # a stream v2 that sends one file twice.  Mercurial 7.0 on writes the
    # second into the same file from its start (no truncation), earlier
    # releases replace the file: either way the apply must leave what core
    # leaves, also where the lane's threads write small files
    files = list(world['files'])
    name = next(n for n, _d in files if n.startswith(b'data/'))
    # the first small enough for the lane's threads to write, the second
    # too large: written on the reading thread
    files += [(name, b'A' * 300), (name, b'B' * 20000)]
    bundle = world['root'] / 'twice.hg'
    bundle.write_bytes(streamcraft.v2(
        [(b's', n, d) for n, d in files], world['requirements']
    ))
    env = dict(world['env'])
    if SHIM and os.path.isfile(SHIM):
        # slow closes: the threads are busy with earlier files while the
        # reading thread writes the second
        env.update(LD_PRELOAD=SHIM, SLOWCLOSE_US='20000')
    left = {}
    for who, config in (
        ('core', ['--config', 'extensions.backgroundclose=!']),
        ('ext', ['--config', 'worker.backgroundclose=%s' % closing]),
    ):
        sandbox = world['root'] / ('twice-%s-%s' % (who, closing))
        shutil.rmtree(sandbox, ignore_errors=True)
        shutil.copytree(world['root'] / 'pristine', sandbox, symlinks=True)
        # core's debugapplystreamclonebundle takes v1 only
        result = run_hg(env, '-R', str(sandbox), '-q', *config,
                        'unbundle', str(bundle))
        assert result.returncode == 0, result.stderr
        store = sandbox / '.hg' / 'store'
        left[who] = {
            path.relative_to(store): (
                # a set of names, in no order
                sorted(path.read_bytes().splitlines())
                if path.name == 'fncache'
                else path.read_bytes()
            )
            for path in store.rglob('*')
            if path.is_file()
            and not path.name.startswith(('undo', 'journal', 'lock'))
        }
    assert left['ext'] == left['core']
