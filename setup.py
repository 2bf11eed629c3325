"""Package layout that pyproject.toml alone cannot say.

* The card's top-level `train/` and `eval/` folders install under unambiguous import names (`factory_train`,
  `factory_eval`), so they never shadow another project's `train` or `eval` module.
* The files the factory reads at run time (`factory.assets.SHIPPED`: data_catalog.yaml, sql/, recipes/,
  checkers/) stay at the repository's top level and are copied into the wheel's `factory/assets/` at build time,
  so an installed factory finds them through its own package and never through the current directory. An
  editable install copies nothing: `factory.assets` then reads the checkout's files.
"""
import shutil
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

MAPPED = {"factory_train": "train", "factory_eval": "eval"}
SHIPPED = ("data_catalog.yaml", "sql", "recipes", "checkers")   # = factory.assets.SHIPPED (tests check they agree)
HERE = Path(__file__).resolve().parent

packages = find_packages(include=["factory", "factory.*"])
for name, folder in MAPPED.items():
    packages += [name + sub[len(folder):] for sub in find_packages(include=[folder, folder + ".*"])]


class build_py_with_assets(build_py):
    """build_py, plus the top-level assets copied into build/lib/factory/assets/ (not for editable installs)."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "factory" / "assets"
        for name in SHIPPED:
            src, dst = HERE / name, target / name
            if dst.is_dir():
                shutil.rmtree(dst)
            if src.is_dir():
                shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                shutil.copy2(src, dst)


setup(packages=packages, package_dir=MAPPED, cmdclass={"build_py": build_py_with_assets})
