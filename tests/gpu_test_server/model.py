"""The test server's model: a Llama-architecture causal LM built from a config with random
weights (no download), and a word-level tokenizer that needs no vocabulary file.

Sizes:
- `gpu`: 8 layers, hidden 8192, MLP 28672, vocabulary 32,000 (~7.5 B parameters, ~15 GB in
  bf16). One batch-1 decode step reads every weight once (~3-4 ms of HBM traffic on an
  H200) while transformers' eager Python work per step is ~1-2 ms for 8 layers: decoding is
  GPU-bound, like a real serving deployment, so speculative decoding can win or lose.
- `tiny`: 2 layers, hidden 64: runs on a CPU in milliseconds (tests, CI-less checks).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import torch
from transformers import AutoModelForCausalLM, LlamaConfig

SIZES = {
    "gpu": {
        "hidden_size": 8192,
        "intermediate_size": 28672,
        "num_hidden_layers": 8,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "vocab_size": 32000,
        "max_position_embeddings": 8192,
    },
    "tiny": {
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 1024,
        "max_position_embeddings": 8192,
    },
}


def build_model(size: str, device: str, seed: int = 0) -> torch.nn.Module:
    """Random weights from a fixed seed: baseline and variant servers run the same model."""
    config = LlamaConfig(**SIZES[size], bos_token_id=None, eos_token_id=None, pad_token_id=0)
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    torch.manual_seed(seed)
    with torch.device(device):
        try:  # transformers ≥ 4.56 calls it dtype, older versions torch_dtype
            model = AutoModelForCausalLM.from_config(config, dtype=dtype)
        except TypeError:
            model = AutoModelForCausalLM.from_config(config, torch_dtype=dtype)
    model.eval()
    # no EOS: every answer has exactly max_tokens tokens (vLLM's ignore_eos)
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    return model


@dataclass(frozen=True)
class WordTokenizer:
    """Whitespace words hashed to ids (the same word → the same id, so n-gram lookup in the
    prompt works); an id decodes to ` w<id>`. Good enough to count and stream tokens."""

    vocab_size: int

    def encode(self, text: str) -> list[int]:
        return [1 + zlib.crc32(w.encode()) % (self.vocab_size - 1) for w in text.split()] or [1]

    def decode(self, ids: list[int]) -> str:
        return "".join(f" w{i}" for i in ids)
