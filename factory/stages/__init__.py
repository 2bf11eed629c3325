"""The pipeline's stages: one module (or package) per `factory` subcommand, each with ``register(sub, add_lake)``
adding its subcommand(s) to the parser, the ``cmd_*`` functions behind them and the stage's lake side (what it
reads, what it commits through :mod:`factory.lake.commit`).

Import direction (checked by tests/foundation/test_layout.py, over the source, nothing imported):

    lake core (factory.lake, factory.errors)  <-  engines  <-  stages  <-  factory.cli

* engines (sandbox, dedup, generation, ingest, recipes, release, report, serve, reward, judging, ...) never
  import ``factory.stages``;
* a stage never imports another stage - except the orchestrators ``demo`` and ``recipe``, which run several;
* nothing imports ``factory.cli`` (it only builds the parser from every stage's ``register``).
"""
