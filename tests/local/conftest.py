"""Fixtures for the embedded-model tests: one shared LocalProvider (the model loads once)."""

from __future__ import annotations

import pytest

from nbagent import tool
from nbagent.providers.local import LocalProvider


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: the city name, e.g. Berlin
    """
    return f"{city}: 18 C, light rain"


@tool
def multiply(a: float, b: float) -> float:
    """Multiply two numbers and return the product.

    Args:
        a: the first number
        b: the second number
    """
    return a * b


@pytest.fixture(scope="session")
def local() -> LocalProvider:
    provider = LocalProvider("")
    provider.load()
    return provider


@pytest.fixture
def tools():
    return [get_weather, multiply]
