"""The metered model gateway of a ``command`` agent (``network: gateway``; docs/agents.md, "Model
gateway"): the agent in its sandbox, with no network, reaches one endpoint, which forwards to the
agent's configured model with the real key, counts every call against the run's budget and records
it. :mod:`sabench.gateway.server` is the host side, ``forward.py`` the sandbox's,
:mod:`sabench.gateway.launch` starts the one beside the other, :mod:`sabench.gateway.settings` reads
and checks the config (imported where the agents file is read: nothing heavy here).
"""
