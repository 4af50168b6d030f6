import pytest

from llmsizer.specs import Precision
from llmsizer.specs.dtypes import quant_mode_precision


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("FP8", Precision.FP8),
        ("fp8_e4m3", Precision.FP8),
        ("bfloat16", Precision.BF16),
        ("BF16", Precision.BF16),
        ("float16", Precision.FP16),
        ("nvfp4", Precision.FP4),
        ("fp4", Precision.FP4),
        ("NV-FP4", Precision.FP4),
        ("W4A16", Precision.INT4),
        ("awq", Precision.INT4),
        ("int8-sq", Precision.INT8),
        ("MXFP4", Precision.MXFP4),
        (Precision.INT8, Precision.INT8),
    ],
)
def test_parse_is_lenient(text, expected):
    assert Precision.parse(text) is expected


def test_unknown_precision_lists_the_allowed_values():
    with pytest.raises(
        ValueError, match="allowed: bf16, fp16, fp8, fp8_block, int8, int4, int4_g32, fp4, mxfp4"
    ):
        Precision.parse("fp12")


def test_bytes_per_element_include_block_scales():
    assert Precision.BF16.bytes_per_element == 2.0
    assert Precision.FP8.bytes_per_element == 1.0
    # NVFP4: 4-bit values plus one FP8 scale per 16 values = 4.5 bits
    assert Precision.FP4.bits_per_element == pytest.approx(4.5)
    # MXFP4: one 8-bit scale per 32 values
    assert Precision.MXFP4.bits_per_element == pytest.approx(4.25)
    # AWQ int4, group 128: FP16 scale and 4-bit zero per group
    assert Precision.INT4.bits_per_element == pytest.approx(4 + 20 / 128)


def test_int4_is_weight_only_and_computes_in_bf16():
    assert Precision.INT4.is_weight_only
    assert Precision.INT4.tensor_core_precision is Precision.BF16
    assert Precision.MXFP4.tensor_core_precision is Precision.FP4
    assert not Precision.FP8.is_weight_only


def test_block_scaled_formats_count_their_scales():
    # FP8 with one FP32 scale per 128 x 128 block (DeepSeek-V3 report, sec. 3.3.2)
    assert Precision.FP8_BLOCK.bits_per_element == pytest.approx(8 + 32 / 16384)
    assert Precision.FP8_BLOCK.tensor_core_precision is Precision.FP8
    # Kimi K2.5's experts: INT4, one BF16 scale per 32 values, dequantised to BF16 math
    assert Precision.INT4_G32.bits_per_element == pytest.approx(4.5)
    assert Precision.INT4_G32.is_weight_only
    assert Precision.INT4_G32.tensor_core_precision is Precision.BF16


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("fp8", Precision.FP8),
        ("fp8_block", Precision.FP8_BLOCK),
        ("nvfp4", Precision.FP4),
        ("int4_wo", Precision.INT4),
        ("bfloat16", Precision.BF16),
        ("", None),
    ],
)
def test_aiconfigurator_quant_modes(mode, expected):
    assert quant_mode_precision(mode) is expected


def test_unknown_quant_mode_is_an_error_not_a_guess():
    with pytest.raises(ValueError, match="unknown quantization mode 'w4afp8'"):
        quant_mode_precision("w4afp8")
