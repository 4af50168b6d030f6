"""How invalid input is reported: one line per problem, naming the key, the value given and
what is allowed. Every strict schema at the boundary (scenario files, flags, calibration
files, use cases) formats its pydantic errors here, so they all read alike."""

from __future__ import annotations

from collections.abc import Iterable

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
