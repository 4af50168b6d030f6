"""Fleets: serving engines behind a router (`simulate_fleet`), on one simulated clock."""

from llmsizer.fleet.fleet import FleetResult, check_fleet, simulate_fleet
from llmsizer.fleet.router import ROUTERS, make_router

__all__ = ["ROUTERS", "FleetResult", "check_fleet", "make_router", "simulate_fleet"]
