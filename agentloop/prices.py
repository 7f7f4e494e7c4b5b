"""Cost of a model call from the price table (prices.toml). Unknown model -> None, never a guess."""

from __future__ import annotations

import re
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any

PRICES_PATH = Path(__file__).resolve().parent / "prices.toml"


@lru_cache(maxsize=4)
def load_prices(path: str | None = None) -> dict[str, dict[str, float]]:
    return tomllib.loads(Path(path or PRICES_PATH).read_text(encoding="utf-8"))


def price_for(model: str, prices: dict[str, Any] | None = None) -> dict[str, float] | None:
    prices = load_prices() if prices is None else prices
    # Only the id itself or the id with a release date (claude-sonnet-4-5-20250929): "claude-sonnet-4-50" would
    # be a different model, not a dated claude-sonnet-4-5, and gets no price rather than a borrowed one.
    base = re.sub(r"(-\d{8}|@\d{8})$", "", model)
    return prices.get(base)


def cost_usd(
    model: str,
    uncached_in: int,
    out: int,
    cache_read: int = 0,
    cache_write: int = 0,
    prices: dict[str, Any] | None = None,
) -> float | None:
    price = price_for(model, prices)
    if price is None:
        return None
    total = (
        uncached_in * price["input"]
        + out * price["output"]
        + cache_read * price.get("cache_read", price["input"])
        + cache_write * price.get("cache_write", price["input"])
    )
    return round(total / 1e6, 8)
