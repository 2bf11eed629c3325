"""Bradley-Terry reward model: scalar head on a causal LM, pairwise training, scoring for best-of-N."""
from factory_train.rm.model import load_reward_model, score, sequence_rewards, smollm2_gguf_path
from factory_train.rm.trainer import bt_loss, evaluate_pairs, load_pairs, train_rm

__all__ = ["bt_loss", "evaluate_pairs", "load_pairs", "load_reward_model", "score", "sequence_rewards",
           "smollm2_gguf_path", "train_rm"]
