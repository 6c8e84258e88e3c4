"""A tiny random Llama with a real byte-level BPE tokenizer, built offline in a second."""
from __future__ import annotations

import functools

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

TEXT = (
    "Marie Curie was a Polish and naturalised-French physicist and chemist who conducted pioneering research "
    "on radioactivity. Albert Einstein was a German-born theoretical physicist. The Eiffel Tower is in Paris. "
    "Tell me a bio of someone famous. The quick brown fox jumps over the lazy dog 1867 1934 1879 1955. "
) * 4
CHAT_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


@functools.lru_cache(maxsize=1)
def tiny_tokenizer() -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator([TEXT], trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<|im_start|>", eos_token="<|im_end|>", pad_token="<|im_end|>"
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def tiny_model(seed: int = 0, layers: int = 2, heads: int = 6, kv_heads: int = 2, dtype=torch.float32):
    tok = tiny_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=48,
        intermediate_size=96,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=512,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=False,  # tied random weights make greedy repeat its input token
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    # larger weights than the default init, so that attention is peaked and memory matters
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(2.5) if p.dim() == 2 else None
    model.config._attn_implementation = "sdpa"
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    return model.to(dtype).eval()


def tiny_ewe(config=None, seed: int = 0, **model_kwargs):
    from ewe import EWE
    from ewe.config import EWEConfig

    cfg = config if config is not None else EWEConfig.build({"memory": {"unit_tokens": 24}, "retrieval": {"source": None}})
    return EWE(tiny_model(seed, **model_kwargs), tiny_tokenizer(), cfg)


def left_padded(prompts: list, pad_id: int):
    """[1, T_i] prompts as one left-padded batch: ids [B, T] and valid [B, T] (0 on the padding)."""
    width = max(x.shape[1] for x in prompts)
    ids = torch.full((len(prompts), width), pad_id)
    valid = torch.zeros(len(prompts), width, dtype=torch.long)
    for r, x in enumerate(prompts):
        ids[r, width - x.shape[1]:] = x[0]
        valid[r, width - x.shape[1]:] = 1
    return ids, valid
