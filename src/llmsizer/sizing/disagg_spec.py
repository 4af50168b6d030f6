"""The use case's `disaggregated` field: whether `plan` weighs disaggregated prefill and decode
pools against aggregated instances, over which link, and at a fixed P:D ratio or searched.

    disaggregated: auto            # shorthand for {mode: auto}
    disaggregated: {mode: on, kv_link: network, ratio: "3:1"}

`off` (the default) plans aggregated instances only. `auto` plans both and recommends the
one needing fewer GPUs (cheaper, when priced). `on` recommends the disaggregated answer
whichever wins, and says by how much it loses when it does.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from llmsizer.instance.disagg import slowest_catalog_link_bytes_per_s

Mode = Literal["auto", "on", "off"]
_GB_S = 1e9  # bytes/s per GB/s: the field is in GB/s, as datasheets give link bandwidth


class DisaggregatedSpec(BaseModel):
    """How `plan` treats disaggregated serving (module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    mode: Mode = Field(
        "off",
        description="off: aggregated only; auto: plan both, recommend the one needing fewer "
        "GPUs (cheaper when priced); on: recommend disaggregated prefill/decode pools.",
    )
    kv_link: Literal["auto", "nvlink", "network"] | float = Field(
        "auto",
        description="The KV-cache handoff's link: nvlink (one scale-up domain), network (the "
        "server's InfiniBand/RoCE NICs), a bandwidth in GB/s per GPU, or auto: NVLink when "
        "both pools fit in one server's NVLink domain, else the network.",
    )
    ratio: str | None = Field(
        None,
        description="Fix the prefill:decode worker ratio, e.g. '3:1' (scaled up together "
        "until the load is served); unset: searched.",
    )

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        """`disaggregated: auto` means `{mode: auto}`; YAML's `on`/`off` read as booleans."""
        if isinstance(data, bool):
            return {"mode": "on" if data else "off"}
        if isinstance(data, str):
            return {"mode": data}
        return data

    @field_validator("kv_link")
    @classmethod
    def _fast_enough(cls, link: str | float) -> str | float:
        if isinstance(link, str):
            return link
        slowest = slowest_catalog_link_bytes_per_s() / _GB_S
        if not link >= slowest:
            raise ValueError(
                f"a KV link of {link:g} GB/s per GPU is slower than every link in the system "
                f"catalog (slowest {slowest:g} GB/s); give at least that"
            )
        return link

    @field_validator("ratio")
    @classmethod
    def _ratio(cls, ratio: str | None) -> str | None:
        if ratio is not None:
            parse_ratio(ratio)
        return ratio

    @property
    def enabled(self) -> bool:
        return self.mode != "off"

    def link(self) -> Literal["auto", "nvlink", "network"] | float:
        """The link as `make_disaggregated` takes it (bytes/s for a bandwidth)."""
        return self.kv_link if isinstance(self.kv_link, str) else self.kv_link * _GB_S

    def fixed_ratio(self) -> tuple[int, int] | None:
        return None if self.ratio is None else parse_ratio(self.ratio)


def parse_ratio(text: str) -> tuple[int, int]:
    """`'3:1'` -> (3, 1); a clear error for anything but two whole numbers >= 1."""
    parts = text.split(":")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise ValueError(f"a P:D ratio is two whole numbers such as '3:1', got {text!r}")
    p, d = (int(x) for x in parts)
    if p < 1 or d < 1:
        raise ValueError(
            f"a P:D ratio needs >= 1 prefill and >= 1 decode worker, got {text!r}: with no "
            f"{'prefill' if p < 1 else 'decode'} worker nothing is served"
        )
    return p, d
