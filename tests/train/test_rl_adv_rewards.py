import pytest
import torch

from factory_train.rl import (
    acecoder_reward, compute_grpo_outcome_advantage, compute_reinforce_plus_plus_baseline_outcome_advantage,
    compute_reinforce_plus_plus_outcome_advantage, compute_rloo_outcome_advantage, group_normalize, hard_reward,
    is_truncated, klear_reward, outcome_to_token_rewards, overlong_mask, overlong_penalty, soft_reward,
    zero_variance_filter,
)


def _token_rewards(scores, T=5):
    mask = torch.ones(len(scores), T)
    mask[0, 3:] = 0
    return outcome_to_token_rewards(torch.tensor(scores), mask), mask


def test_grpo_unbiased_std_and_drgrpo():
    scores = [1.0, 0.0, 0.5, 0.5, 0.2, 0.9]
    index = ["a", "a", "a", "b", "b", "c"]
    tr, mask = _token_rewards(scores)
    assert tr[0, 2] == 1.0 and tr[0].sum() == 1.0  # placed on the last valid token
    adv, _ = compute_grpo_outcome_advantage(tr, mask, index)
    a = torch.tensor([1.0, 0.0, 0.5])
    expect_a = (a - a.mean()) / (a.std(unbiased=True) + 1e-6)
    torch.testing.assert_close(adv[:3, 0], expect_a)
    assert adv[0, 4] == 0  # masked
    b = torch.tensor([0.5, 0.2])
    torch.testing.assert_close(adv[3:5, 1], (b - b.mean()) / (b.std() + 1e-6))
    assert adv[5, 0] == pytest.approx(0.9)  # singleton: mean 0, std 1
    dr, _ = compute_grpo_outcome_advantage(tr, mask, index, norm_adv_by_std_in_grpo=False)
    torch.testing.assert_close(dr[:3, 1], a - a.mean())


def test_zero_variance_group_gives_zero_advantage_and_is_filtered():
    scores = torch.tensor([1.0, 1.0, 0.0, 1.0, 0.5, 0.5])
    index = [0, 0, 1, 1, 2, 2]
    assert group_normalize(scores, index)[[0, 1, 4, 5]].abs().max() == 0
    keep = zero_variance_filter(scores, index)
    assert keep.tolist() == [False, False, True, True, False, False]
    # Klear: acc = full pass; soft scores 0.5 vs 0.7 are both "not solved" → zero variance
    keep_acc = zero_variance_filter([0.5, 0.7, 1.0, 0.2, 0.3], [0, 0, 1, 1, 9], metric="acc")
    assert keep_acc.tolist() == [False, False, True, True, True]


def test_rloo():
    scores = torch.tensor([1.0, 0.0, 0.5])
    adv, _ = compute_rloo_outcome_advantage(scores.unsqueeze(-1), torch.ones(3, 1), [0, 0, 0])
    torch.testing.assert_close(adv[:, 0], torch.tensor([1 - 0.25, 0 - 0.75, 0.5 - 0.5]))


def test_reinforce_pp_whitening():
    torch.manual_seed(0)
    lengths = torch.tensor([7, 3, 5, 1, 6, 4])
    mask = (torch.arange(7) < lengths.unsqueeze(-1)).float()  # right-padded responses
    tr = outcome_to_token_rewards(torch.rand(6), mask)
    adv, ret = compute_reinforce_plus_plus_outcome_advantage(tr, mask)
    valid = adv[mask.bool()]
    assert valid.mean().abs() < 1e-5
    assert valid.var(unbiased=True) == pytest.approx(1.0, rel=1e-4)
    # γ=1 returns equal the outcome score on every valid token before the reward position
    assert ret[0, 0] == pytest.approx(tr[0].sum().item())
    adv_b, _ = compute_reinforce_plus_plus_baseline_outcome_advantage(tr, mask, [0, 0, 0, 1, 1, 1])
    assert adv_b[mask.bool()].mean().abs() < 1e-5


def test_reward_shapes():
    assert soft_reward(4, 16) == 0.25 and soft_reward(0, 0) == 0.0
    assert hard_reward(16, 16) == 1.0 and hard_reward(15, 16) == 0.0 and hard_reward(1, 2, negative=-1) == -1
    assert klear_reward(4, 16) == pytest.approx(2 * 0.25 - 1) and klear_reward(3, 3, format_ok=False) == -1.0
    assert acecoder_reward(5, 5) == 1.5 and acecoder_reward(3, 4) == 0.75
    assert acecoder_reward(3, 4, binary=True) == 0.0 and acecoder_reward(4, 4, binary=True) == 1.5
    assert overlong_penalty(100, 512, 128) == 0.0
    assert overlong_penalty(384 + 64, 512, 128) == pytest.approx(-0.5)
    assert overlong_penalty(512, 512, 128) == pytest.approx(-1.0)


def test_truncation_masking():
    eos, pad = 2, 0
    ids = torch.tensor([[5, 6, 2, 0], [5, 6, 7, 8], [5, 2, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1], [1, 1, 0, 0]]).float()
    trunc = is_truncated(ids, eos, pad, mask)
    assert trunc.tolist() == [False, True, False]
    out = overlong_mask(mask, trunc)
    assert out[1].sum() == 0 and out[0].sum() == 3
    kept = overlong_mask(mask, trunc, scores=torch.tensor([0.0, 0.5, 0.0]), only_if_zero=True)
    assert kept[1].sum() == 4  # DeepCoder: truncated but rewarded → kept
