"""The shared number formatting of the Lab 01 commands (formatting.py)."""

import json
import math

import numpy as np
import pytest

from lab01_cluster_sim.formatting import (
    clean_number, clean_record, csv_cell, duration_unit, format_count, format_duration, format_number,
    format_numbers, format_percent, format_seconds, render_table,
)


def test_percent_one_place_with_unit():
    assert format_percent(87.4736) == "87.5 %"
    assert format_percent(87.4736, unit=False) == "87.5"
    assert format_percent(0.8747, fraction=True) == "87.5 %"      # 100 x 0.8747 = 87.47
    assert format_percent(100) == "100.0 %"
    assert format_percent(-0.04) == "0.0 %"                       # not "-0.0 %"
    assert format_percent(float("nan")) == "n/a"
    assert format_percent(None, missing="-") == "-"
    assert format_percent(12.346, places=2) == "12.35 %"


def test_duration_picks_s_min_h():
    assert format_duration(42) == "42.0 s"
    assert format_duration(59.9) == "59.9 s"
    assert format_duration(60) == "1.0 min"
    assert format_duration(2412) == "40.2 min"                    # 2412 / 60 = 40.2
    assert format_duration(3600) == "1.0 h"
    assert format_duration(1_558_380) == "432.9 h"                # 1558380 / 3600 = 432.883..
    assert format_duration(12_873_600) == "3,576.0 h"             # 149 days = 3576 h
    assert format_duration(float("inf")) == "inf"
    assert format_duration(float("nan")) == "n/a"
    assert "e+" not in format_duration(1e9)


def test_duration_column_uses_one_unit():
    # largest value 5400 s >= 3600 -> hours for every row: 5400/3600 = 1.5, 90/3600 = 0.025 -> 0.0
    unit, length = duration_unit([90, 5400, None, float("nan"), float("inf")])
    assert (unit, length) == ("h", 3600.0)
    assert format_duration(90, unit=unit) == "0.0 h"
    assert format_duration(5400, unit=unit, show_unit=False) == "1.5"
    assert duration_unit([30, 45]) == ("s", 1.0)
    assert duration_unit([30, 600]) == ("min", 60.0)
    assert duration_unit([]) == ("s", 1.0)
    with pytest.raises(ValueError, match="unit"):
        format_duration(1, unit="days")


def test_counts_are_integers():
    assert format_count(117.0) == "117"
    assert format_count(np.int64(8152)) == "8,152"
    assert format_count(None) == "n/a"
    with pytest.raises(ValueError, match="whole number"):
        format_count(2.5)
    assert format_number(117.0) == "117"
    assert format_number(104.25) == "104.2"                       # round half to even on the binary value
    assert format_number(30.4) == "30.4"
    assert format_number(1234567) == "1,234,567"
    assert format_number(float("nan"), missing="-") == "-"


def test_a_column_of_numbers_has_one_style():
    assert format_numbers([117.0, 99, 104.0]) == ["117", "99", "104"]
    assert format_numbers([16.0, 15.94, None]) == ["16.0", "15.9", "n/a"]   # decimal points line up
    assert format_numbers([1234.5, float("nan")], missing="-") == ["1,234.5", "-"]


def test_clean_number_has_no_float_noise():
    assert clean_number(0.1 + 0.2) == 0.3 and str(clean_number(0.1 + 0.2)) == "0.3"
    assert clean_number(87.47361111) == 87.47361111                # 10 digits: nothing to clean
    assert clean_number(87.47361111, places=4) == 87.4736
    assert clean_number(2320.7670000000003) == 2320.767
    assert clean_number(np.float64(2.5)) == 2.5 and type(clean_number(np.float64(2.5))) is float
    assert clean_number(np.int64(7)) == 7 and type(clean_number(np.int64(7))) is int
    assert clean_number(float("nan")) is None and clean_number(float("inf")) is None
    assert str(clean_number(-1e-9, places=4)) == "0.0" and str(clean_number(-0.0)) == "0.0"
    assert clean_number(True) is True and clean_number("fifo") == "fifo"
    assert csv_cell(None) == "" and csv_cell(math.nan) == "" and csv_cell(0.1 + 0.2) == "0.3" and csv_cell(117) == "117"


def test_clean_record_goes_through_nested_values_and_is_strict_json():
    rec = {"wait_s": {"mean": 2320.7670000000003, "p99": math.nan}, "seeds": (42, 43), "ratio": [1 / 3]}
    out = clean_record(rec)
    # 1/3 to 12 significant digits
    assert out == {"wait_s": {"mean": 2320.767, "p99": None}, "seeds": [42, 43], "ratio": [0.333333333333]}
    assert json.dumps(clean_record(rec, places=4), allow_nan=False) == \
        '{"wait_s": {"mean": 2320.767, "p99": null}, "seeds": [42, 43], "ratio": [0.3333]}'


def test_render_table_aligns_names_left_and_numbers_right():
    text = render_table(["policy", "failed"], [["best-fit", "9"], ["fgd", "117"]])
    assert text.splitlines() == [
        "policy    failed",
        "--------  ------",
        "best-fit       9",
        "fgd          117",
    ]
    with pytest.raises(ValueError, match="cells"):
        render_table(["a", "b"], [["1"]])


def test_time_stamps_are_plain_digits():
    assert format_seconds(1558380.0) == "1558380"
