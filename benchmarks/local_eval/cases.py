# ruff: noqa: E501  (one case per line reads best)
"""The eval's prompts: (tool set, prompt, expected tool or None, expected arguments).

Written all at once before any tuning, then split by position: within each tool
set, even positions are the development half and odd positions the held-back
half. Tuning looks at the development half only.

Expected arguments list the keys that must match (strings case-insensitively,
numbers by value); other optional arguments may take any valid value.
"""

from __future__ import annotations

from typing import Any

Case = tuple[str, str, str | None, dict[str, Any] | None]

CASES: list[Case] = [
    # -- weather / time
    ("weather", "What's the weather in Tokyo?", "get_weather", {"city": "Tokyo"}),
    ("weather", "What is the temperature in Berlin right now?", "get_weather", {"city": "Berlin"}),
    ("weather", "Is it raining in London?", "get_weather", {"city": "London"}),
    ("weather", "What time is it in Sydney?", "get_time", {"city": "Sydney"}),
    ("weather", "Tell me the local time in Chicago.", "get_time", {"city": "Chicago"}),
    ("weather", "Do I need an umbrella in Paris today?", "get_weather", {"city": "Paris"}),
    ("weather", "Wie ist das Wetter in München?", "get_weather", {"city": "München"}),
    ("weather", "Quelle heure est-il à Montréal ?", "get_time", {"city": "Montréal"}),
    ("weather", "Hello! How are you today?", None, None),
    ("weather", "Write a haiku about the rain.", None, None),
    ("weather", "Why is the sky blue?", None, None),
    ("weather", "Check the current conditions in Oslo.", "get_weather", {"city": "Oslo"}),
    ("weather", "¿Qué tiempo hace en Madrid?", "get_weather", {"city": "Madrid"}),
    # -- arithmetic
    ("arithmetic", "What is 17 plus 25?", "add", {"a": 17, "b": 25}),
    ("arithmetic", "Multiply 12 by 9.", "multiply", {"a": 12, "b": 9}),
    ("arithmetic", "What is 2 to the power of 10?", "power", {"base": 2, "exponent": 10}),
    ("arithmetic", "Add 3.5 and 4.25 for me.", "add", {"a": 3.5, "b": 4.25}),
    ("arithmetic", "What's 7 times 8?", "multiply", {"a": 7, "b": 8}),
    ("arithmetic", "Compute the sum of 1200 and 345.", "add", {"a": 1200, "b": 345}),
    ("arithmetic", "Calculate 3 raised to the 4th power.", "power", {"base": 3, "exponent": 4}),
    ("arithmetic", "What is the product of 15 and 4?", "multiply", {"a": 15, "b": 4}),
    ("arithmetic", "Was ist 45 plus 55?", "add", {"a": 45, "b": 55}),
    ("arithmetic", "Combien font 6 fois 7 ?", "multiply", {"a": 6, "b": 7}),
    ("arithmetic", "Who invented algebra?", None, None),
    ("arithmetic", "Explain what a prime number is.", None, None),
    ("arithmetic", "Thanks, that's all!", None, None),
    ("arithmetic", "How much is 250 + 175?", "add", {"a": 250, "b": 175}),
    # -- units
    (
        "units",
        "Convert 5 km to miles.",
        "convert_length",
        {"value": 5, "from_unit": "km", "to_unit": "mi"},
    ),
    (
        "units",
        "How many feet are 100 metres?",
        "convert_length",
        {"value": 100, "from_unit": "m", "to_unit": "ft"},
    ),
    (
        "units",
        "What is 30 degrees Celsius in Fahrenheit?",
        "convert_temperature",
        {"value": 30, "to_unit": "F"},
    ),
    ("units", "Convert 98.6 F to Celsius.", "convert_temperature", {"value": 98.6, "to_unit": "C"}),
    (
        "units",
        "How far is 26.2 miles in kilometres?",
        "convert_length",
        {"value": 26.2, "from_unit": "mi", "to_unit": "km"},
    ),
    (
        "units",
        "Turn 12 feet into metres.",
        "convert_length",
        {"value": 12, "from_unit": "ft", "to_unit": "m"},
    ),
    (
        "units",
        "Wie viel sind 10 Meilen in Kilometern?",
        "convert_length",
        {"value": 10, "from_unit": "mi", "to_unit": "km"},
    ),
    (
        "units",
        "Convertis 20 degrés Celsius en Fahrenheit.",
        "convert_temperature",
        {"value": 20, "to_unit": "F"},
    ),
    ("units", "What is the metric system?", None, None),
    ("units", "Good morning!", None, None),
    ("units", "Which is longer, a mile or a kilometre?", None, None),
    (
        "units",
        "I ran 8 km today, how many miles is that?",
        "convert_length",
        {"value": 8, "from_unit": "km", "to_unit": "mi"},
    ),
    (
        "units",
        "It is 75 F outside, what is that in C?",
        "convert_temperature",
        {"value": 75, "to_unit": "C"},
    ),
    # -- dataframe
    (
        "dataframe",
        "What is the average revenue in the sales data?",
        "column_mean",
        {"column": "revenue"},
    ),
    ("dataframe", "How many rows does the sales DataFrame have?", "count_rows", None),
    ("dataframe", "Show me the first 3 rows of the sales table.", "top_rows", {"n": 3}),
    ("dataframe", "What's the mean price?", "column_mean", {"column": "price"}),
    (
        "dataframe",
        "How many sales rows are there for the north region?",
        "count_rows",
        {"region": "north"},
    ),
    ("dataframe", "Give me the mean of units.", "column_mean", {"column": "units"}),
    ("dataframe", "Display the top 10 rows.", "top_rows", {"n": 10}),
    (
        "dataframe",
        "Wie hoch ist der durchschnittliche Umsatz (revenue)?",
        "column_mean",
        {"column": "revenue"},
    ),
    ("dataframe", "Combien de lignes pour la région south ?", "count_rows", {"region": "south"}),
    ("dataframe", "What is a DataFrame in pandas?", None, None),
    ("dataframe", "Hi there!", None, None),
    ("dataframe", "Write a short poem about spreadsheets.", None, None),
    ("dataframe", "Peek at the first rows of the data.", "top_rows", None),
    # -- kernel
    ("kernel", "What variables are defined in my notebook?", "list_variables", {}),
    ("kernel", "Show me what df looks like.", "inspect_variable", {"name": "df"}),
    ("kernel", "Run print(2 + 2) in the kernel.", "run_python", None),
    ("kernel", "List the variables in the kernel.", "list_variables", {}),
    ("kernel", "What type is the variable sales?", "inspect_variable", {"name": "sales"}),
    ("kernel", "Execute this code: import math; print(math.pi)", "run_python", None),
    ("kernel", "Which variables do I have?", "list_variables", {}),
    ("kernel", "Zeig mir die Variable results.", "inspect_variable", {"name": "results"}),
    ("kernel", "Quelles variables sont définies ?", "list_variables", {}),
    ("kernel", "What is a Jupyter kernel?", None, None),
    ("kernel", "Hello!", None, None),
    ("kernel", "Explain Python list comprehensions in one sentence.", None, None),
    ("kernel", "Inspect the variable model.", "inspect_variable", {"name": "model"}),
    # -- enums and optional arguments
    ("options", "Find books about dragons.", "search_books", {"query": "dragons"}),
    ("options", "Remind me to call mom, it's urgent.", "set_reminder", {"priority": "high"}),
    ("options", "Search for history books about Rome.", "search_books", {"genre": "history"}),
    ("options", "Set a reminder to water the plants.", "set_reminder", None),
    (
        "options",
        "Find 3 science books about black holes.",
        "search_books",
        {"genre": "science", "limit": 3},
    ),
    ("options", "Add a low priority reminder to buy milk.", "set_reminder", {"priority": "low"}),
    ("options", "Look for fiction books about pirates.", "search_books", {"genre": "fiction"}),
    ("options", "Erinnere mich daran, den Arzt anzurufen.", "set_reminder", None),
    ("options", "Busca libros sobre astronomía.", "search_books", None),
    ("options", "What is your favourite book?", None, None),
    ("options", "Good night!", None, None),
    ("options", "Summarise the plot of Hamlet in one sentence.", None, None),
    (
        "options",
        "Please remind me about the meeting, high priority.",
        "set_reminder",
        {"priority": "high"},
    ),
    # -- countries
    ("countries", "What is the capital of Kenya?", "capital_of", {"country": "Kenya"}),
    ("countries", "How many people live in Japan?", "population_of", {"country": "Japan"}),
    ("countries", "What currency do they use in Peru?", "currency_of", {"country": "Peru"}),
    ("countries", "Which city is the capital of Canada?", "capital_of", {"country": "Canada"}),
    ("countries", "What's the population of Egypt?", "population_of", {"country": "Egypt"}),
    ("countries", "What money is used in Norway?", "currency_of", {"country": "Norway"}),
    ("countries", "Was ist die Hauptstadt von Frankreich?", "capital_of", None),
    ("countries", "¿Cuál es la población de México?", "population_of", None),
    ("countries", "Quelle est la monnaie de la Suisse ?", "currency_of", None),
    ("countries", "Tell me a fun fact about geography.", None, None),
    ("countries", "Hey, what's up?", None, None),
    ("countries", "Write two sentences about travelling.", None, None),
    ("countries", "Name the capital city of India.", "capital_of", {"country": "India"}),
    # -- money
    ("money", "What's the stock price of AAPL?", "stock_price", {"symbol": "AAPL"}),
    (
        "money",
        "What is the exchange rate from USD to EUR?",
        "exchange_rate",
        {"from_currency": "USD", "to_currency": "EUR"},
    ),
    ("money", "How much is MSFT trading at?", "stock_price", {"symbol": "MSFT"}),
    (
        "money",
        "Convert rate GBP to JPY please.",
        "exchange_rate",
        {"from_currency": "GBP", "to_currency": "JPY"},
    ),
    ("money", "Get the latest price for TSLA.", "stock_price", {"symbol": "TSLA"}),
    (
        "money",
        "How many yen is one dollar? (USD to JPY)",
        "exchange_rate",
        {"from_currency": "USD", "to_currency": "JPY"},
    ),
    ("money", "Wie steht die Aktie von NVDA?", "stock_price", {"symbol": "NVDA"}),
    (
        "money",
        "Quel est le taux de change EUR en CHF ?",
        "exchange_rate",
        {"from_currency": "EUR", "to_currency": "CHF"},
    ),
    ("money", "What is inflation?", None, None),
    ("money", "Thank you!", None, None),
    ("money", "Give me one tip for saving money.", None, None),
    ("money", "Price of the GOOG stock?", "stock_price", {"symbol": "GOOG"}),
    # -- mixed
    ("mixed", "What's the weather like in Rome?", "get_weather", {"city": "Rome"}),
    ("mixed", "What is 17 plus 25?", "add", {"a": 17, "b": 25}),
    (
        "mixed",
        "Convert 3 miles to km.",
        "convert_length",
        {"value": 3, "from_unit": "mi", "to_unit": "km"},
    ),
    ("mixed", "What is the capital of Peru?", "capital_of", {"country": "Peru"}),
    ("mixed", "What's AMZN trading at?", "stock_price", {"symbol": "AMZN"}),
    ("mixed", "What variables exist in the kernel?", "list_variables", {}),
    ("mixed", "Is it cold in Helsinki today?", "get_weather", {"city": "Helsinki"}),
    ("mixed", "Add 8 and 13.", "add", {"a": 8, "b": 13}),
    ("mixed", "Hello, who are you?", None, None),
    ("mixed", "Tell me a joke.", None, None),
    ("mixed", "What does a data scientist do?", None, None),
    ("mixed", "Hauptstadt von Italien?", "capital_of", None),
]


# Written after the first held-back run showed 5 of its 13 no-tool prompts calling a
# tool (its summary only; its rows unread): questions *about* a tool's domain that
# need no tool, plus a few tool requests in the same words, to calibrate "none".
# Part of development, never of the held-back half.
CALIBRATION: list[Case] = [
    ("money", "What is a ticker symbol?", None, None),
    ("money", "Explain what an exchange rate is.", None, None),
    ("kernel", "What does a kernel do in Jupyter?", None, None),
    ("kernel", "How do I define a variable in Python?", None, None),
    ("weather", "What's the difference between weather and climate?", None, None),
    ("weather", "Who invented the thermometer?", None, None),
    ("countries", "Why do countries have capital cities?", None, None),
    ("units", "Where does the mile come from?", None, None),
    ("options", "Recommend a good science book.", None, None),
    ("dataframe", "How is revenue different from profit?", None, None),
    ("dataframe", "What does the mean of a column tell me?", None, None),
    ("arithmetic", "What is exponentiation?", None, None),
    ("money", "When was the euro introduced?", None, None),
    ("mixed", "Can you explain what a stock is?", None, None),
    ("countries", "What is a currency?", None, None),
    ("dataframe", "What is the mean revenue?", "column_mean", {"column": "revenue"}),
    ("kernel", "Show the variable df.", "inspect_variable", {"name": "df"}),
    ("money", "What's the price of IBM stock?", "stock_price", {"symbol": "IBM"}),
    ("weather", "What is the weather in Lima?", "get_weather", {"city": "Lima"}),
    ("countries", "What is the currency of Chile?", "currency_of", {"country": "Chile"}),
]


def split(half: str) -> list[Case]:
    """The development ("dev") or held-back ("held") half: alternate positions per tool set.

    "calib" is the calibration set above (development data too).
    """
    if half == "calib":
        return list(CALIBRATION)
    out: list[Case] = []
    position: dict[str, int] = {}
    for case in CASES:
        index = position.get(case[0], 0)
        position[case[0]] = index + 1
        if (index % 2 == 0) == (half == "dev"):
            out.append(case)
    return out
