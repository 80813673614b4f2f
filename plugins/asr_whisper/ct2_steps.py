"""Whisper's decoder, one token at a time, in numpy: the grammar search's next-token steps on
a CTranslate2 model, with the keys and values of what each reading said kept between steps.

CTranslate2 has no step-wise decoder call: its ``generate`` re-reads every prefix of the beam
from the start and projects the audio's keys and values once per reading, every step (24
readings: ~1 s of CPU a step for tiny.en on two cores, most of a misheard command's time).
Here the audio's keys and values are projected once per window and shared by the whole beam,
and each reading adds one token to the keys and values of the reading it grew from, so a step
costs about one token's worth of decoder for each reading, plus the vocabulary's logits.

The weights are read from the model's own ``model.bin`` (convert.py), in float32; the audio's
encoding is CTranslate2's. A model stored quantized (int8) has no float weights to read: the
engine then keeps CTranslate2's ``generate`` (ct2_scoring.py).
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from voiced.api.recognition import NextLogprobs

from .convert import ConversionError, ct2_to_state_dict, read_ct2_model

log = logging.getLogger(__name__)

SQRT_HALF = 0.5**0.5
EXP_FLOOR = -80.0
"""Least exponent of a softmax's exponentials (exp(-80) ≈ 2e-35; float32's least normal
number is exp(-87.3))."""
FLOOR = math.log(1e-9)
"""The least log-probability a token of a scored sentence counts with (CTranslate2's)."""


@dataclass(frozen=True)
class _Layer:
    """One decoder layer's weights (transposed for ``x @ w``), named as in transformers."""

    self_norm: tuple[np.ndarray, np.ndarray]
    qkv: tuple[np.ndarray, np.ndarray]  # fused q, k, v projection and its bias (k's is zero)
    self_out: tuple[np.ndarray, np.ndarray]
    cross_norm: tuple[np.ndarray, np.ndarray]
    cross_q: tuple[np.ndarray, np.ndarray]
    cross_kv: np.ndarray  # fused k, v projection of the audio
    cross_v_bias: np.ndarray
    cross_out: tuple[np.ndarray, np.ndarray]
    ffn_norm: tuple[np.ndarray, np.ndarray]
    fc1: tuple[np.ndarray, np.ndarray]
    fc2: tuple[np.ndarray, np.ndarray]


class StepDecoder:
    """A Whisper decoder's weights, for ``steps`` over one window's encoding."""

    def __init__(self, state: dict[str, np.ndarray], heads: int, threads: int = 1) -> None:
        def w(name: str) -> np.ndarray:
            return np.ascontiguousarray(state[name].astype(np.float32))

        def linear(name: str) -> tuple[np.ndarray, np.ndarray]:
            return np.ascontiguousarray(w(f"{name}.weight").T), w(f"{name}.bias")

        def norm(name: str) -> tuple[np.ndarray, np.ndarray]:
            return w(f"{name}.weight"), w(f"{name}.bias")

        from threadpoolctl import ThreadpoolController

        self.blas = ThreadpoolController()
        """One BLAS thread a step: a step's matrices are small, and BLAS threads spinning
        beside CTranslate2's on a busy machine cost more than they give (the vocabulary's
        logits take threads of their own, ``_Vocabulary``)."""
        self.heads = heads
        self.width = state["model.decoder.embed_tokens.weight"].shape[1]
        tied = "proj_out.weight" not in state
        self.output = _Vocabulary(
            w("model.decoder.embed_tokens.weight" if tied else "proj_out.weight"), threads
        )
        self.embed = None if tied else w("model.decoder.embed_tokens.weight")
        """The token embeddings where they are not the vocabulary's projection (Whisper's are)."""
        self.positions = w("model.decoder.embed_positions.weight")
        self.norm = norm("model.decoder.layer_norm")
        self.layers = []
        i = 0
        while f"model.decoder.layers.{i}.fc1.weight" in state:
            p = f"model.decoder.layers.{i}"
            zero = np.zeros_like(w(f"{p}.self_attn.q_proj.bias"))
            qkv_w = np.concatenate(
                [w(f"{p}.self_attn.{x}_proj.weight") for x in ("q", "k", "v")], axis=0
            )
            qkv_b = np.concatenate(
                [w(f"{p}.self_attn.q_proj.bias"), zero, w(f"{p}.self_attn.v_proj.bias")]
            )
            kv_w = np.concatenate(
                [w(f"{p}.encoder_attn.{x}_proj.weight") for x in ("k", "v")], axis=0
            )
            self.layers.append(
                _Layer(
                    norm(f"{p}.self_attn_layer_norm"),
                    (np.ascontiguousarray(qkv_w.T), qkv_b),
                    linear(f"{p}.self_attn.out_proj"),
                    norm(f"{p}.encoder_attn_layer_norm"),
                    linear(f"{p}.encoder_attn.q_proj"),
                    np.ascontiguousarray(kv_w.T),
                    w(f"{p}.encoder_attn.v_proj.bias"),
                    linear(f"{p}.encoder_attn.out_proj"),
                    norm(f"{p}.final_layer_norm"),
                    linear(f"{p}.fc1"),
                    linear(f"{p}.fc2"),
                )
            )
            i += 1

    @classmethod
    def of_model(cls, model_dir: str | Path, threads: int = 1) -> StepDecoder | None:
        """The decoder of the CTranslate2 model in ``model_dir``, its vocabulary's logits on
        ``threads`` threads; None (said at INFO) when it stores no float weights (an int8
        conversion) or is no Whisper model."""
        try:
            model = read_ct2_model(Path(model_dir) / "model.bin")
            state, dims = ct2_to_state_dict(model)
        except (ConversionError, OSError) as exc:
            log.info("the home's search steps on CTranslate2's generate: %s", exc)
            return None
        decoder = {k: v for k, v in state.items() if not k.startswith("model.encoder.")}
        return cls(decoder, dims["decoder_attention_heads"], threads)

    def embedded(self, tokens: list[int]) -> np.ndarray:
        """The embeddings of ``tokens`` (len x d)."""
        return self.output.columns[:, tokens].T if self.embed is None else self.embed[tokens]

    def close(self) -> None:
        """Stop the vocabulary's threads."""
        self.output.close()

    def steps(self, encoded: np.ndarray) -> NextLogprobs:
        """The next-token steps in one window (``encoded``: the encoder's output, 1 x T x d)."""
        return _Steps(self, np.asarray(encoded, dtype=np.float32)[0])

    def forced(
        self, encoded: np.ndarray, prompt: list[int], sequences: list[list[int]], eot: int
    ) -> list[float]:
        """Mean log-probability of each token sequence after ``prompt``, teacher-forced in
        one window, over the text vocabulary (the tokens before ``eot``) and floored at
        1e-9, as CTranslate2's ``align`` gives ``text_token_probs``: the sequences' shared
        beginnings are decoded once, a depth of the tree a step."""
        steps = _Steps(self, np.asarray(encoded, dtype=np.float32)[0])
        said = [tuple(s) for s in sequences]
        logprobs: dict[tuple[int, ...], list[float]] = {s: [] for s in said}
        for depth in range(max(map(len, said), default=0)):
            prefixes = list(dict.fromkeys(s[:depth] for s in said if len(s) > depth))
            rows = _log_softmax(steps.logits(prompt, prefixes)[:, :eot])
            at = {prefix: i for i, prefix in enumerate(prefixes)}
            for s in said:
                if len(s) > depth:
                    token = s[depth]
                    value = float(rows[at[s[:depth]], token]) if token < eot else FLOOR
                    logprobs[s].append(max(value, FLOOR))
        return [float(np.mean(logprobs[s])) if s else FLOOR for s in said]


class _Steps:
    """One window's search: the audio's keys and values, and each reading's own."""

    def __init__(self, decoder: StepDecoder, audio: np.ndarray) -> None:
        self.d = decoder
        self.audio_kv = [self._split(audio @ layer.cross_kv, 2) for layer in decoder.layers]
        for layer, (_, v) in zip(decoder.layers, self.audio_kv, strict=True):
            v += layer.cross_v_bias.reshape(self.d.heads, 1, -1)
        self.said: dict[tuple[int, ...], list[tuple[np.ndarray, np.ndarray]]] = {}
        self.prompt: tuple[int, ...] = ()

    def __call__(self, prompt: list[int], prefixes: list[tuple[int, ...]]) -> list[np.ndarray]:
        """The log-probabilities of the token after each prefix, over the whole vocabulary."""
        with self.d.blas.limit(limits=1, user_api="blas"):
            return list(self.d.output.log_softmax(self._hidden(prompt, prefixes)))

    def logits(self, prompt: list[int], prefixes: list[tuple[int, ...]]) -> np.ndarray:
        """The logits of the token after each prefix (prefixes x vocabulary)."""
        with self.d.blas.limit(limits=1, user_api="blas"):
            return self.d.output.logits(self._hidden(prompt, prefixes))

    def _hidden(self, prompt: list[int], prefixes: list[tuple[int, ...]]) -> np.ndarray:
        """The decoder's last hidden state after each prefix (prefixes x d)."""
        if tuple(prompt) != self.prompt:
            self.prompt, self.said = tuple(prompt), {}
        full = [(*prompt, *p) for p in prefixes]
        for sequence in full:  # a reading whose parent was not the last step's: from the start
            if sequence[:-1] not in self.said:
                self._read(sequence[:-1])
        hidden = self._step([s[:-1] for s in full], [s[-1] for s in full])
        self.said = {s: self.said[s] for s in full}  # the next step grows these
        return hidden

    def _read(self, sequence: tuple[int, ...]) -> None:
        """The keys and values of ``sequence`` said token by token from the empty one."""
        self.said.setdefault((), [(self._empty(), self._empty()) for _ in self.d.layers])
        for n in range(1, len(sequence) + 1):
            if sequence[:n] not in self.said:
                self._step([sequence[: n - 1]], [sequence[n - 1]])

    def _empty(self) -> np.ndarray:
        width = self.d.width // self.d.heads
        return np.zeros((self.d.heads, 0, width), dtype=np.float32)

    def _split(self, x: np.ndarray, parts: int) -> list[np.ndarray]:
        """(T, parts*d) -> parts arrays of (heads, T, d/heads)."""
        t = x.shape[0]
        return [
            np.ascontiguousarray(p.reshape(t, self.d.heads, -1).transpose(1, 0, 2))
            for p in np.split(x, parts, axis=1)
        ]

    def _step(self, parents: list[tuple[int, ...]], tokens: list[int]) -> np.ndarray:
        """Each parent said and one token more: the hidden state after it (B x d); the new
        readings' keys and values are kept under ``parent + (token,)``."""
        d = self.d
        x = d.embedded(tokens) + d.positions[[len(p) for p in parents]]  # each at its place
        grown: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in parents]
        for i, layer in enumerate(d.layers):
            cache = [self.said[p][i] for p in parents]
            x = x + self._self_attention(layer, _norm(x, layer.self_norm), cache, grown)
            x = x + self._cross_attention(layer, _norm(x, layer.cross_norm), i)
            h = _norm(x, layer.ffn_norm)
            x = x + _gelu(h @ layer.fc1[0] + layer.fc1[1]) @ layer.fc2[0] + layer.fc2[1]
        for parent, token, kv in zip(parents, tokens, grown, strict=True):
            self.said[(*parent, token)] = kv
        return _norm(x, d.norm)

    def _self_attention(
        self,
        layer: _Layer,
        x: np.ndarray,
        cache: list[tuple[np.ndarray, np.ndarray]],
        grown: list[list[tuple[np.ndarray, np.ndarray]]],
    ) -> np.ndarray:
        heads = self.d.heads
        q, k, v = np.split(x @ layer.qkv[0] + layer.qkv[1], 3, axis=1)
        out = np.empty_like(q)
        width = q.shape[1] // heads
        for b, (old_k, old_v) in enumerate(cache):
            keys = np.concatenate([old_k, k[b].reshape(heads, 1, width)], axis=1)
            values = np.concatenate([old_v, v[b].reshape(heads, 1, width)], axis=1)
            grown[b].append((keys, values))
            out[b] = _attend(q[b].reshape(heads, 1, width), keys, values).reshape(-1)
        return out @ layer.self_out[0] + layer.self_out[1]

    def _cross_attention(self, layer: _Layer, x: np.ndarray, i: int) -> np.ndarray:
        heads = self.d.heads
        q = x @ layer.cross_q[0] + layer.cross_q[1]
        b, width = q.shape[0], q.shape[1] // heads
        keys, values = self.audio_kv[i]
        q = q.reshape(b, heads, width).transpose(1, 0, 2)  # heads x B x width
        out = _attend(q, keys, values)  # heads x B x width
        return out.transpose(1, 0, 2).reshape(b, -1) @ layer.cross_out[0] + layer.cross_out[1]


class _Vocabulary:
    """The vocabulary's projection (the embeddings, tied; vocabulary x d), most of a step's
    time: on several threads, each its own columns of the vocabulary and one BLAS thread. Not
    BLAS's own threads, which spin while they wait: beside another busy process they cost
    twice what they give, where a thread here that waits sleeps."""

    def __init__(self, weights: np.ndarray, threads: int) -> None:
        self.columns = np.ascontiguousarray(weights.T)
        """d x vocabulary: ``x @ columns`` (a product with the rows' transpose takes 1.6x)."""
        size = self.columns.shape[1]
        bounds = np.linspace(0, size, max(1, threads) + 1).astype(int)
        self.parts = [(int(a), int(b)) for a, b in itertools.pairwise(bounds)]
        self.pool = (
            ThreadPoolExecutor(len(self.parts), thread_name_prefix="voiced-vocabulary")
            if len(self.parts) > 1
            else None
        )

    def logits(self, x: np.ndarray) -> np.ndarray:
        """``x @ columns`` (B x vocabulary)."""
        out = np.empty((x.shape[0], self.columns.shape[1]), dtype=np.float32)

        def part(bounds: tuple[int, int]) -> None:
            a, b = bounds
            np.matmul(x, self.columns[:, a:b], out=out[:, a:b])

        self._each(part)
        return out

    def log_softmax(self, x: np.ndarray) -> np.ndarray:
        """The log-probabilities over the vocabulary after ``x`` (B x vocabulary): each
        thread its columns' logits, their largest and the sum of their exponentials."""
        out = np.empty((x.shape[0], self.columns.shape[1]), dtype=np.float32)

        def part(bounds: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
            a, b = bounds
            logits = np.matmul(x, self.columns[:, a:b], out=out[:, a:b])
            top = logits.max(axis=1, keepdims=True)
            return top, _exp(np.subtract(logits, top)).sum(axis=1, keepdims=True)

        tops, sums = (np.concatenate(c, axis=1) for c in zip(*self._each(part), strict=True))
        top = tops.max(axis=1, keepdims=True)
        total = top + np.log((sums * np.exp(tops - top)).sum(axis=1, keepdims=True))

        def normalize(bounds: tuple[int, int]) -> None:
            a, b = bounds
            np.subtract(out[:, a:b], total, out=out[:, a:b])

        self._each(normalize)
        return out

    def _each(self, part: Callable[[tuple[int, int]], Any]) -> list[Any]:
        if self.pool is None:
            return [part(bounds) for bounds in self.parts]
        return list(self.pool.map(part, self.parts))

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False)


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=1, keepdims=True)
    return shifted - np.log(_exp(shifted.copy()).sum(axis=1, keepdims=True))


def _exp(shifted: np.ndarray) -> np.ndarray:
    """``exp`` in place of values at most 0 (each less its row's largest), floored at
    EXP_FLOOR: what falls below float32's normal numbers costs the CPU ten times as much and
    counts for nothing beside the largest (1)."""
    np.maximum(shifted, EXP_FLOOR, out=shifted)
    return np.exp(shifted, out=shifted)


def _attend(q: np.ndarray, keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Scaled dot-product attention per head: q (h, n, w), keys/values (h, t, w)."""
    scores = q @ keys.transpose(0, 2, 1) * (q.shape[-1] ** -0.5)  # a Python float: stays float32
    scores -= scores.max(axis=-1, keepdims=True)
    weights = _exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights @ values


def _norm(x: np.ndarray, weights: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * weights[0] + weights[1]


def _gelu(x: np.ndarray) -> np.ndarray:
    """GELU with erf (Whisper's), erf by Abramowitz and Stegun 7.1.26 (error < 1.5e-7)."""
    z = np.abs(x) * SQRT_HALF
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    erf = np.sign(x) * (1.0 - poly * np.exp(-z * z))
    return 0.5 * x * (1.0 + erf)
