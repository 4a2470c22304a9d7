"""Consent in a real kernel: the approval shows exactly what runs (item 4), inspection
runs no user code (item 3), and a hostile object cannot stall the inventory (item 10).

Each test drives ``%%agent --kernel`` in a real ipykernel through jupyter_client, with
a scripted model; approvals are answered through the kernel's stdin channel.
"""

from __future__ import annotations

import hashlib
import html
import re
from collections.abc import Iterator

import pytest

from tests.support.html import HtmlFacts
from tests.support.kernel import Kernel, displays, kernel_environment, last_html

pytestmark = pytest.mark.kernel

# Code with a bidi override, an isolate and an ANSI escape, long enough (25,000+
# characters) that it used to be shown cut, and code too long to show at all.
BUILD_CODE = r"""
BIG = ("# \u202eadmin = True\u2066 \x1b[2J\n"
       + "".join(f"pad_{i} = {i}\n" for i in range(2500)) + "ran_big = 'yes'  # LAST LINE\n")
HUGE = "ran_huge = 'yes'\n" + "# " + "x" * 250_000 + "\n"
"""
namespace: dict[str, str] = {}
exec(BUILD_CODE, namespace)  # noqa: S102 - the same strings, built here to compare
BIG, HUGE = namespace["BIG"], namespace["HUGE"]

SETUP = (
    """
%load_ext nbagent
import nbagent
from nbagent.testing import ScriptedModel, reply, call
"""
    + BUILD_CODE
    + '''
def script(request):
    p = request.prompt
    if request.tool_results:
        return "Result: " + request.tool_results[-1].content
    if p == "run big":
        return reply("", [call("run_python", code=BIG)])
    if p == "run huge":
        return reply("", [call("run_python", code=HUGE)])
    if p.startswith("inspect "):
        return reply("", [call("inspect_variable", name=p[len("inspect "):])])
    if p == "remove":
        return reply("", [call("remove", path="/tmp/\u202etxt.exe\x1b[8m" + "y" * 500)])
    if p == "context":
        return request.request.system or ""
    if p == "list":
        return reply("", [call("list_variables")])
    return "You said: " + p

@nbagent.tool(requires_approval=True)
def remove(path: str) -> str:
    """Delete a file."""
    return f"removed {path}"

model = ScriptedModel(script)
%agent model model
'''
)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    folder = tmp_path_factory.mktemp("consent")
    started = Kernel(kernel_environment(folder / "nbagent-home"), folder)
    started.run(SETUP)
    yield started
    started.close()


HIDDEN = ("\u202e", "\u2066", "\x1b")


def test_the_approval_shows_the_whole_code_visibly_and_names_its_hash(kernel: Kernel):
    reply, messages = kernel.execute(
        "%%agent --kernel\nrun big", allow_stdin=True, stdin_answer="y", timeout=90
    )
    assert reply["content"]["status"] == "ok"
    (prompt,) = [m["content"]["prompt"] for m in messages if m["msg_type"] == "input_request"]
    digest = hashlib.sha256(BIG.encode()).hexdigest()[:16]
    assert f"{len(BIG):,} characters" in prompt and digest in prompt
    assert "3 hidden characters marked" in prompt
    shown = displays(messages)[:-1]  # the approval display comes before the final panel
    (approval,) = [m for m in shown if "nbagent-approval-code" in m["content"]["data"].get(
        "text/html", "")]  # fmt: skip
    for mime in ("text/plain", "text/html"):
        raw = approval["content"]["data"][mime]
        assert not [c for c in HIDDEN if c in raw], mime
        text = html.unescape(re.sub("<[^>]+>", "", raw))  # what a reader sees
        assert "# ⟦U+202E⟧admin = True⟦U+2066⟧ ⟦U+001B⟧[2J\n" in text
        assert "ran_big = 'yes'  # LAST LINE" in text and "cut" not in text
        assert text.count("pad_") == 2500
    assert kernel.run("print(ran_big)") == "yes\n"


def test_code_too_long_to_show_is_refused_without_asking(kernel: Kernel):
    reply, messages = kernel.execute(
        "%%agent --kernel\nrun huge", allow_stdin=True, stdin_answer="y", timeout=90
    )
    assert reply["content"]["status"] == "ok"
    assert [m for m in messages if m["msg_type"] == "input_request"] == []
    facts = HtmlFacts(last_html(messages))
    assert "denied by nbagent, unasked: the code is 250,020 characters" in facts.text
    assert kernel.run("print('ran_huge' in globals())") == "False\n"


def test_the_question_for_other_tools_is_whole_with_hidden_characters_marked(kernel: Kernel):
    reply, messages = kernel.execute(
        "%%agent\nremove", allow_stdin=True, stdin_answer="n", timeout=90
    )
    (prompt,) = [m["content"]["prompt"] for m in messages if m["msg_type"] == "input_request"]
    assert not [c for c in HIDDEN if c in prompt]
    expected = 'remove(path="/tmp/⟦U+202E⟧txt.exe\\u001b[8m' + "y" * 500 + '")'
    assert prompt == f"nbagent: allow {expected}? [y/N, no answer in 120 s: N] "


SIDE_EFFECTS = """
import pandas as pd

effects = []

class Account:
    def __init__(self):
        self.balance = 100
        self.owner = "ada"

    @property
    def close_account(self):
        effects.append("closed the account")
        return "closed"

    def deposit(self, amount):
        self.balance += amount

    def __repr__(self):
        effects.append("Account repr")
        return "Account()"

    def __getattr__(self, name):
        effects.append("getattr " + name)
        return 0

class Shelf(dict):
    def __getitem__(self, key):
        effects.append("getitem " + key)
        return dict.__getitem__(self, key)

    def __repr__(self):
        effects.append("Shelf repr")
        return "Shelf"

    def __len__(self):
        effects.append("Shelf len")
        return 0

class Pretender:
    # Names a data library as its module: neither trusted nor "data" for that.
    __module__ = "numpy.pretend"

    @property
    def shape(self):
        effects.append("Pretender shape")
        return (1,)

    def __getitem__(self, key):
        effects.append("Pretender getitem")
        return 1

acct = Account()
shelf = Shelf(delete="gone")
pretender = Pretender()
frame = pd.DataFrame({"holder": [acct, "plain"], "n": [1, 2]})
"""

INSPECTIONS = {
    "acct.close_account": "acct.close_account: not evaluated. It is a property of Account",
    "shelf['delete']": "shelf['delete']: not evaluated. Shelf is not a plain dict or list",
    "acct.missing": "acct.missing: not found as a stored attribute; Account computes other",
    "pretender[0]": "pretender[0]: not evaluated. numpy.pretend.Pretender is not a plain",
    "acct": "acct: Account\nrepr: not evaluated (Account objects print with their own code)",
    "acct.balance": "acct.balance: int\nrepr: 100",
    "shelf": "length: 1 (as a dict)",
    "frame": "holder  n\n0  <Account object>  1\n1            plain  2",
}


def test_inspection_reads_without_running_the_users_code(kernel: Kernel):
    kernel.run(SIDE_EFFECTS)
    for name, expected in INSPECTIONS.items():
        reply, messages = kernel.execute(f"%%agent --kernel\ninspect {name}", timeout=60)
        assert reply["content"]["status"] == "ok"
        shown = HtmlFacts(last_html(messages)).text
        assert " ".join(expected.split()) in " ".join(shown.split()), (name, shown)
    kernel.execute("%%agent --kernel\nlist", timeout=60)
    assert kernel.run("print(effects)") == "[]\n"  # nothing ran: no property, repr, [ ]


HOSTILE = """
import time
import pandas.core.series

slow_series = pd.Series([1, 2, 3])
numbers = [1, 2, 3]
real_shape = pandas.core.series.Series.shape
# A library object that takes forever to size (a lazy or patched one).
pandas.core.series.Series.shape = property(lambda self: time.sleep(3600))
"""


def test_a_slow_shape_cannot_stall_the_runs(kernel: Kernel):
    kernel.run(HOSTILE)
    try:
        reply, messages = kernel.execute("%%agent --kernel\ncontext", timeout=60)
        assert reply["content"]["status"] == "ok"
        first = HtmlFacts(last_html(messages)).text
        assert "(by type only: reading 'slow_series' took over 2 s)" in first
        assert "slow_series: pandas.Series" in first and "numbers: list" in first
        # Later runs list that type by type only and describe everything else again.
        reply, messages = kernel.execute("%%agent --kernel\ncontext", timeout=60)
        again = HtmlFacts(last_html(messages)).text
        assert "by type only" not in again and "numbers: list, 3 items" in again
        assert "slow_series: pandas.Series" in again
    finally:
        kernel.run("pandas.core.series.Series.shape = real_shape\ndel slow_series")
