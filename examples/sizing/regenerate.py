"""Regenerate the sizing examples' outputs: `<name>.txt` (the terminal summary) and
`<name>.json` (the plan as plain data) are committed; `html/<name>.html` (the report, with
plotly.js inlined, about 5 MB each) is written but not committed.

    .venv/bin/python examples/sizing/regenerate.py            # every example
    .venv/bin/python examples/sizing/regenerate.py llama3_8b_h100

Paths inside the use cases are relative to this folder, so the script runs from it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from llmsizer.report.plan_html import plan_html
from llmsizer.report.plan_text import plan_text
from llmsizer.sizing.inputs import usecase_from_mapping
from llmsizer.sizing.plan import plan
from llmsizer.sizing.plan_data import plan_data
from llmsizer.sizing.usecase import UseCase

HERE = Path(__file__).resolve().parent
EXAMPLES = ("nemo43b_dgx_h100", "llama3_8b_h100", "azure_chat_llama31_70b")


def load(name: str) -> UseCase:
    """The use case `examples/sizing/<name>.yaml` (paths in it relative to this folder)."""
    path = Path(f"{name}.yaml")
    return usecase_from_mapping(yaml.safe_load(path.read_text()), base_dir=path.parent)


def run(name: str) -> dict[str, Any]:
    """The plan of `examples/sizing/<name>.yaml` as plain data (run from this folder)."""
    return plan_data(plan(load(name)))


def as_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1) + "\n"


def main(names: list[str]) -> None:
    os.chdir(HERE)
    (HERE / "html").mkdir(exist_ok=True)
    for name in names or EXAMPLES:
        start = time.perf_counter()
        data = run(name)
        seconds = time.perf_counter() - start
        (HERE / f"{name}.json").write_text(as_json(data))
        (HERE / f"{name}.txt").write_text(plan_text(data))
        (HERE / "html" / f"{name}.html").write_text(plan_html(data))
        print(f"{name}: {data['explanation'][0]} ({seconds:.1f} s)")


if __name__ == "__main__":
    main(sys.argv[1:])
