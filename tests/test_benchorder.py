# test_benchorder.py - the order bench/run.py runs its configurations in
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'bench'))

import run  # noqa: E402


def test_each_round_starts_one_configuration_further_on():
    configs = ['core', 'ext-adaptive', 'ext-before']
    orders = [run.rotated(configs, rnd) for rnd in range(4)]
    assert orders == [
        ['core', 'ext-adaptive', 'ext-before'],
        ['ext-adaptive', 'ext-before', 'core'],
        ['ext-before', 'core', 'ext-adaptive'],
        ['core', 'ext-adaptive', 'ext-before'],
    ]
    # over as many rounds as configurations, none follows the same one
    # every time, and each runs in every place once
    for place in range(len(configs)):
        assert sorted(order[place] for order in orders[:3]) == sorted(configs)
    assert configs == ['core', 'ext-adaptive', 'ext-before']  # unchanged
    assert run.rotated([], 2) == []
