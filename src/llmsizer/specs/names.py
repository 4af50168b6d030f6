"""Lenient name matching for the catalogs: case and separators do not matter.

`H100 SXM`, `h100_sxm` and `h100-sxm` all normalise to `h100sxm`; an unknown name raises
`UnknownNameError` listing the closest known names (difflib), so a typo gets a suggestion
instead of a stack trace.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping

_SEPARATORS = re.compile(r"[^a-z0-9]+")


class UnknownNameError(ValueError):
    """A name that is in no catalog. The message lists close matches and the known names."""


def normalize_name(name: str) -> str:
    """Lower-case and drop everything but letters and digits: `H100 SXM` -> `h100sxm`."""
    return _SEPARATORS.sub("", name.lower())


def build_index(entries: Iterable[tuple[str, Iterable[str]]], kind: str) -> dict[str, str]:
    """Map every normalised alias to its canonical key; two keys sharing an alias is an error."""
    index: dict[str, str] = {}
    for key, aliases in entries:
        for alias in (key, *aliases):
            normalized = normalize_name(alias)
            owner = index.setdefault(normalized, key)
            if owner != key:
                raise ValueError(f"{kind} alias {alias!r} names both {owner!r} and {key!r}")
    return index


def close_matches(name: str, index: Mapping[str, str], limit: int = 5) -> list[str]:
    """Canonical keys whose aliases look like `name`, best first, without repeats."""
    found = difflib.get_close_matches(normalize_name(name), list(index), n=4 * limit, cutoff=0.5)
    keys = list(dict.fromkeys(index[alias] for alias in found))
    return keys[:limit]


def unknown_name_error(kind: str, name: str, index: Mapping[str, str]) -> UnknownNameError:
    """The error for a name not in `index`: close matches first, then every known key."""
    suggestions = close_matches(name, index)
    known = ", ".join(sorted(set(index.values())))
    hint = f" Did you mean: {', '.join(suggestions)}?" if suggestions else ""
    return UnknownNameError(f"unknown {kind} {name!r}.{hint} Known {kind}s: {known}.")
