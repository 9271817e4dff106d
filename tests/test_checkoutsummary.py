"""The checkout's figures, gathered from the workers of one update
(checkout/summary.py)"""

import os

import pytest

from hgext3rd.backgroundclose import engine
from hgext3rd.backgroundclose.checkout import summary as checkoutsummary


def figures(files, seconds, threads=0, written=0, nbytes=0):
    ops = {
        name: engine.OpStat()
        for name in checkoutsummary.OPERATIONS + ('mkdir',)
    }
    for _ in range(written):
        ops['close-written'].add(0.001)
    ops['write'].add(seconds / 2, nbytes)
    return checkoutsummary.Figures(
        ops, files=files, seconds=seconds, threads=threads,
        peakheld=nbytes, dirs_created=1, dirs_existing=2,
    )


def test_figures_travel_whole():
    sent = figures(5, 0.25, threads=2, written=3, nbytes=100)
    got = checkoutsummary.Figures.decode(sent.encode())
    for name in checkoutsummary.Figures.FIELDS:
        assert getattr(got, name) == getattr(sent, name)
    for name, stat in sent.ops.items():
        assert (got.ops[name].count, got.ops[name].seconds,
                got.ops[name].max, got.ops[name].bytes) == (
            stat.count, stat.seconds, stat.max, stat.bytes)


def test_workers_side_by_side_add_up_and_take_the_longest_time():
    merged = checkoutsummary.Figures.merged([
        figures(5, 0.25, threads=2, written=3, nbytes=100),
        figures(7, 0.5, threads=4, written=7, nbytes=50),
        checkoutsummary.Figures.declined_by(9),
    ])
    assert merged.workers == 3
    assert merged.files == 12
    assert merged.declined == 9
    assert merged.threads == 6
    assert merged.seconds == 0.5
    assert merged.peakheld == 150  # held side by side: at most the sum
    assert merged.ops['close-written'].count == 10
    assert merged.bytes == 150
    assert merged.dirs_existing == 4


def fork(send):
    pid = os.fork()
    if pid == 0:
        try:
            send()
        finally:
            os._exit(0)
    return pid


@pytest.mark.skipif(not hasattr(os, 'fork'), reason='no fork here')
def test_forked_workers_send_through_the_file_however_many():
    gathering = checkoutsummary.Gathering()
    try:
        gathering.send(figures(1, 0.1))  # this process's own
        # more than a pipe's 64 KiB would take before it is read
        pids = [fork(lambda n=n: gathering.send(figures(n, 0.1)))
                for n in range(2, 202)]
        for pid in pids:
            os.waitpid(pid, 0)
        got = sorted(f.files for f in gathering.collect())
    finally:
        gathering.close()
    assert got == list(range(1, 202))


@pytest.mark.skipif(not hasattr(os, 'fork'), reason='no fork here')
def test_a_worker_killed_as_it_wrote_is_left_out():
    gathering = checkoutsummary.Gathering()
    try:
        os.waitpid(fork(lambda: gathering.send(figures(3, 0.1))), 0)
        raw = figures(4, 0.1).encode()
        # what a worker killed in the middle of its write leaves
        os.write(gathering._fd, checkoutsummary._LENGTH.pack(len(raw))
                 + raw[:10])
        got = [f.files for f in gathering.collect()]
    finally:
        gathering.close()
    assert got == [3]
