"""Write SmolLM2-135M's architecture (config.json + tokenizer, ~3 MB, no weights) to a directory.

Used with ``bench/train_bench.py --arch DIR`` on machines the 98 MB GGUF cannot reach: step times depend on the
shapes, not on the weight values.

    python bench/export_arch.py .gpu/smollm2-arch
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(out: str) -> None:
    from transformers import AutoConfig, AutoTokenizer

    from factory_train.rm.model import smollm2_gguf_path
    g = smollm2_gguf_path()
    AutoTokenizer.from_pretrained(str(g.parent), gguf_file=g.name).save_pretrained(out)
    AutoConfig.from_pretrained(str(g.parent), gguf_file=g.name).save_pretrained(out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".gpu/smollm2-arch")
