"""Decoding a data file pauses the cyclic garbage collector and leaves it as it found it:
on after a load (good or bad file) when it was on, off when it was off."""

from __future__ import annotations

import gc

import pytest

from server.persistence.loader import load_data_file
from server.persistence.rdb_reader import RdbLoadError
from tests.unit.test_rdb_fast_load import _rdb, _sample


@pytest.fixture
def collector_state():
    was = gc.isenabled()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def _files(tmp_path) -> tuple[str, str]:
    good = tmp_path / "dump.rdb"
    data = _rdb(_sample())
    good.write_bytes(data)
    bad = tmp_path / "bad.rdb"
    bad.write_bytes(data[:len(data) // 2])
    return str(good), str(bad)


def test_on_stays_on(tmp_path, collector_state) -> None:
    good, bad = _files(tmp_path)
    gc.enable()
    result = load_data_file(good, 16, None)
    assert result.keys_loaded == 2
    assert gc.isenabled()
    with pytest.raises(RdbLoadError):
        load_data_file(bad, 16, None)
    assert gc.isenabled()


def test_off_stays_off(tmp_path, collector_state) -> None:
    good, _ = _files(tmp_path)
    gc.disable()
    assert load_data_file(good, 16, None).keys_loaded == 2
    assert not gc.isenabled()
