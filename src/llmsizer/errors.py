"""How invalid input is reported: one line per problem, naming the key, the value given and
what is allowed. Every strict schema at the boundary (scenario files, flags, calibration
files, use cases) formats its pydantic errors here, and reads its YAML file with
`read_yaml_mapping`, so they all read alike."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError


def format_validation_error(
    err: ValidationError, source: str, *, allowed_keys: Iterable[str] | None = None
) -> str:
    """`invalid <source>:` then `  <dotted.key> = <value>: <rule>` per problem.

    An unknown key says so, listing `allowed_keys` when given.
    """
    allowed = f" (allowed: {', '.join(allowed_keys)})" if allowed_keys is not None else ""
    lines = [f"invalid {source}:"]
    for e in err.errors():
        where = ".".join(str(p) for p in e["loc"]) or "(top level)"
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            lines.append(f"  {where}: unknown key{allowed}")
        elif "input" in e and e["input"] is not None and not isinstance(e["input"], dict):
            lines.append(f"  {where} = {e['input']!r}: {msg}")
        else:
            lines.append(f"  {where}: {msg}")
    return "\n".join(lines)


def read_yaml_mapping(
    path: Path,
    what: str,
    *,
    empty_ok: bool = False,
    error: type[ValueError] = ValueError,
) -> dict[str, Any]:
    """The mapping in the YAML file `path` (`what` names it: "scenario file"); an unreadable
    file, bad YAML or anything but a mapping raises `error` saying which (an empty file is
    `{}` when `empty_ok`)."""
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as e:
        raise error(f"cannot read {what} '{path}': {e.strerror}") from e
    except yaml.YAMLError as e:
        raise error(f"{what} '{path}' is not valid YAML: {e}") from e
    if data is None and empty_ok:
        return {}
    if not isinstance(data, dict):
        raise error(f"{what} '{path}' must hold a mapping of keys, not {data!r}")
    return data
