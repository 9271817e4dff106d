#!/usr/bin/env python3
# cramjobs.py - run the cram tests a few at a time
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""cramjobs.py [--jobs N] -- CRAM [OPTION...] PATH...

Run CRAM once per test file (a PATH that is a directory stands for its
*.t files), N at a time, the largest files first.  Most of these tests
spend their time waiting for modelled slow closes and sleeps, so two at a
time on two cores take about half as long.  Each test's output is printed
whole once it ends, with its time and the CPU it used; the exit code is 1
if any failed.
With --failures FILE, the output of the tests that failed is also written to
FILE (emptied first), so that a caller can print it again where a CI log's
tail shows it.

With --times FILE, the tests start in the order of the times FILE gives
them (a line a test: its name and seconds), the longest first: a test that
mostly sleeps is small, and started last it would run on alone at the end.
A test FILE does not list starts first.  --record FILE writes the times of
this run there, for a later --times.
"""

import argparse
import concurrent.futures
import os
import subprocess
import sys
import time


def read_times(path):
    """{test name: seconds} from ``path``, empty if there is none"""
    times = {}
    try:
        with open(path, encoding='utf-8') as fp:
            for line in fp:
                fields = line.split()
                if len(fields) == 2 and not line.startswith('#'):
                    times[fields[0]] = float(fields[1])
    except FileNotFoundError:
        pass
    return times


def test_files(paths):
    found = []
    for path in paths:
        if os.path.isdir(path):
            found.extend(
                os.path.join(path, name)
                for name in sorted(os.listdir(path))
                if name.endswith('.t')
            )
        else:
            found.append(path)
    # the largest first, so that the last to start are short
    return sorted(found, key=lambda p: -os.path.getsize(p))


def run(command, path):
    """(path, exit code, output, seconds, CPU seconds) of one test: the
    CPU of the test and of every process it waited for, which on a loaded
    CI machine says more than the time"""
    start = time.monotonic()
    with subprocess.Popen(
        command + [path],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    ) as proc:
        output = proc.stdout.read()
        # wait4 rather than wait: the child's resource use, its own
        _pid, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return path, proc.returncode, output, time.monotonic() - start, cpu


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--jobs', type=int, default=2)
    parser.add_argument('--failures', metavar='FILE')
    parser.add_argument('--times', metavar='FILE')
    parser.add_argument('--record', metavar='FILE')
    parser.add_argument('command', nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command
    if command and command[0] == '--':
        command = command[1:]
    options = [a for a in command[1:] if a.startswith('-')]
    paths = [a for a in command[1:] if not a.startswith('-')]
    command = command[:1] + options
    tests = test_files(paths)
    if args.times:
        known = read_times(args.times)
        # stable: the largest first among those FILE does not list
        tests.sort(key=lambda p: -known.get(os.path.basename(p), 1e9))
    failures = None
    if args.failures:
        failures = open(args.failures, 'w', encoding='utf-8')
    failed = []
    times = []
    total_cpu = 0.0
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(run, command, path) for path in tests]
        for future in concurrent.futures.as_completed(futures):
            path, code, output, seconds, cpu = future.result()
            total_cpu += cpu
            text = output.decode('utf-8', 'replace')
            verdict = 'failed' if code else 'ok'
            if code:
                failed.append(path)
                sys.stdout.write(text)
                if failures:
                    failures.write(text)
                    failures.flush()
            elif ' 1 skipped' in text:
                verdict = 'skipped'
            print('%-36s %-8s %6.1f s %6.1f s CPU' % (
                path, verdict, seconds, cpu), flush=True)
            times.append((seconds, cpu, path))
    # what to look at first when the suite grows past its budget
    print('the %d longest:' % min(10, len(times)))
    for seconds, cpu, path in sorted(times, reverse=True)[:10]:
        print('  %-34s %6.1f s %6.1f s CPU' % (path, seconds, cpu))
    print('%d tests, %d failed, %.0f s, %.0f s CPU' % (
        len(tests), len(failed), time.monotonic() - started, total_cpu))
    if failures:
        failures.close()
    if args.record:
        with open(args.record, 'w', encoding='utf-8') as fp:
            fp.write('# wall seconds of each cram test, longest first '
                     '(tests/cramjobs.py --record)\n')
            for seconds, _cpu, path in sorted(times, reverse=True):
                fp.write('%s %.1f\n' % (os.path.basename(path), seconds))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
