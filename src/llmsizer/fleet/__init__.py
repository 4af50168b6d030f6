"""Fleets: serving engines behind a router (`simulate_fleet`), and disaggregated prefill
and decode pools joined by a KV-cache link (`simulate_disaggregated`), on one clock."""

from llmsizer.fleet.disagg import (
    FREE_LINK,
    DisaggResult,
    KvTransfer,
    simulate_disaggregated,
)
from llmsizer.fleet.fleet import FleetResult, check_fleet, simulate_fleet
from llmsizer.fleet.router import ROUTERS, make_router

__all__ = [
    "FREE_LINK",
    "ROUTERS",
    "DisaggResult",
    "FleetResult",
    "KvTransfer",
    "check_fleet",
    "make_router",
    "simulate_disaggregated",
    "simulate_fleet",
]
