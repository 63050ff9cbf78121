"""Presets: the command agents people run (mini-swe-agent, Claude Code), named in one line of an
agents file (``preset: mini-swe-agent``) and expanded there into a full command agent.

A preset is data (``presets.yaml`` beside this module, schema ``config/schema/presets.schema.yaml``):
its command, its install recipe (pinned ``requirements`` for the bwrap venv and an ``image`` for
the container backends, or pinned ``npm`` packages shown read-only under every backend), the
variables that wire the model gateway into what the agent reads, where it writes its transcript,
and ``network: gateway``. Read when the workflow is parsed (``grid.load_agents``); what such an
agent needs at run time is :mod:`sabench.agents.setup`'s.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

from sabench.errors import UserError

PRESETS_FILE = Path(__file__).with_name("presets.yaml")
#: The variable every preset's sandbox finds its task in.
TASK_VARIABLE = "SABENCH_TASK"


@cache
def load_presets() -> dict[str, Any]:
    """The presets file, validated (a broken one is one line naming its field)."""
    from sabench.grid import validate

    data = yaml.safe_load(PRESETS_FILE.read_text(encoding="utf-8"))
    validate(data, "presets.schema.yaml", PRESETS_FILE)
    return data


def preset_names() -> list[str]:
    return sorted(load_presets()["presets"])


def expand_preset(name: str, agent: dict[str, Any], path: str | Path) -> dict[str, Any]:
    """The command agent ``agent`` names with ``preset:``: the preset's keys, then the agent's own
    (``set_env`` merged entry by entry). An agent without a preset is returned as it is."""
    preset_name = agent.get("preset")
    if preset_name is None:
        return agent
    from sabench.grid import did_you_mean

    data = load_presets()
    presets = data["presets"]
    if preset_name not in presets:
        raise UserError(
            path,
            f"{name}.preset",
            f"unknown preset {preset_name!r}{did_you_mean(preset_name, presets)} (known: "
            f"{', '.join(sorted(presets))}; sabench/agents/{PRESETS_FILE.name} defines them)",
            where=(name, "preset"),
        )
    if agent.get("kind", "command") != "command":
        raise UserError(
            path,
            f"{name}.kind",
            f"a preset is a command agent: drop kind: {agent['kind']} (or preset:)",
            where=(name, "kind"),
        )
    preset = {k: v for k, v in presets[preset_name].items() if k != "description"}
    set_env = {TASK_VARIABLE: data["task"], **preset.get("set_env", {})}
    expanded = {"kind": "command", **preset, **agent}
    expanded["set_env"] = {**set_env, **agent.get("set_env", {})}
    expanded.setdefault("description", presets[preset_name]["description"])
    return expanded
