"""Judges turn (submission, SAUs, execution record) into one :class:`~sabench.contracts.Judgment`
per SAU they can judge. :mod:`sabench.judges.registry` names every judge, its module, the sources of
its fingerprint and what it needs; :mod:`sabench.judges.run` is the judge step of one run.
"""
