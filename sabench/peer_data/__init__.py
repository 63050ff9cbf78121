"""Reading other benchmarks' data: SA-Bench's and PaperBench's folder layouts, their run archives and
their judges' verdicts (imported as the ``reference`` judge), and ResearchCodeBench. One module per
concern:

- :mod:`~sabench.peer_data.layouts`: a data folder -> papers, SAU files, replay agents and the
  reference judge's settings (standard library only: it runs at Snakefile parse time);
- :mod:`~sabench.peer_data.archive`: safe extraction of one folder of a ``.tar.gz`` archive;
- :mod:`~sabench.judges.reference`: the ``reference`` judge (SA-Bench verdict files,
  PaperBench ``grade.json``);
- :mod:`~sabench.peer_data.researchcodebench`: ResearchCodeBench's snapshot (git directory or
  checkout) -> papers, one SAU per annotated snippet with the authors' tests as its check, the
  authors' code as a reference submission, and RCB's leaderboard recomputed.
"""
