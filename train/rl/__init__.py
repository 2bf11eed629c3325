"""RL pieces: policy losses, advantage estimators, reward shapes/filters, entropy control, GRPO loop."""
from factory_train.rl.advantages import (
    ADV_ESTIMATORS, compute_drgrpo_outcome_advantage, compute_grpo_outcome_advantage,
    compute_reinforce_plus_plus_baseline_outcome_advantage, compute_reinforce_plus_plus_outcome_advantage,
    compute_rloo_outcome_advantage, group_normalize, masked_whiten, outcome_to_token_rewards,
)
from factory_train.rl.losses import (
    AGG_MODES, POLICY_LOSSES, AdaptiveEntropyController, PolicyLossConfig, agg_loss, cispo_loss,
    entropy_from_logits, get_policy_loss_fn, gppo_loss, kl_penalty, ppo_clip_loss, reinforce_loss, sft_loss,
)
from factory_train.rl.loop import grpo_loop, policy_update
from factory_train.rl.rewards import (
    acecoder_reward, hard_reward, is_truncated, klear_reward, overlong_mask, overlong_penalty, soft_reward,
    zero_variance_filter,
)

__all__ = [n for n in dir() if not n.startswith("_") and n not in {"advantages", "losses", "rewards", "loop"}]
