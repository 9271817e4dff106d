# test_handover.py - unit tests of a file's hand-over to the closer
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""HandedOverFile over a file object (the Python threads' path): who owns
it when an interrupt lands as it is handed over."""

import os
import sys
import threading

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))

from hgext3rd.backgroundclose import (  # noqa: E402
    closer as closermod,
    handover,
)


class File:
    """a file object that records which threads closed it"""

    def __init__(self):
        self.closedby = []
        self.closed = False

    def write(self, data):
        return len(data)

    def flush(self):
        pass

    def close(self):
        self.closedby.append(threading.current_thread().name)
        self.closed = True


def python_pool():
    return closermod.Closer(
        policy=closermod.BACKGROUND, native=False, fdroom=None, threads=1,
        owned=set(),
    )


def test_an_interrupt_as_the_closer_begins_leaves_no_file_to_the_collector(
    monkeypatch,
):
    # the signal lands at close()'s first bytecode: the closer never took
    # the file, and nothing else would close it but the garbage collector
    closer = python_pool()
    fp = File()
    proxy = handover.HandedOverFile(fp, closer, b'data/a.i')

    def interrupted(target, name=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(closer, 'close', interrupted)
    with pytest.raises(KeyboardInterrupt):
        proxy.close()
    assert fp.closedby == [threading.current_thread().name]
    monkeypatch.undo()
    closer.finish()


def test_an_interrupt_once_the_closer_holds_the_file_leaves_it_there(
    monkeypatch,
):
    # the signal lands after the hand-over: the file is the closer's, and
    # this thread must not close it too (with the thread's close hung on a
    # dead mount, it would wait on it)
    closer = python_pool()
    fp = File()
    proxy = handover.HandedOverFile(fp, closer, b'data/a.i')
    taken = threading.Event()
    release = threading.Event()
    original = closer._closefn

    def held_close(target):
        taken.set()
        release.wait(10)
        original(target)

    closer._closefn = held_close
    submit = closer.close

    def interrupted_after(target, name=None):
        submit(target, name)
        assert closer.holds(target)  # queued
        with closer._lock:
            closer._work.notify_all()  # one file: no batch wakes a thread
        assert taken.wait(10)
        assert closer.holds(target)  # being closed
        raise KeyboardInterrupt

    monkeypatch.setattr(closer, 'close', interrupted_after)
    with pytest.raises(KeyboardInterrupt):
        proxy.close()
    assert fp.closedby == []
    release.set()
    monkeypatch.undo()
    closer.finish()
    assert fp.closedby == ['backgroundclose-0']
    assert not closer.holds(fp)


def test_a_file_an_interrupt_kept_from_its_close_is_released():
    # the signal lands between core's open and its close (or its with
    # block): the session's release() closes the file object, where the
    # garbage collector would only once nothing holds it any more (a
    # traceback can, for long); what was handed over is the closer's
    closer = python_pool()
    files = handover.OwnedFiles(closer)
    kept, handed, failed = File(), File(), File()
    proxies = [
        handover.HandedOverFile(fp, closer, b'data/%d.i' % i, files=files)
        for i, fp in enumerate((kept, handed, failed))
    ]
    proxies[1].close()
    with pytest.raises(ValueError):
        with proxies[2]:
            raise ValueError('core failed while writing it')
    closer.finish(failing=True)
    files.release()
    assert kept.closedby == [threading.current_thread().name]
    assert handed.closedby == ['backgroundclose-0']
    assert failed.closedby == [threading.current_thread().name]
    files.release()  # each once
    assert len(kept.closedby + handed.closedby + failed.closedby) == 3
