import pytest

from llmsizer.specs.gpus import _gpu_from_yaml
from llmsizer.specs.names import build_index, close_matches, normalize_name


def test_normalize_drops_case_and_separators():
    assert normalize_name("H100 SXM") == normalize_name("h100_sxm") == normalize_name("h100-sxm")


def test_two_entries_may_not_share_an_alias():
    with pytest.raises(ValueError, match="names both"):
        build_index([("a", ["x-1"]), ("b", ["X 1"])], "thing")


def test_close_matches_return_canonical_keys_once():
    index = build_index([("h100-sxm", ["h100", "h100 sxm5"]), ("h200-sxm", ["h200"])], "GPU")
    assert close_matches("h100sx", index)[0] == "h100-sxm"
    assert len(close_matches("h1", index)) == len(set(close_matches("h1", index)))


def test_gpu_yaml_entries_are_strict():
    with pytest.raises(ValueError, match="unknown keys"):
        _gpu_from_yaml("x", {"display_name": "X", "colour": "green"})
