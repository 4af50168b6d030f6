import pytest

from llmsizer.specs import UnknownNameError, get_system, system_catalog


def test_dgx_h100_is_eight_h100_in_one_nvlink_domain():
    dgx = get_system("DGX H100")
    assert dgx.gpu().key == "h100-sxm"
    assert dgx.num_gpus == 8
    assert dgx.nvlink_domain_size == 8
    assert get_system("hgx_h100") is dgx


def test_course_instances_per_server():
    dgx = get_system("dgx-h100")
    assert [dgx.num_instances(tp) for tp in (1, 2, 4, 8)] == [8, 4, 2, 1]


def test_pcie_server_has_no_nvlink_domain():
    server = get_system("8x L40S")
    assert server.nvlink_domain_size == 1
    assert server.gpu().scale_up_bytes_per_s is None


def test_catalog_covers_required_systems():
    assert {"dgx-a100", "dgx-h100", "dgx-h200", "dgx-b200", "gb200-nvl72", "pcie-l40s-8"} <= set(
        system_catalog()
    )


def test_unknown_system_suggests():
    with pytest.raises(UnknownNameError, match="dgx-h100"):
        get_system("dgx h10")
