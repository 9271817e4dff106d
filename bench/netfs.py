#!/usr/bin/env python3
# netfs.py - clones, updates and pulls on a network file system's round trips
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Time what a user of a network home directory waits for, core against
the extension, side by side, on bench/rttfs.c: each request of the file
system waits one round trip, many may wait at once, and the server costs
little.  The repository written (store and working copy) is on the mount;
the one cloned or pulled from is served over ssh from tmpfs.

Each row gives the requests the command sent, how many were in flight on
average (their summed durations over the wall time) and at most, and the
Little's-law floor: the requests times the round trip over the most in
flight, plus the command's CPU time shared by the cores.  A command that
kept its peak in flight all along, on CPU that overlapped, would take the
floor.  See docs/benchmarks.rst.

    python bench/netfs.py --hg .venv/bin/hg --files 2000 \\
        --roundtrips 200,1000 --rounds 3 --name netfs
"""

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
import fusemount  # noqa: E402
import rttfs  # noqa: E402
import run  # noqa: E402

OPERATIONS = {
    'store-clone': 'hg clone -U --stream over ssh (store only)',
    'clone': 'hg clone --stream over ssh, then its checkout of tip',
    'update': 'hg update from the null revision to tip',
    'pull': 'hg pull over ssh of the revisions a clone lacks',
}
CONFIGS = ('core', 'ext-adaptive')


def add_revisions(path, count, seed):
    """``count`` new revisions on top of ``path``'s tip, each changing
    three of its files, made in this process (a commit each with hg would
    take minutes)"""
    from mercurial import context, hg, ui as uimod

    ui = uimod.ui.load()
    ui.setconfig(b'extensions', b'backgroundclose', b'!')
    repo = hg.repository(ui, os.fsencode(path))
    rng = random.Random(seed)
    with repo.wlock(), repo.lock():
        files = sorted(repo[b'tip'].manifest())
        for i in range(count):
            parent = repo[b'tip']
            changed = rng.sample(files, 3)

            def filectx(repo, memctx, name, parent=parent, i=i):
                old = parent[name]
                return context.memfilectx(
                    repo, memctx, name,
                    old.data() + b'\nchange %d\n' % i,
                    islink=b'l' in old.flags(), isexec=b'x' in old.flags())

            ctx = context.memctx(
                repo, (parent.node(), None), b'change %d' % i, changed,
                filectx, user=b'bench', date=b'0 0')
            repo.commitctx(ctx)


class Rows:
    """the commands measured, each into a fresh name on the mount"""

    def __init__(self, args, work, mount, backing):
        self.args = args
        self.hg = os.path.abspath(args.hg)
        self.mount = mount
        self.backing = backing
        self.work = work
        self.env = common.hg_env(work)
        self.serial = 0

    def hgrun(self, *args):
        subprocess.run([self.hg] + list(args), env=self.env, check=True,
                       stdout=subprocess.DEVNULL)

    def prepare(self, files):
        """the corpus (two revisions), the same with ``--revisions`` more
        to pull, and a store-only clone of the corpus to update or pull
        into (copied to the mount's backing directory before each run,
        past the model)"""
        src = os.path.join(self.work, 'src')
        common.build_corpus(self.hg, src, files, self.args.seed, self.env)
        self.src = src
        self.pullsrc = os.path.join(self.work, 'pullsrc')
        self.hgrun('clone', '-q', '-U', '--pull', src, self.pullsrc)
        add_revisions(self.pullsrc, self.args.revisions, self.args.seed)
        self.base = os.path.join(self.work, 'base')
        self.hgrun('clone', '-q', '-U', '--pull', src, self.base)

    def fresh(self, what):
        """a new name on the mount, and its place in the backing
        directory: a name the kernel has never cached"""
        self.serial += 1
        name = '%s-%d' % (what, self.serial)
        return (os.path.join(self.mount.mountpoint, name),
                os.path.join(self.backing, name))

    def command(self, op, config):
        """the command line of one run, its destination prepared: (cmd,
        the destination's backing path, to remove afterwards)"""
        extra = run.CONFIGS[config]
        ssh = ['--ssh', common.SSH, '--config',
               'ui.remotecmd=%s' % self.hg]
        dest, backing = self.fresh(op)
        if op in ('store-clone', 'clone'):
            checkout = ['-U'] if op == 'store-clone' else []
            return [self.hg, 'clone', '-q', '--stream'] + checkout + ssh + [
                'ssh://bench/%s' % self.src, dest] + extra, backing
        shutil.copytree(self.base, backing, symlinks=True)
        if op == 'update':
            return [self.hg, '-R', dest, 'update', '-q', 'tip'] + extra, \
                backing
        return [self.hg, '-R', dest, 'pull', '-q'] + ssh + [
            'ssh://bench/%s' % self.pullsrc] + extra, backing

    def measure(self, op, config):
        cmd, backing = self.command(op, config)
        before = self.mount.counters()
        server_before = self.mount.server_cpu()
        try:
            seconds, rss, _out, cpu = common.timed(cmd, self.env)
        finally:
            served = rttfs.difference(self.mount.counters(), before)
            server_after = self.mount.server_cpu()
            shutil.rmtree(backing, ignore_errors=True)
        server_cpu = (server_after - server_before
                      if None not in (server_before, server_after) else 0.0)
        return dict(seconds=seconds, maxrss_kb=rss, cpu=cpu,
                    server_cpu=server_cpu, cpu_total=cpu + server_cpu,
                    requests=served['requests'], busy_ns=served['busy_ns'],
                    peak=served['peak'],
                    kinds={k: served[k] for k in rttfs.COUNTERS[4:]})


def floor(row, cores):
    """requests x round trip / most in flight + CPU / cores (seconds):
    the CPU of the command (its ssh server too) and of the model's server,
    which here shares the cores with it"""
    rtt = row['roundtrip_us'] * 1e-6
    cpu = row.get('cpu_total', row['cpu'])
    return row['requests'] * rtt / max(1, row['peak']) + cpu / cores


def summarize(samples, cores):
    groups = {}
    for s in samples:
        groups.setdefault((s['roundtrip_us'], s['what'], s['config']),
                          []).append(s)
    rows = []
    for (rtt, what, config), group in sorted(groups.items()):
        med = {key: statistics.median(g.get(key, 0.0) for g in group)
               for key in ('seconds', 'cpu', 'server_cpu', 'cpu_total',
                           'requests', 'busy_ns', 'peak', 'maxrss_kb')}
        row = dict(roundtrip_us=rtt, what=what, config=config,
                   runs=len(group), **med)
        row['in_flight'] = row['busy_ns'] * 1e-9 / row['seconds']
        row['floor'] = floor(row, cores)
        rows.append(row)
    core = {(r['roundtrip_us'], r['what']): r['seconds'] for r in rows
            if r['config'] == 'core'}
    for r in rows:
        base = core.get((r['roundtrip_us'], r['what']))
        r['ratio'] = r['seconds'] / base if base else None
    return rows


def table(rows):
    head = ('%-6s %-12s %-13s %8s %6s %9s %12s %13s %8s %7s' % (
        'rtt', 'operation', 'configuration', 'seconds', 'ratio',
        'requests', 'in flight', 'CPU / server', 'floor', 'x floor'))
    lines = [head, '-' * len(head)]
    for r in rows:
        lines.append('%-6s %-12s %-13s %7.2fs %5.2fx %9d %5.1f / %4d '
                     '%5.2fs/%5.2fs %7.2fs %6.2fx' % (
                         '%.1fms' % (r['roundtrip_us'] / 1000.0), r['what'],
                         r['config'], r['seconds'], r['ratio'] or 0,
                         r['requests'], r['in_flight'], r['peak'],
                         r['cpu'], r.get('server_cpu', 0.0),
                         r['floor'], r['seconds'] / r['floor']))
    return '\n'.join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hg', required=True)
    parser.add_argument('--files', type=int, default=2000)
    parser.add_argument('--revisions', type=int, default=1000,
                        help='the revisions a pull brings')
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--roundtrips', default='200,1000',
                        help='comma-separated round trips, in microseconds')
    parser.add_argument('--operations', default=','.join(OPERATIONS))
    parser.add_argument('--configs', default=','.join(CONFIGS))
    parser.add_argument('--out', default=os.path.join(common.HERE, 'results'))
    parser.add_argument('--name', default='netfs')
    args = parser.parse_args(argv)
    operations = args.operations.split(',')
    configs = args.configs.split(',')
    for chosen, known, what in ((operations, OPERATIONS, 'operation'),
                                (configs, run.CONFIGS, 'configuration')):
        unknown = [name for name in chosen if name not in known]
        if unknown:
            parser.error('unknown %s: %s' % (what, ', '.join(unknown)))
    why = rttfs.unavailable()
    if why:
        parser.error('no rttfs mount here: %s' % why)
    common.byte_compile(args.hg, common.EXTENSION)
    cores = run.usable_cores()
    started = time.time()
    samples = []
    with common.workdir() as (work, on_tmpfs):
        backing = os.path.join(work, 'served')
        os.makedirs(backing)
        for rtt in (int(us) for us in args.roundtrips.split(',')):
            with rttfs.mounted(backing, os.path.join(work, 'mnt'),
                               os.path.join(work, 'rttfs'), rtt) as mount:
                rows = Rows(args, work, mount, backing)
                if not samples:
                    print('building the %d-file corpus and %d revisions '
                          'to pull...' % (args.files, args.revisions))
                    rows.prepare(args.files)
                    prepared = (rows.src, rows.pullsrc, rows.base)
                else:
                    rows.src, rows.pullsrc, rows.base = prepared
                for rnd in range(args.rounds):
                    for op in operations:
                        for config in run.rotated(configs, rnd):
                            mount.reset_peak()
                            sample = rows.measure(op, config)
                            sample.update(what=op, config=config,
                                          roundtrip_us=rtt, round=rnd)
                            samples.append(sample)
                            print('  %5d us  round %d/%d  %-12s %-13s '
                                  '%7.2f s  %7d requests  peak %d' % (
                                      rtt, rnd + 1, args.rounds, op, config,
                                      sample['seconds'], sample['requests'],
                                      sample['peak']), flush=True)
    rows = summarize(samples, cores)
    report = '\n'.join([
        'hg-backgroundclose on modelled round trips (bench/rttfs.c): '
        '%d files, %d revisions pulled, medians of %d rounds'
        % (args.files, args.revisions, args.rounds),
        "ratio: to core in the same run; floor: requests x round trip / "
        "peak in flight + CPU (the command's, and the model server's, "
        "which shares them) / %d cores" % cores,
        '',
        table(rows),
    ])
    print(report)
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, args.name)
    with open(base + '.json', 'w') as fp:
        json.dump({'machine': {'python': platform.python_version(),
                               'cpus': os.cpu_count(), 'tmpfs': on_tmpfs},
                   'files': args.files, 'revisions': args.revisions,
                   'seconds_total': time.time() - started,
                   'rows': rows, 'samples': samples}, fp, indent=1)
    with open(base + '.txt', 'w') as fp:
        fp.write(report + '\n')
    print('wrote %s.json and %s.txt' % (base, base))
    return 0


if __name__ == '__main__':
    fusemount.exit_with(main)
