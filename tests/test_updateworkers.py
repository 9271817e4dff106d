# an update's forked workers given whole directories (updateworkers.py)
import threading

from hypothesis import given, settings, strategies as st

from hgext3rd.backgroundclose import updateworkers


def actions(paths):
    """core's get actions for ``paths``, sorted as core sorts them"""
    return [(p, (b'', False), b'remote created') for p in sorted(paths)]


def dirname(action):
    return action[0].rpartition(b'/')[0]


def slices(paths, nslices):
    return list(updateworkers.by_directory(actions(paths), nslices))


def test_each_worker_gets_whole_directories_of_an_even_share():
    # 8 directories of 60 files, 4 workers: two directories each
    paths = [b'd%d/f%02d' % (d, f) for d in range(8) for f in range(60)]
    runs = slices(paths, 4)
    assert [len(run) for run in runs] == [120, 120, 120, 120]
    assert [sorted({dirname(a) for a in run}) for run in runs] == [
        [b'd0', b'd1'], [b'd2', b'd3'], [b'd4', b'd5'], [b'd6', b'd7'],
    ]


def test_a_cut_moves_to_the_nearest_directory_end_within_a_quarter_share():
    # 100 files, 2 workers: the even cut (50) falls inside d1 (40..69);
    # d0 ends at 40, within a quarter share (25) of it, nearer than 70
    paths = ([b'd0/f%02d' % i for i in range(40)]
             + [b'd1/f%02d' % i for i in range(30)]
             + [b'd2/f%02d' % i for i in range(30)])
    assert [len(run) for run in slices(paths, 2)] == [40, 60]


def test_a_directory_larger_than_the_slack_is_cut_at_the_even_share():
    paths = [b'big/f%03d' % i for i in range(100)]
    assert [len(run) for run in slices(paths, 4)] == [25, 25, 25, 25]


def test_core_s_partition_outside_an_update():
    calls = []

    def core(items, nslices):
        calls.append(nslices)
        return iter([items])

    items = actions([b'a/1', b'b/2'])
    assert list(updateworkers.partition(core, items, 2)) == [items]
    assert calls == [2]


def test_by_directory_while_this_thread_applies_an_update_only():
    def core(items, nslices):
        return (items[i::nslices] for i in range(nslices))

    items = actions([b'a/1', b'a/2', b'b/1', b'b/2'])
    seen = {}
    inside = threading.Event()
    leave = threading.Event()

    def other_thread():
        inside.wait()
        seen['other'] = list(updateworkers.partition(core, items, 2))
        leave.set()

    def apply_updates(repo):
        seen['update'] = list(updateworkers.partition(core, items, 2))
        inside.set()
        leave.wait(10)

    class ui:
        @staticmethod
        def config(section, name, default=None):
            return None

        configbool = config

    class repo:
        pass

    repo.ui = ui
    thread = threading.Thread(target=other_thread)
    thread.start()
    updateworkers.applyupdates(apply_updates, repo)
    thread.join()
    assert [[a[0] for a in run] for run in seen['update']] == [
        [b'a/1', b'a/2'], [b'b/1', b'b/2']]
    assert [[a[0] for a in run] for run in seen['other']] == [
        [b'a/1', b'b/1'], [b'a/2', b'b/2']]
    # and after it, core's again
    assert list(updateworkers.partition(core, items, 2)) == seen['other']


paths = st.lists(
    st.lists(st.sampled_from([b'a', b'b', b'c', b'dd']), min_size=1,
             max_size=4).map(b'/'.join),
    min_size=1, max_size=300, unique=True,
)


@settings(max_examples=300, deadline=None)
@given(paths=paths, nslices=st.integers(1, 16))
def test_every_file_once_in_order_and_shares_near_even(paths, nslices):
    nslices = min(nslices, len(paths))  # as core asks
    items = actions(paths)
    runs = list(updateworkers.by_directory(items, nslices))
    assert len(runs) == nslices
    assert [a for run in runs for a in run] == items
    share = len(items) // nslices
    slack = share // 4
    for run in runs[:-1]:
        assert share - 2 * slack <= len(run) <= share + 1 + 2 * slack
    assert all(runs), 'every worker gets files'


@settings(max_examples=300, deadline=None)
@given(paths=paths, nslices=st.integers(2, 8))
def test_a_directory_is_split_only_where_no_end_is_near(paths, nslices):
    nslices = min(nslices, len(paths))
    items = actions(paths)
    runs = list(updateworkers.by_directory(items, nslices))
    slack = len(items) // nslices // 4
    ends = {i for i in range(1, len(items))
            if dirname(items[i - 1]) != dirname(items[i])}
    cut = 0
    for i, run in enumerate(runs[:-1], 1):
        cut += len(run)
        even = len(items) * i // nslices
        if cut not in ends:
            assert not any(abs(end - even) <= slack and end > cut - len(run)
                           for end in ends), (cut, even)
