"""The tool sets of the embedded-model eval: eight shapes a notebook user writes.

Each set is a list of tools offered together. The functions really run (the eval
checks the decision and the arguments; a few cases feed a result back).
"""

from __future__ import annotations

from typing import Literal

from nbagent import tool

# -- 1. weather and time lookups (shared name prefix) -----------------------------


@tool(register=False)
def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: the city name, e.g. Berlin
    """
    return f"{city}: 18 C, light rain"


@tool(register=False)
def get_time(city: str) -> str:
    """Get the current local time in a city.

    Args:
        city: the city name, e.g. Tokyo
    """
    return f"{city}: 14:05"


# -- 2. arithmetic -----------------------------------------------------------------


@tool(register=False)
def add(a: float, b: float) -> float:
    """Add two numbers and return the sum.

    Args:
        a: the first number
        b: the second number
    """
    return a + b


@tool(register=False)
def multiply(a: float, b: float) -> float:
    """Multiply two numbers and return the product.

    Args:
        a: the first number
        b: the second number
    """
    return a * b


@tool(register=False)
def power(base: float, exponent: float) -> float:
    """Raise a number to a power.

    Args:
        base: the number
        exponent: the power to raise it to
    """
    return float(base**exponent)


# -- 3. unit conversion (enums) -----------------------------------------------------


@tool(register=False)
def convert_length(
    value: float, from_unit: Literal["km", "mi", "m", "ft"], to_unit: Literal["km", "mi", "m", "ft"]
) -> str:
    """Convert a length or distance between kilometres, miles, metres and feet.

    Args:
        value: the length to convert
        from_unit: the unit of the value
        to_unit: the unit to convert to
    """
    return f"{value} {from_unit} in {to_unit}"


@tool(register=False)
def convert_temperature(value: float, to_unit: Literal["C", "F"]) -> str:
    """Convert a temperature between Celsius and Fahrenheit.

    Args:
        value: the temperature to convert
        to_unit: the scale to convert to, C or F
    """
    return f"{value} to {to_unit}"


# -- 4. DataFrame questions ------------------------------------------------------------


@tool(register=False)
def column_mean(column: Literal["revenue", "units", "price"]) -> float:
    """Compute the mean (average) of a column of the sales DataFrame.

    Args:
        column: the column name
    """
    return 1.0


@tool(register=False)
def count_rows(region: str = "all") -> int:
    """Count the rows of the sales DataFrame, optionally for one region.

    Args:
        region: a region such as north, or all
    """
    return 8


@tool(register=False)
def top_rows(n: int = 5) -> str:
    """Show the first rows of the sales DataFrame.

    Args:
        n: how many rows to show
    """
    return "rows"


# -- 5. kernel tools (the kernel agent's shapes) ------------------------------------------


@tool(register=False)
def list_variables() -> str:
    """List the variables defined in the notebook's kernel, with their types."""
    return "df: DataFrame, x: int"


@tool(register=False)
def inspect_variable(name: str) -> str:
    """Show the type, shape and a preview of one variable in the kernel.

    Args:
        name: the variable name, e.g. df
    """
    return f"{name}: DataFrame (8, 3)"


@tool(register=False)
def run_python(code: str) -> str:
    """Run Python code in the notebook's kernel and return its output.

    Args:
        code: the Python code to run, e.g. print(2 + 2)
    """
    return "ok"


# -- 6. enums and optional arguments --------------------------------------------------------


@tool(register=False)
def search_books(
    query: str, genre: Literal["fiction", "science", "history", "any"] = "any", limit: int = 5
) -> str:
    """Search the library catalogue for books.

    Args:
        query: words to search for, e.g. dragons
        genre: restrict to one genre
        limit: how many books to return
    """
    return "books"


@tool(register=False)
def set_reminder(text: str, priority: Literal["low", "normal", "high"] = "normal") -> str:
    """Set a reminder with a priority.

    Args:
        text: what to be reminded of, e.g. call mom
        priority: how urgent the reminder is
    """
    return "set"


# -- 7. country facts ----------------------------------------------------------------------


@tool(register=False)
def capital_of(country: str) -> str:
    """Look up the capital city of a country.

    Args:
        country: the country name, e.g. France
    """
    return "capital"


@tool(register=False)
def population_of(country: str) -> int:
    """Look up the population of a country.

    Args:
        country: the country name, e.g. Japan
    """
    return 1


@tool(register=False)
def currency_of(country: str) -> str:
    """Look up the currency used in a country.

    Args:
        country: the country name, e.g. Peru
    """
    return "currency"


# -- 8. money ----------------------------------------------------------------------------------


@tool(register=False)
def stock_price(symbol: str) -> float:
    """Get the latest stock price for a ticker symbol.

    Args:
        symbol: the ticker symbol, e.g. AAPL
    """
    return 1.0


@tool(register=False)
def exchange_rate(from_currency: str, to_currency: str) -> float:
    """Get the exchange rate between two currencies.

    Args:
        from_currency: the currency code to convert from, e.g. USD
        to_currency: the currency code to convert to, e.g. EUR
    """
    return 1.0


TOOL_SETS = {
    "weather": [get_weather, get_time],
    "arithmetic": [add, multiply, power],
    "units": [convert_length, convert_temperature],
    "dataframe": [column_mean, count_rows, top_rows],
    "kernel": [list_variables, inspect_variable, run_python],
    "options": [search_books, set_reminder],
    "countries": [capital_of, population_of, currency_of],
    "money": [stock_price, exchange_rate],
    # Many tools at once: the decision among unrelated shapes.
    "mixed": [get_weather, add, convert_length, capital_of, stock_price, list_variables],
}
