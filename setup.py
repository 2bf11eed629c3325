"""Package layout that pyproject.toml alone cannot say: the card's top-level `train/` and `eval/` folders install
under unambiguous import names (`factory_train`, `factory_eval`), so they never shadow another project's `train`
or `eval` module."""
from setuptools import find_packages, setup

MAPPED = {"factory_train": "train", "factory_eval": "eval"}

packages = find_packages(include=["factory", "factory.*"])
for name, folder in MAPPED.items():
    packages += [name + sub[len(folder):] for sub in find_packages(include=[folder, folder + ".*"])]

setup(packages=packages, package_dir=MAPPED)
