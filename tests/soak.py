# soak.py - many applies in a row, random latencies and injected failures
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""usage: soak.py --hg HG --shim SLOWCLOSE_SO [--runs 50] [--seed N]
                 [--files 2000] [--peak-rss]

Builds one repository of two revisions, then RUNS times, into fresh
destinations, applies its stream (v1 or v2 bundle, or a v2 clone over ssh)
or its changegroups (the whole bundle, or the second revision on top of the
first), chosen at random, each time with a random close latency (constant
or heavy-tailed), a random closing policy, and in about a third of the runs
a close failure injected at a random file (EIO, ENOSPC or EDQUOT).  Checks
after every run:

- exit 0: ``hg verify`` passes and the log shows both revisions;
- exit 255: a one-line ``abort: error closing``/``writing`` message, no
  traceback; a stream apply leaves the destination as ``hg init`` left it
  (a clone: gone); a changegroup's transaction rolls back to the revisions
  the repository had, which ``hg verify`` accepts.

Exits 1 on the first run that breaks a rule, printing how to repeat it.
With --peak-rss, also applies synthetic 20,000- and 200,000-file v2 bundles
with core and with the extension and reports peak RSS (memory must not grow
with the file count more with the extension than without).
"""

import argparse
import errno
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def tree(top):
    found = set()
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            found.add(os.path.relpath(os.path.join(dirpath, name), top))
    return found - {'journal.desc', 'undo.desc'}


def run(cmd, env, **kwargs):
    return subprocess.run(cmd, env=env, capture_output=True, **kwargs)


def peak_rss(cmd, env):
    """run cmd; return (exit status, peak RSS in MB of it and its children)"""
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.stderr.close()
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024.0


def soak(args, work, env):
    hg = args.hg
    subprocess.run(
        [sys.executable, os.path.join(HERE, '..', 'bench', 'corpus.py'),
         '--hg', hg, '--files', str(args.files), '--seed', '7',
         os.path.join(work, 'src')],
        env=env, check=True, capture_output=True,
    )
    src = os.path.join(work, 'src')
    bundles = {
        'v1': os.path.join(work, 'v1.hg'),
        'v2': os.path.join(work, 'v2.hg'),
    }
    run([hg, '-R', src, 'debugcreatestreamclonebundle', bundles['v1']], env)
    run([hg, '-R', src, 'bundle', '-q', '-a', '--type',
         'none-v2;stream=v2', bundles['v2']], env)
    changegroups = {
        'all': os.path.join(work, 'cg-all.hg'),
        'first': os.path.join(work, 'cg-first.hg'),
        'second': os.path.join(work, 'cg-second.hg'),
    }
    run([hg, '-R', src, 'bundle', '-q', '-a', '--type', 'zstd-v2',
         changegroups['all']], env)
    run([hg, '-R', src, 'bundle', '-q', '--base', 'null', '-r', '0',
         changegroups['first']], env)
    run([hg, '-R', src, 'bundle', '-q', '--base', '0', '-r', '1',
         changegroups['second']], env)
    run([hg, 'init', os.path.join(work, 'pristine')], env)
    pristine = tree(os.path.join(work, 'pristine', '.hg'))
    rng = random.Random(args.seed)
    counts = {'ok': 0, 'failed': 0}
    for index in range(args.runs):
        how = rng.choice(['v1', 'v2', 'clone', 'cg', 'cg-append'])
        latency = rng.choice(['0', '50', '300', '1000', 'tail'])
        policy = rng.choice(['adaptive', 'yes', 'no'])
        fail = rng.random() < 1 / 3
        runenv = dict(env, LD_PRELOAD=args.shim, SLOWCLOSE_SEED=str(index))
        if latency == 'tail':
            runenv['SLOWCLOSE_DIST'] = 'tail'
        else:
            runenv['SLOWCLOSE_US'] = latency
        failure = ''
        if fail:
            runenv['SLOWCLOSE_FAIL_NTH'] = str(rng.randint(1, args.files))
            runenv['SLOWCLOSE_ERRNO'] = rng.choice(['EIO', 'ENOSPC', 'EDQUOT'])
            failure = ' fail close #%s with %s' % (
                runenv['SLOWCLOSE_FAIL_NTH'], runenv['SLOWCLOSE_ERRNO'])
        config = ['--config', 'worker.backgroundcloseminfilecount=0']
        if policy != 'adaptive':
            config += ['--config', 'worker.backgroundclose=%s' % policy]
        dest = os.path.join(work, 'dest-%d' % index)
        before = -1  # the tip a failed changegroup must leave
        if how == 'clone':
            cmd = [hg, 'clone', '-q', '-U', '--stream',
                   'ssh://user@dummy/' + src, dest]
        elif how in ('cg', 'cg-append'):
            run([hg, 'init', dest], env)
            bundle = changegroups['all']
            if how == 'cg-append':
                run([hg, '-R', dest, 'unbundle', '-q', changegroups['first']],
                    env)
                bundle = changegroups['second']
                before = 0
            cmd = [hg, '-R', dest, '-q', 'unbundle', bundle]
        else:
            run([hg, 'init', dest], env)
            cmd = [hg, '-R', dest, '-q', 'debugapplystreamclonebundle',
                   bundles[how]]
        label = 'run %d: %s, latency %s, backgroundclose=%s%s' % (
            index, how, latency, policy, failure)
        result = run(cmd + config, runenv, timeout=600)
        stderr = result.stderr.decode('utf-8', 'replace')
        problems = []
        if b'Traceback' in result.stderr:
            problems.append('traceback')
        if result.returncode == 0:
            counts['ok'] += 1
            verify = run([hg, '-R', dest, 'verify', '-q'], env)
            if verify.returncode != 0:
                problems.append('verify failed: %s' % verify.stdout[-500:])
            tip = run([hg, '-R', dest, 'log', '-r', 'tip', '-T', '{rev}'], env)
            if tip.stdout != b'1':
                problems.append('tip %s, not 1' % tip.stdout)
        elif result.returncode == 255:
            counts['failed'] += 1
            lines = stderr.splitlines()
            if how in ('cg', 'cg-append'):
                # core reports its rollback before the abort line
                if lines[:2] == ['transaction abort!', 'rollback completed']:
                    lines = lines[2:]
            expected = lines[:1] and lines[0].startswith('abort: error ')
            if how in ('cg', 'cg-append') and fail:
                # a revlog left to core while closes are cheap (no wrapper
                # on its open or close) fails with core's message, which
                # names no file, as it does without the extension
                strerror = os.strerror(
                    getattr(errno, runenv['SLOWCLOSE_ERRNO'])
                )
                expected = expected or lines == ['abort: %s' % strerror]
            if len(lines) != 1 or not expected:
                problems.append('unexpected message')
            if how == 'clone':
                if os.path.exists(dest):
                    problems.append('failed clone left its destination')
            elif how in ('cg', 'cg-append'):
                # the transaction rolled back: what core leaves (empty
                # directories, truncated files) must verify
                verify = run([hg, '-R', dest, 'verify', '-q'], env)
                tip = run([hg, '-R', dest, 'log', '-r', 'tip', '-T', '{rev}'],
                          env)
                if verify.returncode != 0:
                    problems.append('verify failed after the rollback: %s'
                                    % verify.stdout[-500:])
                if tip.stdout != b'%d' % before:
                    problems.append('tip %s after the rollback, not %d'
                                    % (tip.stdout, before))
            elif tree(os.path.join(dest, '.hg')) != pristine:
                problems.append('failed apply left files behind')
        else:
            problems.append('exit %d' % result.returncode)
        print('%s: exit %d%s' % (label, result.returncode,
                                 ' -- ' + '; '.join(problems) if problems
                                 else ''))
        sys.stdout.flush()
        if problems:
            print(stderr[-2000:])
            print('repeat with: --seed %d --runs %d --files %d'
                  % (args.seed, index + 1, args.files))
            return 1
        shutil.rmtree(dest, ignore_errors=True)
    print('soak: %d runs, %d succeeded and verified, %d failed cleanly'
          % (args.runs, counts['ok'], counts['failed']))
    return 0


def memory(args, work, env):
    real = os.path.join(work, 'real.hg')
    run([args.hg, '-R', os.path.join(work, 'src'),
         'debugcreatestreamclonebundle', real], env)
    rows = []
    for count in (20000, 200000):
        bundle = os.path.join(work, 'many-%d.hg' % count)
        subprocess.run(
            [sys.executable, os.path.join(HERE, 'streamcraft.py'), 'many',
             str(count), 'v2', real, bundle], check=True)
        for label, config in (
            ('core', ['--config', 'extensions.backgroundclose=!']),
            ('extension', ['--config', 'worker.backgroundclose=yes',
                           '--config', 'worker.backgroundcloseminfilecount=0']),
        ):
            dest = os.path.join(work, 'mem-%s-%d' % (label, count))
            run([args.hg, 'init', dest], env)
            runenv = dict(env, LD_PRELOAD=args.shim, SLOWCLOSE_US='100')
            status, rss = peak_rss(
                [args.hg, '-R', dest, '-q', 'unbundle', bundle] + config,
                runenv)
            rows.append((label, count, status, rss))
            print('%-9s %7d files: exit %d, peak RSS %.1f MB'
                  % (label, count, status, rss))
            sys.stdout.flush()
            shutil.rmtree(dest, ignore_errors=True)
        os.unlink(bundle)
    rss = {(label, count): value for label, count, _s, value in rows}
    growth = {
        label: rss[(label, 200000)] - rss[(label, 20000)]
        for label in ('core', 'extension')
    }
    print('growth 20k -> 200k files: core %.1f MB, extension %.1f MB'
          % (growth['core'], growth['extension']))
    if any(status != 0 for _l, _c, status, _r in rows):
        print('an apply failed')
        return 1
    # the closer keeps nothing per file: what grows is core's (the fncache)
    if growth['extension'] > growth['core'] + 16:
        print('memory grows with the file count faster than core')
        return 1
    return 0


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hg', required=True)
    parser.add_argument('--shim', required=True)
    parser.add_argument('--runs', type=int, default=50)
    parser.add_argument('--seed', type=int, default=None)
    parser.add_argument('--files', type=int, default=2000)
    parser.add_argument('--peak-rss', action='store_true')
    args = parser.parse_args(argv)
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(2 ** 32)
    args.hg = os.path.abspath(args.hg)
    args.shim = os.path.abspath(args.shim)
    print('soak: seed %d, %d runs of %d files' % (args.seed, args.runs,
                                                  args.files))
    work = tempfile.mkdtemp(prefix='hg-backgroundclose-soak-')
    hgrc = os.path.join(work, 'hgrc')
    with open(hgrc, 'w') as fp:
        fp.write('[ui]\nusername = test <test@example.invalid>\n'
                 'ssh = "%s"\nremotecmd = %s\n'
                 '[extensions]\nbackgroundclose =\n'
                 % (os.path.join(HERE, 'dummyssh'), args.hg))
    env = dict(os.environ, HGRCPATH=hgrc, HGPLAIN='1', LC_ALL='C')
    env.pop('LD_PRELOAD', None)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    try:
        status = soak(args, work, env)
        if status == 0 and args.peak_rss:
            status = memory(args, work, env)
        return status
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
