"""Reading other benchmarks' data: SA-Bench's and PaperBench's folder layouts, their run archives and
their judges' verdicts (imported as the ``reference`` judge). One module per concern:

- :mod:`~sabench.benchmarks_io.layouts`: a data folder -> papers, SAU files, replay agents and the
  reference judge's settings (standard library only: it runs at Snakefile parse time);
- :mod:`~sabench.benchmarks_io.archive`: safe extraction of one folder of a ``.tar.gz`` archive;
- :mod:`~sabench.benchmarks_io.reference`: the ``reference`` judge (SA-Bench verdict files,
  PaperBench ``grade.json``).
"""
