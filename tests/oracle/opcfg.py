"""Grove's verdict on an OperatorConfiguration beside grove-gitops' loader, and their difference.

Grove: the oracle's ``DecodeOperatorConfig`` (non-strict decode + defaults) and
``ValidateOperatorConfiguration``. grove-gitops: ``plan_source`` of a source tree holding only
that file (the loader, the defaults and the validation every render runs). The documented
differences (docs/grove-differences.md) are the only ones allowed:

* a field Grove does not know is an error here (Grove drops it silently), so our
  "field not declared in schema" errors are set aside;
* more scheduler backends are installed here than Grove's enum lists, so an Unsupported error on a
  profile name lists more supported values here (Grove's must all be among them).

Everything else must agree: accepted by both, or refused by both; a refusal by Grove's
validation (rather than its decoder) must carry exactly Grove's errors, path and message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from grove_gitops.errors import InvalidInputError
from grove_gitops.load.memory import MemorySource
from grove_gitops.render import plan_source

FILE = "operator-configuration.yaml"
UNKNOWN_FIELD = "field not declared in schema"
_SUPPORTED = re.compile(r"^(?P<head>.*Unsupported value: .*?): supported values: (?P<values>.*)$")


def _read(text: str) -> tuple[list[str], dict[str, Any] | None]:
    """grove-gitops' errors for the file (``path: message``), and when it is accepted what a
    render reads of it after the defaults (the fields of :func:`effective`)."""
    try:
        plan = plan_source(MemorySource("oracle", {FILE: text.encode()}))
    except InvalidInputError as err:
        return [f"{p.field}: {p.message}" if p.field else p.message for p in err.problems], None
    cfg = plan.inputs.opcfg
    return [], {
        "profiles": [p.name for p in cfg.scheduler.profiles],
        "defaultProfileName": cfg.scheduler.defaultProfileName,
        "topologyAwareScheduling": cfg.topologyAwareScheduling.enabled,
        "autoMNNVLEnabled": cfg.network.autoMNNVLEnabled,
    }


def ours(text: str) -> list[str]:
    """grove-gitops' errors for the file (``path: message``); empty when it is accepted."""
    return _read(text)[0]


def effective(defaulted: dict[str, Any]) -> dict[str, Any]:
    """What a render reads of Grove's decoded and defaulted configuration."""
    scheduler = defaulted.get("scheduler") or {}
    return {
        "profiles": [p.get("name", "") for p in scheduler.get("profiles") or []],
        "defaultProfileName": scheduler.get("defaultProfileName", ""),
        "topologyAwareScheduling": bool((defaulted.get("topologyAwareScheduling") or {}).get("enabled")),
        "autoMNNVLEnabled": bool((defaulted.get("network") or {}).get("autoMNNVLEnabled")),
    }


@dataclass
class Verdicts:
    grove: dict[str, Any]
    ours: list[str]
    #: our errors once the documented differences are set aside
    compared: list[str] = field(default_factory=list)

    @property
    def grove_accepts(self) -> bool:
        return "decodeError" not in self.grove and not self.grove["errors"]

    @property
    def grove_errors(self) -> list[str]:
        return [] if "decodeError" in self.grove else [e["error"] for e in self.grove["errors"]]


def _supported_values(text: str) -> tuple[str, set[str]] | None:
    found = _SUPPORTED.match(text)
    if not found:
        return None
    return found.group("head"), set(re.findall(r'"([^"]*)"', found.group("values")))


def _same_error(grove: str, mine: str) -> bool:
    if grove == mine:
        return True
    g, m = _supported_values(grove), _supported_values(mine)
    # the documented difference: our enum of profile names is Grove's plus the extra backends
    return g is not None and m is not None and g[0] == m[0] and g[1] <= m[1]


def difference(text: str, grove: dict[str, Any]) -> str | None:
    """None when grove-gitops treats ``text`` as Grove does (but for the documented
    differences); otherwise both verdicts side by side."""
    errors, read = _read(text)
    v = Verdicts(grove, errors)
    v.compared = [e for e in v.ours if UNKNOWN_FIELD not in e]
    side = f"\n--- document\n{text}\n--- Grove: {grove.get('decodeError') or v.grove_errors or 'accepted'}\n--- grove-gitops: {v.ours or 'accepted'}"
    if v.grove_accepts:
        if v.compared:
            return f"Grove accepts, grove-gitops refuses{side}"
        grove_read = effective(grove["defaulted"])
        if read is not None and read != grove_read:
            return f"both accept, but after the defaults Grove reads {grove_read} | grove-gitops {read}{side}"
        return None
    if not v.compared:
        return f"Grove refuses, grove-gitops accepts (but for fields Grove does not know){side}"
    if "decodeError" in grove:
        return None  # both refuse; Go's decoder words its error its own way
    missing = [g for g in v.grove_errors if not any(_same_error(g, m) for m in v.compared)]
    extra = [m for m in v.compared if not any(_same_error(g, m) for g in v.grove_errors)]
    if missing or extra:
        return f"both refuse, with other errors: only Grove {missing} | only grove-gitops {extra}{side}"
    return None
