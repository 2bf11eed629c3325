"""Offline test backbones: byte-level tokenizer and tiny random-init Llama models (no Hub access)."""
from __future__ import annotations

import torch

SPECIALS = ("<|pad|>", "<|endoftext|>", "<|bos|>")


def byte_tokenizer():
    """Byte-level BPE tokenizer with no merges (256 byte symbols + pad/eos/bos), round-trips any text."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={ch: i for i, ch in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(list(SPECIALS))
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token=SPECIALS[0], eos_token=SPECIALS[1],
                                   bos_token=SPECIALS[2])


def tiny_llama_config(tokenizer, hidden_size: int = 32, num_layers: int = 2, **kw):
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=2 * hidden_size,
                       num_hidden_layers=num_layers, num_attention_heads=4, num_key_value_heads=2,
                       max_position_embeddings=1024, pad_token_id=tokenizer.pad_token_id,
                       eos_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.bos_token_id,
                       tie_word_embeddings=True, **kw)


def tiny_causal_lm(tokenizer=None, seed: int = 0, **kw):
    """(LlamaForCausalLM, tokenizer) with random weights."""
    from transformers import LlamaForCausalLM

    tokenizer = tokenizer or byte_tokenizer()
    torch.manual_seed(seed)
    return LlamaForCausalLM(tiny_llama_config(tokenizer, **kw)), tokenizer


def tiny_reward_model(tokenizer=None, seed: int = 0, **kw):
    """(LlamaForSequenceClassification with num_labels=1, tokenizer) with random weights."""
    from transformers import LlamaForSequenceClassification

    tokenizer = tokenizer or byte_tokenizer()
    torch.manual_seed(seed)
    return LlamaForSequenceClassification(tiny_llama_config(tokenizer, num_labels=1, **kw)), tokenizer
