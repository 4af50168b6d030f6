"""The model catalog and lenient model lookup.

`data/models.json` holds, per catalog model, the architecture fields of its public Hugging
Face `config.json` (typed from the repository named in `hf_repo_id`, or from the mirror of it
named in `config_source`), plus the published parameter counts that tests compare the derived
counts with (`published`: the figures, their `source`, and `rounded_to` when the source
rounds, e.g. "230 billion" -> 1e9), other Hugging Face ids of the same architecture
(`aliases`: quantized exports such as `nvidia/DeepSeek-R1-NVFP4`), and notes on assumptions.

`get_model(name)` accepts, in this order:
1. a path to a `config.json` or to a directory holding one (any Hugging Face model);
2. a catalog name, alias or Hugging Face id, whatever the case and separators
   (`meta-llama/Llama-3.1-70B-Instruct`, `Llama 3.1 70B`, `llama_3.1_70b`);
3. the same with the organisation and trailing variant words dropped (`-Instruct`, `-chat`,
   `-hf`, `-v0.1`, `-FP8`, a `-2507` release date ...).
Anything else raises `UnknownNameError` with close matches.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from llmsizer.specs.hf_config import model_from_hf_config
from llmsizer.specs.models import ModelSpec
from llmsizer.specs.names import build_index, normalize_name, unknown_name_error

_VARIANT_WORDS = frozenset(
    {"instruct", "chat", "hf", "base", "it", "fp8", "awq", "gptq", "int4", "int8", "bf16", "fp16"}
)
_VERSION = re.compile(r"v\d+\.\d+|\d{4}")  # v0.1, or a release date such as 2507
_TOKENS = re.compile(r"[^a-z0-9.]+")


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """A catalog model with its provenance: published counts and assumption notes."""

    model: ModelSpec
    aliases: tuple[str, ...]
    published: tuple[tuple[str, float], ...]
    published_source: str
    notes: str
    config_source: str = ""
    published_rounded_to: float = 0.0


@cache
def model_catalog() -> dict[str, CatalogEntry]:
    """Every catalog model by key, built once from `data/models.json`."""
    text = resources.files("llmsizer.specs").joinpath("data/models.json").read_text()
    raw: dict[str, dict[str, Any]] = json.loads(text)
    return {key: _entry_from_json(key, entry) for key, entry in raw.items()}


@cache
def _model_index() -> dict[str, str]:
    entries = []
    for key, entry in model_catalog().items():
        names = list(entry.aliases)
        repo = entry.model.hf_repo_id
        if repo is not None:
            names += [repo, repo.split("/")[-1]]
        entries.append((key, names))
    return build_index(entries, "model")


def _exists(path: Path, *, file: bool = False) -> bool:
    try:  # a name too long for a path (a typo, a pasted prompt) is no path
        return path.is_file() if file else path.exists()
    except OSError:
        return False


def get_model(name: str | Path) -> ModelSpec:
    """A catalog model by (lenient) name or Hugging Face id, or any `config.json` by path."""
    path = Path(name)
    if str(name).strip() and (path.suffix == ".json" or _exists(path)):
        if not (_exists(path, file=True) or _exists(path / "config.json", file=True)):
            raise FileNotFoundError(f"no config.json at {path}")
        return ModelSpec.from_hf_config(path)
    text = str(name)
    index = _model_index()
    key = index.get(normalize_name(text)) or index.get(_base_name(text))
    if key is None:
        raise unknown_name_error("model", text, index)
    return model_catalog()[key].model


def _base_name(name: str) -> str:
    """`meta-llama/Llama-3.1-70B-Instruct` -> `llama3170b`: no org, no variant words."""
    tokens = [t for t in _TOKENS.split(name.lower().split("/")[-1]) if t]
    while tokens and (tokens[-1] in _VARIANT_WORDS or _VERSION.fullmatch(tokens[-1])):
        tokens.pop()
    return normalize_name("".join(tokens))


_ENTRY_FIELDS = frozenset(
    {"hf_repo_id", "aliases", "config", "config_source", "published", "notes"}
)


def _entry_from_json(key: str, entry: dict[str, Any]) -> CatalogEntry:
    unknown = set(entry) - _ENTRY_FIELDS
    if unknown:
        raise ValueError(f"models.json {key}: unknown keys {sorted(unknown)}")
    repo = entry.get("hf_repo_id")
    published = dict(entry.get("published", {}))
    source = str(published.pop("source", ""))
    rounded_to = float(published.pop("rounded_to", 0.0))
    config_source = str(entry.get("config_source", ""))
    model_source = f"config.json of huggingface.co/{repo}" if repo else entry.get("notes", "")
    if repo and config_source:
        model_source += f", as mirrored in {config_source}"
    model = model_from_hf_config(entry["config"], name=key, hf_repo_id=repo, source=model_source)
    return CatalogEntry(
        model=model,
        aliases=tuple(entry.get("aliases", ())),
        published=tuple((k, float(v)) for k, v in published.items()),
        published_source=source,
        notes=str(entry.get("notes", "")),
        config_source=config_source,
        published_rounded_to=rounded_to,
    )
