"""Drift injection: mutants of a submission with one known drift each, tied to the SAU it breaks.

From a submission and its SAUs, each mutant changes the code an SAU points at in one way:

=================  =====  ==================================================================
drift type         dim.   what changes
=================  =====  ==================================================================
``value``          D1     a numeric literal of a setting named like the claim's value (``lr =
                          0.05`` -> ``0.005``; integers doubled), wherever that setting holds it
``operator``       D2     the outermost operator of the claim's statement that computes part of
                          what the claim states (``+``<->``-``, ``*``<->``/``, ``**``/``@`` ->
                          ``*``): only where the claim states the operation (a backticked
                          formula, inline math, or prose naming it: "sum", "ratio", "squared")
                          and the operation's operands hold the claim's symbols or terms
``removal``        D3     a named dataset, baseline or metric removed from the code and config:
                          list and dict entries, the statements and definitions that name it
``swap``           D4     the statements of two consecutive steps of the claim swapped in the
                          block that runs them (within the cited lines' functions on SA-Bench)
``normalisation``  any    the calls that normalise (``standardise(X)``, ``F.normalize(h)``,
                          ``self.norm(h)``) replaced by their inputs, for a claim about
                          normalising
``split``          any    the values of a claimed data split (``80/20``, ``20% held out``,
                          ``800/200``) moved: held-out shares and sizes grow by half (0.2 -> 0.3),
                          the training part gives up as much (0.8 -> 0.7), in code and config
``stub``           any    the body of the function that implements the claim replaced by a TODO
                          stub (``raise NotImplementedError``)
=================  =====  ==================================================================

Where the code is comes from the submission's index (:mod:`sabench.index`: named values, functions)
and its Python AST, by general rules (no per-paper lists). A claim's values, formulas, names and steps
are parsed by the static judge's claim parser. For a claim in prose the statement is found by its
terms, or, when another benchmark's judge cited lines for it (SA-Bench's evidence), within those
lines. Edits are splices of the original text at AST positions, so everything else (comments,
layout, other files) stays byte-identical; a mutant whose Python no longer parses is dropped.

Every judge then scores the original and each mutant. Per judge and drift type: **recall** is the
share of mutants whose broken SAU scores lower than on the original; the **false-alarm rate** is the
share of the other SAUs of the run whose score changed. Where the code can run (the demo papers),
the original and each mutant are first executed in the sandbox (:mod:`~sabench.drift.execution`),
so the exec judge's checks and expected results see what that code does; its recall is also split
by the basis that decided the SAU (check or expected result). A sandbox fault is counted, never
scored.

Modules: :mod:`~sabench.drift.mutants` (the mutant, the submission and its Python file model),
one per drift type (:mod:`~sabench.drift.values`, :mod:`~sabench.drift.operators`,
:mod:`~sabench.drift.removal`, :mod:`~sabench.drift.swap`, :mod:`~sabench.drift.normalisation`,
:mod:`~sabench.drift.split`, :mod:`~sabench.drift.stub`),
:mod:`~sabench.drift.make` (all of them for one submission), :mod:`~sabench.drift.execution`
(running them in the sandbox) and :mod:`~sabench.drift.evaluate` (judging, tables, the CLI). Standalone::

    python -m sabench.drift SUBMISSION --saus saus.parquet --out drift.parquet
"""

from sabench.drift.evaluate import (
    BASIS_SUMMARY_COLUMNS,
    DRIFT_COLUMNS,
    DRIFT_SUMMARY_COLUMNS,
    basis_summary,
    drift_frame,
    drift_results,
    drift_summary,
    exec_basis,
    judge_mutants,
    main,
    scored,
)
from sabench.drift.execution import DRIFT_RUNTIME, Execution, sandbox_execution
from sabench.drift.make import make_mutants
from sabench.drift.mutants import DRIFT_TYPES, Mutant, Submission
from sabench.drift.normalisation import normalisation_mutant
from sabench.drift.operators import (
    PROSE_TIE_SHARE,
    claim_operations,
    locate_statement,
    operator_mutant,
)
from sabench.drift.removal import removal_mutant
from sabench.drift.split import claimed_split, split_mutant
from sabench.drift.stub import STUB_BODY, locate_function, stub_mutant
from sabench.drift.swap import swap_mutant
from sabench.drift.values import value_mutant

__all__ = [
    "BASIS_SUMMARY_COLUMNS",
    "DRIFT_COLUMNS",
    "DRIFT_RUNTIME",
    "DRIFT_SUMMARY_COLUMNS",
    "DRIFT_TYPES",
    "PROSE_TIE_SHARE",
    "STUB_BODY",
    "Execution",
    "Mutant",
    "Submission",
    "basis_summary",
    "claim_operations",
    "claimed_split",
    "drift_frame",
    "drift_results",
    "drift_summary",
    "exec_basis",
    "judge_mutants",
    "locate_function",
    "locate_statement",
    "main",
    "make_mutants",
    "normalisation_mutant",
    "operator_mutant",
    "removal_mutant",
    "sandbox_execution",
    "scored",
    "split_mutant",
    "stub_mutant",
    "swap_mutant",
    "value_mutant",
]
