"""Bradley-Terry RM: loss vs the TRL formula, last-token pooling under padding, training on tiny pairs."""
import json
import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
import torch.nn.functional as F

from factory_train.rm import bt_loss, load_reward_model, score, sequence_rewards, train_rm
from factory_train.rm.model import encode, pad_batch
from factory_train.rm.trainer import split_pairs, tokenize_pairs


def _pairs(n_prompts=12, per_prompt=2):
    rows = []
    for i in range(n_prompts):
        for j in range(per_prompt):
            body = f"def f{i}_{j}(x):\n    return x + {i + j}\n"
            rows.append({"prompt": f"# task {i}\n", "chosen": body + "# ok\n", "rejected": body + "# bad!!\n",
                         "margin": 0.5})
    return rows


def _write(rows, path):
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def test_bt_loss_matches_trl_formula():
    torch.manual_seed(0)
    rc, rr, m = torch.randn(16), torch.randn(16), torch.rand(16)
    loss, met = bt_loss(rc, rr, m, center_rewards_coefficient=0.01)
    ref = -F.logsigmoid(rc - rr - m).mean() + 0.01 * torch.mean((rc + rr) ** 2)
    assert loss.item() == pytest.approx(ref.item(), rel=1e-6)
    assert met["accuracy"] == pytest.approx((rc > rr).float().mean().item())
    assert met["margin"] == pytest.approx((rc - rr).mean().item(), abs=1e-6)
    plain, _ = bt_loss(rc, rr)
    assert plain.item() == pytest.approx(torch.log1p(torch.exp(rr - rc)).mean().item(), rel=1e-5)


def test_last_token_pooling_left_right_padding():
    model, tok = load_reward_model("tiny")
    texts = ["short", "a much longer piece of text\n", "def f(): pass"]
    alone = [score([t], model, tok)[0] for t in texts]
    for side in ("left", "right"):
        assert score(texts, model, tok, padding_side=side) == pytest.approx(alone, abs=1e-5)
    # pooled value equals the head applied at the EOS token of an unpadded forward
    ids = encode(tok, texts[1])
    x, mask = pad_batch([ids], tok.pad_token_id)
    hidden = model.model(input_ids=x, attention_mask=mask)[0]
    assert sequence_rewards(model, x, mask).item() == pytest.approx(model.score(hidden[0, -1]).item(), abs=1e-5)


def test_split_by_prompt_has_no_leak():
    train, held = split_pairs(_pairs(10), 0.2, seed=3)
    assert held and train
    assert not {r["prompt"] for r in train} & {r["prompt"] for r in held}
    assert len(train) + len(held) == 20


def test_overlong_pairs_dropped_or_truncated():
    _, tok = load_reward_model("tiny")
    rows = [{"prompt": "p", "chosen": "x" * 50, "rejected": "y"}, {"prompt": "p", "chosen": "a", "rejected": "b"}]
    assert len(tokenize_pairs(rows, tok, 20)) == 1
    trunc = tokenize_pairs(rows, tok, 20, overlong="truncate")
    assert len(trunc) == 2 and len(trunc[0]["chosen"]) == 20 and trunc[0]["chosen"][-1] == tok.eos_token_id


def test_train_rm_tiny_learns_and_saves(tmp_path):
    path = _write(_pairs(16), tmp_path / "pairs.parquet")
    res = train_rm(path, model="tiny", out_dir=tmp_path / "out", epochs=6, lr=3e-3, batch_size=8,
                   max_length=128, eval_fraction=0.25, seed=0, run_id="t")
    assert res["n_train"] == 24 and res["n_eval"] == 8
    train_rows = [h for h in res["history"] if h["split"] == "train"]
    assert train_rows[-1]["loss"] < train_rows[0]["loss"]
    assert res["eval"]["accuracy"] >= 0.9
    records = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert records == res["metrics"]
    assert {"run_id", "kind", "step", "epoch", "split", "metric", "value"} <= set(records[0])
    assert any(r["split"] == "eval" and r["metric"] == "accuracy" for r in records)
    # reload the checkpoint as a plain HF SeqCls model and score with it
    from transformers import AutoModelForSequenceClassification
    ck = AutoModelForSequenceClassification.from_pretrained(res["checkpoint"])
    assert ck.config.num_labels == 1 and ck.config.pad_token_id is not None
    good, bad = score(["# task 99\ndef g(x):\n    return x\n# ok\n", "# task 99\ndef g(x):\n    return x\n# bad!!\n"],
                      res["checkpoint"])
    assert good > bad


def test_train_rm_reads_parquet_directory(tmp_path):
    d = tmp_path / "pairs"
    d.mkdir()
    rows = _pairs(6)
    _write(rows[:6], d / "part-0.parquet")
    _write(rows[6:], d / "part-1.parquet")
    res = train_rm(d, model="tiny", out_dir=tmp_path / "o", epochs=1, batch_size=4, max_length=64,
                   eval_fraction=0.0, save=False, use_margin=False)
    assert res["n_train"] == 12 and res["checkpoint"] is None and not math.isnan(res["step_time_s"])


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_matches_trl_reward_trainer(tmp_path):
    """Same tokens and same loss as TRL's RewardTrainer.compute_loss on one batch."""
    trl = pytest.importorskip("trl")
    from datasets import Dataset

    model, tok = load_reward_model("tiny")
    rows = _pairs(4)
    args = trl.RewardConfig(output_dir=str(tmp_path / "trl"), bf16=False, gradient_checkpointing=False,
                            use_cpu=True, report_to="none", max_length=256, per_device_train_batch_size=4)
    trainer = trl.RewardTrainer(model=model, args=args, processing_class=tok,
                                train_dataset=Dataset.from_list(rows))
    ours = tokenize_pairs(rows, tok, 256)
    theirs = trainer.train_dataset
    assert [o["chosen"] for o in ours] == list(theirs["chosen_ids"])
    assert [o["rejected"] for o in ours] == list(theirs["rejected_ids"])
    batch = trainer.data_collator([theirs[i] for i in range(4)])
    model.eval()
    with torch.no_grad():
        trl_loss = trainer.compute_loss(model, dict(batch))
        ids, mask = pad_batch([o["chosen"] for o in ours[:4]] + [o["rejected"] for o in ours[:4]], tok.pad_token_id)
        rc, rr = sequence_rewards(model, ids, mask).chunk(2)
        our_loss, _ = bt_loss(rc, rr, torch.tensor([o["margin"] for o in ours[:4]]))
    assert our_loss.item() == pytest.approx(trl_loss.item(), rel=1e-5)


def test_top_layers_only_freezes_the_rest_and_still_learns(tmp_path):
    from factory_train.rm.model import load_reward_model
    from factory_train.rm.trainer import freeze_below

    model, _ = load_reward_model("tiny")
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    n = freeze_below(model, 1)
    trainable = {name for name, p in model.named_parameters() if p.requires_grad}
    assert trainable and all(".layers.1." in t or t.startswith(("score", "model.norm")) for t in trainable)
    assert n == sum(p.numel() for p in model.parameters() if p.requires_grad) < sum(p.numel() for p in
                                                                                  model.parameters())
    path = _write(_pairs(16), tmp_path / "pairs.parquet")
    res = train_rm(path, model=model, tokenizer=load_reward_model("tiny")[1], out_dir=tmp_path / "o", epochs=6,
                   lr=3e-3, batch_size=8, max_length=128, eval_fraction=0.25, save=False, train_top_layers=1)
    train_rows = [h for h in res["history"] if h["split"] == "train"]
    assert train_rows[-1]["loss"] < train_rows[0]["loss"]
    after = dict(model.named_parameters())
    frozen = [name for name in before if name not in trainable]
    assert frozen and all(torch.equal(before[name], after[name]) for name in frozen)
