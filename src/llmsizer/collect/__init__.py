"""`llmsizer collect`: calibrate the performance model on this device with PyTorch alone.

It times the kernels one engine step is made of (GEMMs at the model's linear shapes in
each precision the device has, an MoE model's grouped expert GEMMs, prefill and decode
attention, MLA's included, elementwise work, the all-reduce over the devices present) with
random weights at the model's shapes, within a time budget; fits the efficiency factors of
the roofline and of the collectives to them, and checks the result against a real decode
loop. The output is a calibration file that
`predict`, `plan` and `simulate` take as `--calibration`, carrying the device it was made
on (`--gpu FILE` prices that device, catalogued or not). Needs the `collect` extra
(PyTorch); the CLI imports this package only when the command runs.
"""

from __future__ import annotations

from llmsizer.collect.device import Device, find_device
from llmsizer.collect.run import DEFAULT_BUDGET_S, Collected, collect
from llmsizer.collect.shapes import FULL, QUICK, Grid
from llmsizer.collect.timings import Kind, Timing, parse_timings_csv, timings_csv

__all__ = [
    "DEFAULT_BUDGET_S",
    "FULL",
    "QUICK",
    "Collected",
    "Device",
    "Grid",
    "Kind",
    "Timing",
    "collect",
    "find_device",
    "parse_timings_csv",
    "timings_csv",
]
