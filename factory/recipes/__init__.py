"""Recipes: each seed paper's data recipe as one YAML file in recipes/ (rules, thresholds, sources, stages).

``load_recipe`` reads and validates one, ``run_recipe`` applies it to the lake and cuts its releases,
``diff_recipes`` compares two recipes' releases. Rule kinds live in :mod:`factory.recipes.rules`.
"""
from factory.recipes.spec import Recipe, available_recipes, load_recipe, parse_overrides

__all__ = ["Recipe", "available_recipes", "load_recipe", "parse_overrides", "run_recipe", "diff_recipes"]


def __getattr__(name: str):
    if name == "run_recipe":
        from factory.stages.recipe.run import run_recipe
        return run_recipe
    if name == "diff_recipes":
        from factory.recipes.diff import diff_recipes
        return diff_recipes
    raise AttributeError(name)
