"""The checkout's figures, gathered from the processes of one update
(checkoutsummary.py)"""

import os
import time

import pytest

from hgext3rd.backgroundclose import checkoutsummary, engine


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


def test_processes_side_by_side_add_up_and_take_the_longest_time():
    merged = checkoutsummary.Figures.merged([
        figures(5, 0.25, threads=2, written=3, nbytes=100),
        figures(7, 0.5, threads=4, written=7, nbytes=50),
    ])
    assert merged.processes == 2
    assert merged.files == 12
    assert merged.threads == 6
    assert merged.seconds == 0.5
    assert merged.peakheld == 100
    assert merged.ops['close-written'].count == 10
    assert merged.bytes == 150
    assert merged.dirs_existing == 4


@pytest.mark.skipif(not hasattr(os, 'fork'), reason='no fork here')
def test_forked_processes_send_through_the_pipe():
    gathering = checkoutsummary.Gathering()
    try:
        gathering.send(figures(1, 0.1))  # this process's own
        pids = []
        for files in (2, 3):
            pid = os.fork()
            if pid == 0:
                try:
                    gathering.send(figures(files, 0.1))
                finally:
                    os._exit(0)
            pids.append(pid)
        for pid in pids:
            os.waitpid(pid, 0)
        got = sorted(f.files for f in gathering.collect())
    finally:
        gathering.close()
    assert got == [1, 2, 3]


@pytest.mark.skipif(not hasattr(os, 'fork'), reason='no fork here')
def test_collecting_never_waits_on_a_process_that_holds_the_pipe():
    """a process forked for something else keeps the writing end open:
    what was sent is read all the same, without waiting for it"""
    gathering = checkoutsummary.Gathering()
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            gathering.send(figures(4, 0.1))
            os.close(rfd)
            os.write(wfd, b'x')
            time.sleep(30)  # holds the pipe's writing end open
        finally:
            os._exit(0)
    try:
        os.close(wfd)
        assert os.read(rfd, 1) == b'x'
        start = time.monotonic()
        got = [f.files for f in gathering.collect()]
        assert time.monotonic() - start < 10
        assert got == [4]
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(rfd)
        gathering.close()


def test_the_pipe_is_not_inherited_by_programs_run():
    gathering = checkoutsummary.Gathering()
    try:
        fds = [fd for fd in (gathering._rfd, gathering._wfd)
               if fd is not None]
        assert all(not os.get_inheritable(fd) for fd in fds)
    finally:
        gathering.close()
