"""Whisper's decoder of a transformers model, as the searches and the scoring call it.

Every row of a batch reads the same encoder output, so the cross-attention's keys and values
are computed once, for one row, and copied to the batch (the rows' own self-attention is all
that differs); the vocabulary projection runs only on the positions asked about. On the CPU
the projection multiplies by a transposed copy of its weight: a step's few rows read the
whole (vocabulary x width) matrix, which torch's ``linear`` does 2-3 times slower for them.
"""

from __future__ import annotations

import inspect
from typing import Any

ROWS = 16
"""The most rows of a scoring batch at once (each copies the window's cross-attention)."""


class DecoderCalls:
    """The decoder and output projection of a ``WhisperForConditionalGeneration``."""

    def __init__(self, torch: Any, model: Any) -> None:
        self.torch = torch
        self.decoder = model.model.decoder
        self.project = model.proj_out
        weight = model.proj_out.weight
        self.weight_t = weight.t().contiguous() if weight.device.type == "cpu" else None
        parameters = inspect.signature(self.decoder.forward).parameters
        self.cache_kw = "cache" if "cache" in parameters else "past_key_values"

    def hidden(self, rows: list[list[int]], encoded: Any, cache: Any = None) -> tuple[Any, Any]:
        """The decoder's last hidden states of ``rows`` (equal lengths) after ``cache``, and
        the cache with them; ``encoded``: the encoder output, one row or one a row."""
        torch = self.torch
        ids = torch.tensor(rows, device=encoded.device)
        kwargs = {self.cache_kw: cache} if cache is not None else {}
        out = self.decoder(
            input_ids=ids,
            encoder_hidden_states=encoded.expand(len(rows), -1, -1),
            use_cache=True,
            **kwargs,
        )
        new_cache = out.get("cache") if "cache" in out else out.get("past_key_values")
        return out.last_hidden_state, new_cache

    def logits(self, hidden: Any) -> Any:
        """The vocabulary's logits of hidden states, in float32."""
        if self.weight_t is not None:
            return (hidden @ self.weight_t).float()
        return self.project(hidden).float()

    def steps(self, rows: list[list[int]], encoded: Any, cache: Any) -> tuple[Any, Any]:
        """Logits of every position of ``rows`` (rows, positions, vocabulary) and the cache."""
        hidden, cache = self.hidden(rows, encoded, cache)
        return self.logits(hidden), cache

    def reorder(self, cache: Any, parents: list[int], rows: int, device: Any) -> None:
        """Keep the rows of ``cache`` (``rows`` of them) named by ``parents``: a beam search's
        step. The cross-attention's rows are all alike: copied only when their number changes."""
        index = self.torch.tensor(parents, device=device)
        self_attention = getattr(cache, "self_attention_cache", None)
        if self_attention is None or len(parents) != rows:
            cache.reorder_cache(index)
        else:
            self_attention.reorder_cache(index)

    def after(self, prompt: list[int], rows: list[list[int]], encoded: Any) -> Any:
        """Hidden states of ``rows`` (padded to one length) each read after ``prompt``,
        which is read once: (rows, positions, width)."""
        torch = self.torch
        _, cache = self.hidden([prompt], encoded)
        cache.reorder_cache(torch.zeros(len(rows), dtype=torch.long, device=encoded.device))
        hidden, _ = self.hidden(rows, encoded, cache)
        return hidden
