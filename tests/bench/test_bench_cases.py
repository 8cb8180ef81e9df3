"""Every benchmark case is well formed, and its sparsegrad and NumPy setups
run (at the quick size): the guard that keeps the suite from rotting."""

import pytest

from sparsegrad.bench import harness
from sparsegrad.bench.case import LIBRARIES

SUITE = harness.load_suite()
IDS = [case.name for _, case in SUITE.entries]


def test_cases_are_well_formed():
    assert len(IDS) == len(set(IDS)) >= 20
    for path, case in SUITE.entries:
        area = path.rsplit(".", 1)[-1]
        assert case.name.startswith(f"{area}/"), (path, case.name)
        assert case.description
        assert set(case.setups) <= set(LIBRARIES), case.name
        if case.floor_bytes is not None:
            for quick in (True, False):
                n_bytes = case.floor_bytes(quick)
                assert isinstance(n_bytes, int) and n_bytes > 0, case.name


PAIRS = [(case, library) for _, case in SUITE.entries
         for library in ("sparsegrad", "numpy") if library in case.setups]


@pytest.mark.parametrize("case, library", PAIRS,
                         ids=[f"{case.name}-{library}" for case, library in PAIRS])
def test_quick_setup_runs(case, library):
    run = case.setups[library](True)
    run()
    run()                       # the timed callable is called repeatedly
