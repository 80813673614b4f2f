"""CTranslate2's scoring primitives: teacher-forced scores of sentences, next-token steps.

CTranslate2 has no step-wise decoder call; ``generate`` with the beam's tokens as a prefix
and ``return_logits_vocab`` gives the next token's logits (one call per step for the whole
beam, the decoder re-reading the short prefix each time: cheap for a few words).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from voiced.api.recognition import NextLogprobs


def forced_scores(
    model: Any, tokenizer: Any, encoded: Any, texts: list[str], frames: int
) -> list[float]:
    """Mean log-probability of each text's tokens given the audio (CTranslate2 Whisper
    ``align``: one decoder pass over the batch, teacher-forced)."""
    import ctranslate2
    import numpy as np

    tokens = [tokenizer.encode(" " + text.strip()) or [tokenizer.eot] for text in texts]
    if getattr(encoded, "device", "cpu") != "cpu":  # one copy per text, built on the host
        encoded = encoded.to_device(ctranslate2.Device.cpu)
    batch = np.repeat(np.asarray(encoded), len(tokens), axis=0)
    view = ctranslate2.StorageView.from_array(np.ascontiguousarray(batch))
    results = model.align(view, list(tokenizer.sot_sequence), tokens, frames)
    return [
        float(np.mean(np.log(np.maximum(np.asarray(r.text_token_probs), 1e-9)))) for r in results
    ]


def next_logprobs(model: Any, encoded: Any) -> NextLogprobs:
    """The grammar search's next-token steps in ``encoded`` (one utterance's window)."""
    import ctranslate2

    if getattr(encoded, "device", "cpu") != "cpu":
        encoded = encoded.to_device(ctranslate2.Device.cpu)
    features = np.asarray(encoded)

    def steps(prompt: list[int], prefixes: list[tuple[int, ...]]) -> list[np.ndarray]:
        return _next_logprobs(model, features, prompt, prefixes)

    return steps


def _next_logprobs(
    model: Any, features: np.ndarray, prompt: list[int], prefixes: list[tuple[int, ...]]
) -> list[np.ndarray]:
    """The log-probabilities of the token after each prefix (batched, one decoder call)."""
    import ctranslate2

    longest = max(len(p) for p in prefixes)
    batch = ctranslate2.StorageView.from_array(
        np.ascontiguousarray(np.repeat(features, len(prefixes), axis=0))
    )
    results = model.generate(
        batch,
        [prompt + list(p) for p in prefixes],
        beam_size=1,
        # CTranslate2 counts this over the prompt too and returns about half: room for one more
        max_length=2 * (len(prompt) + longest + 1),
        return_logits_vocab=True,
        suppress_blank=False,
        suppress_tokens=[],
    )
    rows = []
    for prefix, result in zip(prefixes, results, strict=True):
        logits = np.asarray(result.logits[0], dtype=np.float32)
        if len(logits) <= len(prefix):
            raise RuntimeError("CTranslate2 returned no logits past the prefix")
        row = logits[len(prefix)]
        top = row.max()
        rows.append(row - top - np.log(np.exp(row - top).sum()))
    return rows
