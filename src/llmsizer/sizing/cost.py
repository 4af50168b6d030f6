"""What a deployment costs and what it serves: price per month, per million tokens, and the
course's business view (requests, tokens and users per day).

Prices are user inputs (`Price`), never defaults: cloud GPUs are billed per GPU hour for the
GPUs the instances use, around the clock (`HOURS_PER_MONTH`); on-premises servers cost their
price written off straight-line over `depreciation_years`, plus power and hosting per year,
for every server bought, plus electricity (`power_usd_per_kwh` times the server's power,
its GPUs' TDP unless given, around the clock). A GPU may have several price models (cloud
and on-premises): all are costed and shown, the first ranks, and the break-even utilisation
says when owning beats renting.

Cost per million tokens divides the month's cost by the tokens served in a month: the served
rate (the use case's average when it gives one, else its planning peak, which makes the
figure a best case) times the mean input plus output tokens, over `working_hours` a day for
`DAYS_PER_MONTH` days.

The business view follows the course's Llama 3 8B example: 70.7 req/s per DGX H100 "is 2 M
requests per working day (8 hours)"; at 3 requests per person, 679 k daily active users.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmsizer.sizing.peak import users_served
from llmsizer.units import HOUR

HOURS_PER_MONTH = 730.0  # 8,760 hours a year / 12
DAYS_PER_MONTH = 30.4  # 365 / 12
MONTHS_PER_YEAR = 12.0
HOURS_PER_YEAR = 8760.0


@dataclass(frozen=True, slots=True)
class Price:
    """One GPU's price: exactly one of `usd_per_gpu_hour` (cloud) or `server_usd`."""

    usd_per_gpu_hour: float | None = None
    server_usd: float | None = None
    depreciation_years: float = 4.0
    power_and_hosting_usd_per_year: float = 0.0
    power_usd_per_kwh: float = 0.0
    server_power_kw: float | None = None
    source: str = "user input"

    def __post_init__(self) -> None:
        if (self.usd_per_gpu_hour is None) == (self.server_usd is None):
            raise ValueError("give exactly one of usd_per_gpu_hour (cloud) or server_usd")

    @property
    def is_cloud(self) -> bool:
        return self.usd_per_gpu_hour is not None


@dataclass(frozen=True, slots=True)
class Cost:
    """A month of the deployment, in US dollars, and how it was computed."""

    usd_per_month: float
    basis: str
    usd_per_million_tokens: float
    usd_per_million_output_tokens: float
    source: str
    is_cloud: bool = False


@dataclass(frozen=True, slots=True)
class BusinessView:
    """What the deployment serves at its capacity under the limits, per day."""

    capacity_rps: float
    requests_per_day: float
    input_tokens_per_day: float
    output_tokens_per_day: float
    users_served: float
    requests_per_day_per_server: float


def monthly_cost(
    price: Price, num_gpus: int, num_servers: int, server_power_kw: float = 0.0
) -> tuple[float, str]:
    """US dollars a month and the arithmetic in words (module docstring); `server_power_kw`
    is the default power of one server (the price's own wins), billed at its $/kWh."""
    if price.usd_per_gpu_hour is not None:
        usd = num_gpus * price.usd_per_gpu_hour * HOURS_PER_MONTH
        basis = f"{num_gpus} GPUs x ${price.usd_per_gpu_hour:,.2f}/GPU-hour x {HOURS_PER_MONTH:g} h"
        return usd, basis
    assert price.server_usd is not None
    kw = price.server_power_kw or server_power_kw
    power = kw * HOURS_PER_YEAR * price.power_usd_per_kwh
    per_year = (
        price.server_usd / price.depreciation_years + price.power_and_hosting_usd_per_year + power
    )
    electricity = f" + {kw:.3g} kW x ${price.power_usd_per_kwh:g}/kWh" if power else ""
    basis = (
        f"{num_servers} servers x (${price.server_usd:,.0f} / {price.depreciation_years:g} years"
        f" + ${price.power_and_hosting_usd_per_year:,.0f}/year{electricity}) / 12"
    )
    return num_servers * per_year / MONTHS_PER_YEAR, basis


def cost_of(
    price: Price,
    num_gpus: int,
    num_servers: int,
    served_rps: float,
    mean_input_tokens: float,
    mean_output_tokens: float,
    working_hours: float,
    server_power_kw: float = 0.0,
) -> Cost:
    """The month's cost and its cost per million tokens served (module docstring)."""
    usd, basis = monthly_cost(price, num_gpus, num_servers, server_power_kw)
    requests = served_rps * working_hours * HOUR * DAYS_PER_MONTH
    tokens = requests * (mean_input_tokens + mean_output_tokens)
    output = requests * mean_output_tokens
    return Cost(
        usd_per_month=usd,
        basis=basis,
        usd_per_million_tokens=usd / tokens * 1e6,
        usd_per_million_output_tokens=usd / output * 1e6,
        source=price.source,
        is_cloud=price.is_cloud,
    )


def break_even_utilisation(costs: tuple[Cost, ...]) -> float | None:
    """The share of the hours cloud GPUs must be billed for (autoscaled, paid per hour
    used) at which the first on-premises price model costs as much as the first cloud one:
    above it owning is cheaper. `None` without one of each."""
    cloud = next((c for c in costs if c.is_cloud), None)
    owned = next((c for c in costs if not c.is_cloud), None)
    if cloud is None or owned is None or not cloud.usd_per_month:
        return None
    return owned.usd_per_month / cloud.usd_per_month


def business_view(
    capacity_rps: float,
    num_servers: int,
    mean_input_tokens: float,
    mean_output_tokens: float,
    requests_per_user: float,
    working_hours: float,
) -> BusinessView:
    """Requests, tokens and users a day at `capacity_rps` sustained over the working hours."""
    per_day = capacity_rps * working_hours * HOUR
    return BusinessView(
        capacity_rps=capacity_rps,
        requests_per_day=per_day,
        input_tokens_per_day=per_day * mean_input_tokens,
        output_tokens_per_day=per_day * mean_output_tokens,
        users_served=users_served(capacity_rps, requests_per_user, working_hours),
        requests_per_day_per_server=per_day / max(1, num_servers),
    )
