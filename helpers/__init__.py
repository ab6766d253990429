"""Helper library for the LangGraph persistence course.

Modules are named for what they hold: ``checks`` (exercise checks), ``checkpoints``
(stable, readable views of checkpoint history), ``travel_graphs`` (the running example),
``processes`` (real child Python processes), ``build`` (learner copies and outputs),
and so on. Notebooks import from the modules directly.
"""
