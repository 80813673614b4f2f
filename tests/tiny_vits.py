"""A randomly initialised VITS model with a character tokenizer, written to a folder.

No VITS checkpoint ships in any package available here (and nothing is downloaded): the
tests of ``vits-transformers`` build a tiny one and load it through ``from_pretrained``;
``benchmarks/gpu_tts.py`` builds one of the default (real) size to time the engine.
"""

from __future__ import annotations

import json
from pathlib import Path

TINY = dict(
    hidden_size=16,
    num_hidden_layers=1,
    num_attention_heads=2,
    ffn_dim=32,
    flow_size=16,
    spectrogram_bins=33,
    upsample_initial_channel=16,
    resblock_kernel_sizes=[3],
    resblock_dilation_sizes=[[1, 3, 5]],
    duration_predictor_filter_channels=16,
    duration_predictor_num_flows=1,
    prior_encoder_num_flows=1,
    prior_encoder_num_wavenet_layers=1,
    posterior_encoder_num_wavenet_layers=1,
    depth_separable_num_layers=1,
)


def build_random_vits(folder: Path, *, tiny: bool = True, sampling_rate: int = 24000) -> Path:
    """Write a random VITS model (tiny, or of VitsConfig's default size) plus a character
    tokenizer to ``folder``."""
    import torch
    from transformers import VitsConfig, VitsModel, VitsTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    chars = list("_ abcdefghijklmnopqrstuvwxyz'-.,?!")
    vocab = {c: i for i, c in enumerate(chars)} | {"<unk>": len(chars)}
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    tokenizer = VitsTokenizer(
        str(folder / "vocab.json"),
        pad_token="_",
        unk_token="<unk>",
        phonemize=False,
        add_blank=True,
        normalize=True,
    )
    tokenizer.save_pretrained(folder)
    size = TINY if tiny else {}
    config = VitsConfig(vocab_size=len(vocab), sampling_rate=sampling_rate, **size)
    torch.manual_seed(0)
    VitsModel(config).save_pretrained(folder)
    return folder
