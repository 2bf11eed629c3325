"""Shim of SandboxFusion's `sandbox` package: just what its runner tests import (models and an app that
forwards to a live server), so bench/sandboxfusion_suite.py runs those test files unchanged over HTTP."""
