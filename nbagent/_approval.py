"""The non-interactive approval policy for ``requires_approval`` tools.

``NBAGENT_APPROVAL=deny`` (default), ``allow``, or ``allow:name1,name2``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any


def policy_approver(env: Mapping[str, str] | None = None) -> Callable[[Any, Any], tuple[bool, str]]:
    """An approver that decides from ``NBAGENT_APPROVAL`` without asking anyone."""
    env = os.environ if env is None else env
    policy = env.get("NBAGENT_APPROVAL", "deny").strip()

    def decide(call: Any, tool: Any) -> tuple[bool, str]:
        who = f"policy NBAGENT_APPROVAL={policy}"
        if policy == "allow":
            return True, who
        if policy.startswith("allow:"):
            allowed = {n.strip() for n in policy[len("allow:") :].split(",") if n.strip()}
            return call.name in allowed, who
        return False, who

    return decide
