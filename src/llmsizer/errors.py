"""How invalid input is reported: one line per problem, naming the key, the value given and
what is allowed. Every strict schema at the boundary (scenario files, flags, calibration
files, use cases) formats its pydantic errors here, and reads its YAML file with
`read_yaml_mapping`, so they all read alike."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError


def format_validation_error(
    err: ValidationError,
    source: str,
    *,
    allowed_keys: Iterable[str] | None = None,
    flags: Mapping[str, str] | None = None,
) -> str:
    """`invalid <source>:` then `  <dotted.key> = <value>: <rule>` per problem.

    An unknown key says so, listing `allowed_keys` when given. `flags` maps a field's dotted
    path to the command-line flag that set it (`{"workload.osl": "--osl"}`): a problem at
    that path or below it names the flag as the user typed it (`  --osl 0: ...`), and in a
    check across fields (a problem at the fields' parent) their names become the flags.
    Paths not in `flags` keep their dotted keys, the keys of the user's YAML file.
    """
    allowed = f" (allowed: {', '.join(allowed_keys)})" if allowed_keys is not None else ""
    flags = flags or {}
    lines = [f"invalid {source}:"]
    for e in err.errors():
        path = [str(p) for p in e["loc"]]
        where = ".".join(path) or "(top level)"
        msg = e["msg"].removeprefix("Value error, ")
        flag = _flag_of(path, flags, missing=e["type"] == "missing")
        value = e.get("input")
        shown = value is not None and not isinstance(value, dict)
        if flag is not None:
            lines.append(f"  {_flag_problem(flag, e['type'], value if shown else None, msg)}")
            continue
        translated = name_flags(msg, flags, under=path)
        if translated != msg:  # a check across flags: the flags say where
            lines.append(f"  {translated}")
        elif e["type"] == "extra_forbidden":
            lines.append(f"  {where}: unknown key{allowed}")
        elif shown:
            shown_value = str(value) if isinstance(value, Path) else value
            lines.append(f"  {where} = {shown_value!r}: {msg}")
        else:
            lines.append(f"  {where}: {msg}")
    return "\n".join(lines)


def _flag_problem(flag: str, kind: str, value: Any, msg: str) -> str:
    """`--osl 0: <rule>` as the user typed it (a list as its comma-separated text)."""
    if kind == "extra_forbidden":
        return f"{flag}: does not apply here"
    if kind == "missing":
        return f"{flag}: required, not given"
    if value is None:
        return f"{flag}: {msg}"
    typed = ",".join(map(str, value)) if isinstance(value, list) else str(value)
    return f"{flag} {typed or repr(typed)}: {msg}"


def _flag_of(path: list[str], flags: Mapping[str, str], *, missing: bool) -> str | None:
    """The flag that sets `path` or the field it lies in, if one does. An entry for a group
    of flags (`load`: `--peak-rps/--average-rps/...`) names only the group's absence: a
    check on the group is worded by `name_flags`."""
    for n in range(len(path), 0, -1):
        where = ".".join(path[:n])
        flag = flags.get(where)
        group = any(other.startswith(f"{where}.") for other in flags)
        if flag is not None and (not group or (missing and n == len(path))):
            return flag
    return None


_BEFORE, _AFTER = r"(?<![\w./'-])", r"(?![\w'/-]|\.\w)"  # a word, not in a path or 'value'


def name_flags(msg: str, flags: Mapping[str, str], *, under: Iterable[str] = ()) -> str:
    """`msg` (about the fields under the path `under`) with each field a flag sets named by
    it (`flags`, as in `format_validation_error`): its full dotted path anywhere, its bare
    name when it lies right under `under`."""
    prefix = "".join(f"{p}." for p in under)
    for field, flag in sorted(flags.items(), key=lambda item: -len(item[0])):
        msg = re.sub(rf"{_BEFORE}{re.escape(field)}{_AFTER}", flag, msg)
        name = field.removeprefix(prefix)
        if field.startswith(prefix) and "." not in name:
            msg = re.sub(rf"{_BEFORE}{re.escape(name)}{_AFTER}", flag, msg)
    return msg


def parse_yaml(text: str) -> Any:
    """`yaml.safe_load(text)` with libyaml's C parser where PyYAML was built with it (about
    10x faster: the GPU catalog took ~0.1 s to parse); the same safe constructor builds the
    values, so they are equal (tested)."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


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
    text = read_text(path, what, error=error)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise error(f"{what} '{path}' is not valid YAML: {e}") from e
    except RecursionError:
        raise error(f"{what} '{path}' is nested too deeply") from None
    if data is None and empty_ok:
        return {}
    if not isinstance(data, dict):
        raise error(f"{what} '{path}' must hold a mapping of keys, not {data!r}")
    return data


def read_text(path: Path, what: str, *, error: type[ValueError] = ValueError) -> str:
    """The UTF-8 text of the file `path` (`what` names it: "result file"); a missing or
    unreadable file, or one that is not text, raises `error` naming it."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as e:
        raise error(f"cannot read {what} '{path}': {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise error(
            f"{what} '{path}' is not UTF-8 text (byte {e.start} is {e.object[e.start]:#04x})"
        ) from None


def parse_json(
    text: str,
    path: Path,
    what: str,
    *,
    line: int | None = None,
    error: type[ValueError] = ValueError,
) -> Any:
    """`text` (the file `path`, or its `line`) parsed as JSON; anything else raises `error`
    naming the file, the line and the problem. NaN and Infinity, which Python's json accepts
    but JSON does not, are refused too."""
    where = f"'{path}'" if line is None else f"'{path}' line {line}"
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except json.JSONDecodeError as e:
        raise error(
            f"{what} {where} is not JSON: {e.msg} at line {e.lineno} column {e.colno}"
        ) from None
    except ValueError as e:
        raise error(f"{what} {where} is not JSON: {e}") from None
    except RecursionError:
        raise error(f"{what} {where} is nested too deeply") from None


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is out of a float's range")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def read_json_values(path: Path, what: str, *, error: type[ValueError] = ValueError) -> list[Any]:
    """The values in the JSON file `path`: its one document as a one-item list or, when the
    text is not one document, the value of each non-blank line (JSON Lines). Anything else
    raises `error` naming the file and the first bad line."""
    text = read_text(path, what, error=error)
    try:
        return [parse_json(text, path, what, error=error)]
    except ValueError:
        if sum(1 for line in text.splitlines() if line.strip()) <= 1:
            raise
        return parse_json_lines(text, path, what, error=error)


def parse_json_lines(
    text: str, path: Path, what: str, *, error: type[ValueError] = ValueError
) -> list[Any]:
    """The value of each non-blank line of `text` (JSON Lines, the file `path`); a bad line
    raises `error` naming the file and the line."""
    numbered = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    return [parse_json(line, path, what, line=n, error=error) for n, line in numbered]


def read_csv_rows(path: Path, what: str) -> list[dict[str, str]]:
    """The rows of the CSV file `path`, each a dict by header; a ValueError naming the file
    when it is not CSV text with a header, has no rows, or a row longer than the header."""
    text = read_text(path, what)
    try:
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
    except csv.Error as e:
        raise ValueError(f"{what} '{path}' is not CSV: {e}") from None
    for number, row in enumerate(rows, start=2):
        if None in row:
            raise ValueError(f"{what} '{path}' line {number}: more fields than the header")
    if not rows:
        raise ValueError(f"{what} '{path}' has no rows (a header line, then one row each)")
    return rows


class MissingExtraError(ValueError):
    """A feature's optional dependency is not installed; the message names the pip extra
    that installs it (`pip install 'llmsizer[plots]'`). A ValueError, so the command line
    reports it as one line and exit status 2, like any other bad request."""


def import_extra(module: str, extra: str, feature: str) -> Any:
    """`importlib.import_module(module)`, or `MissingExtraError` naming `extra` when the
    module (or a library it needs) is not installed. `feature` says what needed it."""
    from importlib import import_module

    try:
        return import_module(module)
    except ModuleNotFoundError as e:
        if e.name is not None and e.name.split(".")[0] == "llmsizer":
            raise  # our own module missing is a bug, not a missing extra
        missing = (e.name or module).split(".")[0]
        raise MissingExtraError(
            f"{feature} needs {missing}, which is not installed: pip install 'llmsizer[{extra}]'"
        ) from None
