"""Recipes: each seed paper's data recipe as one YAML file in recipes/ (rules, thresholds, sources, stages).

``load_recipe`` reads and validates one, ``diff_recipes`` compares two recipes' releases. Rule kinds live in
:mod:`factory.recipes.rules`. Running a recipe (``run_recipe``: prepare stages, rules, decisions, releases) is an
orchestrator of stages: :mod:`factory.stages.recipe.run`.
"""
from factory.recipes.spec import Recipe, available_recipes, load_recipe, parse_overrides

__all__ = ["Recipe", "available_recipes", "load_recipe", "parse_overrides", "diff_recipes"]


def __getattr__(name: str):
    if name == "diff_recipes":
        from factory.recipes.diff import diff_recipes
        return diff_recipes
    raise AttributeError(name)
