"""The cells of ``08_batch.ipynb`` (an agent over every row), built by ``build.py``.

Cells are (kind, source, tags) as in build.py; this file imports nothing from it
(build.py imports this one).
"""

from __future__ import annotations

CHECK = ["nbval-check-output"]


def md(text: str) -> tuple[str, str, list[str]]:
    return ("markdown", text.strip("\n"), [])


def code(text: str, tags: list[str] | None = None) -> tuple[str, str, list[str]]:
    return ("code", text.strip("\n"), tags or [])


BATCH = [
    md("""
# An agent over every row of a DataFrame

After one question comes the same question over a table: classify every support
ticket, extract fields from every invoice. `agent.map(df, prompt)` runs **one full
agent run per row** (tool rounds included, each row in a conversation of its own)
and returns a DataFrame with the input's index and only new columns, ready for
`df.join(out)`:

- typed columns with `output_type=` (one per field), else one `output` column;
- `error` (None when the row succeeded), `cost`, `tokens`, `rounds`, `seconds`;
- every finished row is **journaled at once** in the history database: calling the
  same `map` again (after a crash, a kernel restart, `kill -9`) sends nothing for rows
  already done;
- at most `concurrency` rows in flight, backing off on 429s; `max_cost=` and
  `estimate=k` for the bill; a live progress line; interrupt the kernel to stop.

The model here is a **scripted** one (`ScriptedModel`): it answers from a Python
function, so this notebook runs without a key. Swap in `Agent("openai:gpt-4o-mini")`
and nothing else changes.
"""),
    code("""
%load_ext nbagent
import tempfile
from typing import Literal

import pandas as pd
from pydantic import BaseModel

import nbagent
from nbagent import Agent, tool
from nbagent.testing import ScriptedModel, call, reply

# A history file of this notebook's own, so every run of it starts fresh.
# (By default the journal lives in your nbagent history: nothing to set up.)
HISTORY = tempfile.mkdtemp() + "/history.db"
"""),
    md("""
## 1. A ticket table, a tool and a type

Each ticket names a customer; the tool looks up their plan, and the answer is a
`Ticket`: a category, a priority and a one-line summary.
"""),
    code("""
tickets = pd.DataFrame(
    {
        "customer": [
            "acme", "globex", "initech", "acme", "umbrella", "ghost", "globex", "initech"
        ],
        "subject": [
            "Charged twice this month", "App crashes on start", "Love the new dashboard",
            "Refund for the duplicate charge", "Export to CSV fails", "Cannot log in",
            "Crash when saving a report", "How do I add a user?",
        ],
    },
    index=pd.Index([f"T-{n}" for n in range(101, 109)], name="ticket"),
)

PLANS = {"acme": "enterprise", "globex": "pro", "initech": "free", "umbrella": "enterprise"}

@tool
def customer_plan(customer: str) -> str:
    \"\"\"The support plan of a customer.\"\"\"
    return PLANS[customer]  # an unknown customer raises KeyError

class Ticket(BaseModel):
    category: Literal["billing", "bug", "question", "praise"]
    priority: Literal["high", "normal", "low"]
    summary: str

tickets
"""),
    md("""
The scripted model reads the ticket, asks for the customer's plan, then answers
with a `Ticket` as JSON (what a real model does with `output_type=`):
"""),
    code("""
import json

def triage(request):
    prompt = [m for m in request.messages if m.role == "user"][0].content
    customer = prompt.split("Customer: ")[1].split("\\n")[0]
    subject = prompt.split("Subject: ")[1]
    if not request.tool_results:
        return reply(calls=[call("customer_plan", customer=customer)])
    result = request.tool_results[-1]
    if not result.ok:
        return reply(calls=[call("customer_plan", customer=customer)])  # tries again
    words = subject.lower()
    category = ("billing" if "charge" in words or "refund" in words
                else "bug" if "crash" in words or "fail" in words
                else "praise" if "love" in words else "question")
    plan = result.content
    priority = "high" if plan == "enterprise" else "low" if plan == "free" else "normal"
    return json.dumps({"category": category, "priority": priority, "summary": subject[:40]})

model = ScriptedModel(triage)
agent = Agent(model, tools=[customer_plan], store=HISTORY, max_consecutive_errors=1)
PROMPT = "Triage this support ticket.\\nCustomer: {customer}\\nSubject: {subject}"
"""),
    md("""
## 2. What will it cost? `estimate=k`

`estimate=3` runs 3 sample rows spread over the frame and projects the whole
frame's cost and time from them. The sample rows are journaled, so the real run
does not pay for them again. (The scripted model has no price, so the cost is
unknown here; with a priced model you get dollars and a low-high range.)
"""),
    code(
        """
estimate = agent.map(tickets, PROMPT, output_type=Ticket, estimate=3, progress=False)
print(estimate.sampled, "sample rows;", estimate.rows_left, "of", estimate.rows, "rows left")
print(f"{estimate.tokens_per_row:.0f} tokens a row; cost: {estimate.cost}")
""",
        CHECK,
    ),
    md("""
## 3. The whole table

`agent.map` shows one progress line while it runs (done, failed, running, rows per
second, tokens, cost and projected cost, ETA, the last errors), then returns the
frame. Ticket T-106 names a customer the tool does not know: its row fails, the
others finish.
"""),
    code("""
out = agent.map(tickets, PROMPT, output_type=Ticket, concurrency=4)
"""),
    code(
        """
print(out.drop(columns=["seconds", "cost"]).to_string())
""",
        CHECK,
    ),
    code("""
tickets.join(out[["category", "priority"]])
"""),
    md("""
The estimate's sample rows were not paid twice: the progress line says
"2 from journal" (the third sample row was T-106, which failed, and failed rows run
again). The model counts every request it got:
"""),
    code(
        """
print(len(model.requests), "model requests so far")
""",
        CHECK,
    ),
    md("""
## 4. Fix the data, call again: only the failed row runs

Failed rows are journaled as failed and run again on the next call; finished rows
come back from the journal. The same would hold after a kernel restart or a crash
mid-batch (`resume=False` starts over).
"""),
    code(
        """
PLANS["ghost"] = "pro"
before = len(model.requests)
again = agent.map(tickets, PROMPT, output_type=Ticket, progress=False)
print(len(model.requests) - before, "requests;", again["error"].isna().all(), "no errors")
print(again.loc["T-106", ["category", "priority", "summary"]].tolist())
""",
        CHECK,
    ),
    md("""
## 5. The same from a cell: `%%agent --over`

`%%agent --over tickets --into triaged --output-type Ticket` runs the cell's prompt
over the frame (its `{column}` fields take each row's values; other `{name}` fields
come from the notebook as usual) and ends with a summary panel: rows done and
failed, cost, time, and the first failures with their round panels one click away.
The prompt and rows are the ones above, so every row comes from the journal.
"""),
    code("""
nbagent.magic.use(agent)
"""),
    code("""
%%agent --over tickets --into triaged --output-type Ticket --concurrency 4
Triage this support ticket.
Customer: {customer}
Subject: {subject}
"""),
    code(
        """
print(triaged["category"].value_counts().sort_index().to_dict())
""",
        CHECK,
    ),
    md("""
## Good to know

- **Stop**: interrupt the kernel (■). No new row starts, rows in flight are
  cancelled, the finished ones are kept (and journaled), and `map` returns the
  partial frame with `error="not run: stopped"` on the rest.
- **Rate limits**: `concurrency=` caps rows in flight; on HTTP 429 it halves and
  grows back one row at a time, and every request waits out `retry-after`.
  `rpm=` / `tpm=` add requests- and tokens-per-minute limits.
- **Cost cap**: `max_cost=0.50` stops launching rows when the next one could pass it;
  rows not run say `error="not run: cost cap"`.
- **Identical rows** run once; **approval-requiring tools** are refused before the
  first row unless an approver (or `NBAGENT_APPROVAL=allow:NAME`) allows them.
- **Record/replay**: `Agent(..., record="batch.jsonl")` records every row's traffic,
  and `replay=` answers the same batch with no key, rows in any order.
"""),
]
