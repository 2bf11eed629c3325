"""Tiny random-init Llama model + byte-level BPE tokenizer built offline, for fast unit tests."""
from __future__ import annotations

from .hf_backend import CHATML_TEMPLATE

_CORPUS = '''
def add(a, b):
    """Return the sum of a and b."""
    return a + b

def is_palindrome(s: str) -> bool:
    return s == s[::-1]

class Solution:
    def two_sum(self, nums: list[int], target: int) -> list[int]:
        seen = {}
        for i, x in enumerate(nums):
            if target - x in seen:
                return [seen[target - x], i]
            seen[x] = i
        return []

assert add(1, 2) == 3
Please provide a self-contained Python script that solves the following problem in a markdown code block.
Write a function that returns the number of vowels in a string. Below is a Python script:
```python
import math
print(math.sqrt(16))
```
'''
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<pad>"]


def build_tiny_tokenizer(vocab_size: int = 400):
    """Byte-level BPE trained on a few hundred bytes of code; ChatML specials and chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([_CORPUS] * 4, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<pad>",
                                   bos_token="<|endoftext|>", unk_token=None)
    fast.chat_template = CHATML_TEMPLATE
    return fast


def build_tiny_model(tokenizer=None, seed: int = 0, hidden_size: int = 32, num_layers: int = 2):
    """(LlamaForCausalLM, tokenizer): random weights from ``seed``; a few hundred KB, CPU-fast."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = tokenizer or build_tiny_tokenizer()
    cfg = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=hidden_size * 2,
                      num_hidden_layers=num_layers, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=4096, eos_token_id=tokenizer.eos_token_id,
                      pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                      tie_word_embeddings=True)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model.eval(), tokenizer
