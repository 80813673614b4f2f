"""Engine ``whisper-transformers``: WhisperForConditionalGeneration on torch (ROCm, CUDA or CPU).

ROCm builds of torch expose the GPU as ``torch.cuda``, so one code path serves AMD and NVIDIA.
Greedy decoding runs in a small loop of our own (KV cache, Whisper's suppression and timestamp
rules) rather than ``generate()``: it costs less per token, gives the no-speech probability
for free, and lets the encoder run on a window sized to the utterance, which transformers'
``WhisperEncoder.forward`` refuses (it insists on 3000 frames). Beam search goes through
``generate()`` on the full 30-second window.

A greedy decode that fails Whisper's thresholds is sampled again at rising temperatures
(``best_of`` samples a temperature, one batched decoder pass a step), as the CTranslate2
engine does (fallback.py).

On a ROCm GPU every new input shape makes MIOpen search for its convolution kernels (seconds
on first use), so fitted windows are rounded up to a few buckets, each warmed up at load.

With torchaudio (optional) on a GPU, audio at another rate is resampled there and utterances
can be levelled to a loudness (ITU-R BS.1770) before the features (``device_audio``).
"""

from __future__ import annotations

import inspect
import logging
import time
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field

from voiced.api.devices import DeviceError, choose_torch_device, from_pretrained_dtype
from voiced.api.intents import Transcript

from .choose import Hypothesis
from .common import (
    FULL_WINDOW_S,
    SAMPLE_RATE,
    compression_ratio,
    decoded_transcript,
    judge,
    max_new_tokens,
    pcm16_to_float,
    too_quiet,
    window_seconds,
)
from .device_audio import SoxrAudio, TorchaudioAudio, device_audio
from .fallback import Decode, FallbackOptions, repetitive, with_fallback
from .language import pinned
from .log_mel import LogMel
from .models import ModelError, default_cache_dir, load_error, resolve_transformers
from .segments import spoken_text

log = logging.getLogger(__name__)

MAX_INITIAL_TIMESTAMP_S = 1.0
ROCM_WINDOW_BUCKETS = (5, 10, 15, 20, 30)


def bucket_window(window: int, buckets: tuple[int, ...]) -> int:
    """The smallest bucket that holds a window (the window itself when none is set)."""
    return next((b for b in sorted(buckets) if b >= window), window) if buckets else window


def later_engines(app: Any, name: str) -> list[str]:
    """The ASR engines configured after ``name`` in the app's fallback chain."""
    chain = list(getattr(getattr(getattr(app, "settings", None), "pipeline", None), "asr", []))
    return chain[chain.index(name) + 1 :] if name in chain else []


class WhisperTransformersOptions(FallbackOptions):
    dtype: Literal["auto", "float16", "bfloat16", "float32"] = Field(
        "auto", description="auto: float16 on a GPU, float32 on the CPU"
    )
    cache_dir: str | None = Field(
        None, description="converted models; default $VOICED_CACHE_DIR or ~/.cache/voiced/models"
    )
    cpu_threads: int = Field(
        0, ge=0, description="torch intra-op threads; 0 leaves torch's default"
    )
    when_no_gpu: Literal["defer", "cpu"] = Field(
        "defer",
        description="device auto without a usable GPU: defer = step aside (with the reason) "
        "for the next ASR engine of the chain, which is faster on the CPU, and run on the CPU "
        "only when none follows; cpu = always run here on the CPU",
    )
    window_buckets: list[Annotated[int, Field(ge=1, le=FULL_WINDOW_S)]] | None = Field(
        None,
        description="fitted windows are rounded up to these seconds and each is warmed up at "
        "load; default: 5, 10, 15, 20, 30 on a ROCm GPU (MIOpen tunes every new shape), "
        "none elsewhere; [] turns it off",
    )
    torchaudio: Literal["auto", "on", "off"] = Field(
        "auto",
        description="resampling and loudness with torchaudio on the engine's device: auto = "
        "on a GPU when torchaudio loads (else soxr on the CPU), on = always (a load error "
        "without it), off = never",
    )
    level_lufs: float | None = Field(
        None,
        ge=-70,
        le=0,
        description="level each utterance to this integrated loudness (LUFS, ITU-R BS.1770; "
        "e.g. -23 for quiet satellites) before the features; needs torchaudio; none = off",
    )
    max_gain_db: float = Field(
        30.0, ge=0, description="the most level_lufs may raise an utterance (dB)"
    )


class WhisperTransformersAsr:
    """Whisper on transformers + torch."""

    name = "whisper-transformers"

    def __init__(self, options: WhisperTransformersOptions | None = None, app: Any = None) -> None:
        self.options = options or WhisperTransformersOptions()
        self.app = app
        self.device = "cpu"
        self.dtype = "float32"
        self.reason = ""
        self.model: Any = None
        self._torch: Any = None
        self.buckets: tuple[int, ...] = ()
        self._log_mel: LogMel | None = None
        self._audio: SoxrAudio | TorchaudioAudio = SoxrAudio()
        self._sampler: Any = None  # torch.Generator of the fallback's samples

    # -- loading ---------------------------------------------------------------------------

    def load(self) -> None:
        try:
            import torch
            import transformers
            from transformers import WhisperForConditionalGeneration, WhisperProcessor
        except ImportError as exc:
            raise ModelError(
                f"whisper-transformers needs torch and transformers ({exc}); install them with "
                "pip install 'voiced[gpu]' (on AMD: torch from the ROCm wheel index first)"
            ) from exc
        opts = self.options
        choice = choose_torch_device(opts.device, opts.dtype)
        if choice.device == "cpu" and opts.device == "auto" and opts.when_no_gpu == "defer":
            after = later_engines(self.app, getattr(self, "stage_name", self.name))
            if after:
                raise DeviceError(
                    f"{choice.reason}; {after[0]} serves on the CPU (set when_no_gpu = "
                    '"cpu" to run this engine there anyway)'
                )
        cache = Path(opts.cache_dir).expanduser() if opts.cache_dir else default_cache_dir()
        source, local = resolve_transformers(opts.model, cache)
        if opts.cpu_threads:
            torch.set_num_threads(opts.cpu_threads)
        try:
            model = WhisperForConditionalGeneration.from_pretrained(
                source,
                **from_pretrained_dtype(transformers.__version__, getattr(torch, choice.dtype)),
                attn_implementation="sdpa",
                local_files_only=local or not opts.allow_download,
            )
            self.processor = WhisperProcessor.from_pretrained(
                source, local_files_only=local or not opts.allow_download
            )
        except Exception as exc:
            raise load_error(opts.model, local, exc) from exc
        self.model = model.to(choice.device).eval()
        self._torch = torch
        if opts.temperatures:
            self._sampler = torch.Generator(device=choice.device)
            self._sampler.manual_seed(opts.seed if opts.seed is not None else torch.seed())
        self.device, self.dtype, self.reason = choice.device, choice.dtype, choice.reason
        self._cache_kw = (
            "cache"
            if "cache" in inspect.signature(model.model.decoder.forward).parameters
            else "past_key_values"
        )
        # transformers 4.x encoder layers take a (required) head mask, 5.x none
        layer_params = inspect.signature(model.model.encoder.layers[0].forward).parameters
        self._layer_kw = {"layer_head_mask": None} if "layer_head_mask" in layer_params else {}
        self._setup_tokens()
        extractor = self.processor.feature_extractor
        if self.device.startswith("cuda") and not getattr(extractor, "dither", 0.0):
            self._log_mel = LogMel(extractor, self.device)
        try:
            self._audio, audio_reason = device_audio(self.device, opts.torchaudio)
        except RuntimeError as exc:
            raise ModelError(f"{self.name}: {exc}") from exc
        if opts.level_lufs is not None and not self._audio.levels:
            log.warning("%s: level_lufs is off: %s", self.name, audio_reason)
        if opts.window_buckets is not None:
            self.buckets = tuple(sorted(set(opts.window_buckets)))
        elif choice.backend == "rocm":
            self.buckets = ROCM_WINDOW_BUCKETS
        log.info(
            "%s: %s on %s %s (%s; audio: %s)",
            self.name,
            opts.model,
            self.device,
            self.dtype,
            choice.reason,
            audio_reason,
        )
        if opts.warmup:
            self.warm_up()

    def warm_up(self) -> list[int]:
        """Run each window shape once (MIOpen and cuDNN pick their kernels on first use)."""
        noise = np.random.default_rng(0).normal(0, 0.01, SAMPLE_RATE).astype(np.float32)
        if not self.buckets:
            self._transcribe(noise, "en", warmup=True)
            return []
        with self._torch.inference_mode():
            for window in self.buckets:
                encoded = self._encode(self._features(noise, window))
                timestamps = window < FULL_WINDOW_S
                self._greedy(encoded, self._prompt("en", timestamps), timestamps, 4)
        self._synchronize()
        return list(self.buckets)

    def _synchronize(self) -> None:
        """Wait for the GPU, so that a timing covers the work it names."""
        if self.device.startswith("cuda"):
            self._torch.cuda.synchronize(self.device)

    def _setup_tokens(self) -> None:
        tok = self.processor.tokenizer
        gen = self.model.generation_config
        ids = tok.convert_tokens_to_ids
        self.eot = ids("<|endoftext|>")
        self.sot = ids("<|startoftranscript|>")
        self.no_timestamps = ids("<|notimestamps|>")
        self.timestamp_begin = self.no_timestamps + 1
        self.no_speech_id = (
            ids("<|nocaptions|>") if "<|nocaptions|>" in tok.get_vocab() else ids("<|nospeech|>")
        )
        self.multilingual = bool(getattr(gen, "is_multilingual", False))
        self.lang_to_id = dict(getattr(gen, "lang_to_id", None) or {})
        self.task_to_id = dict(getattr(gen, "task_to_id", None) or {})
        specials = [
            ids(t)
            for t in (
                "<|transcribe|>",
                "<|translate|>",
                "<|startoftranscript|>",
                "<|startofprev|>",
                "<|startoflm|>",
            )
        ]
        suppress = set(gen.suppress_tokens or []) | set(specials) | {self.no_speech_id}
        vocab = self.model.config.vocab_size
        self.suppress = sorted(t for t in suppress if 0 <= t < vocab)
        self.begin_suppress = [
            t for t in (gen.begin_suppress_tokens or [220, self.eot]) if t < vocab
        ]
        self.max_length = int(self.model.config.max_target_positions)

    def close(self) -> None:
        self.model = None

    # -- inference -------------------------------------------------------------------------

    def transcribe(self, audio: bytes, language: str | None = None) -> Transcript:
        return self.transcribe_samples(pcm16_to_float(audio), SAMPLE_RATE, language)

    def transcribe_samples(
        self, samples: np.ndarray, rate: int, language: str | None = None
    ) -> Transcript:
        """Mono float samples at any ``rate``: resampled to 16 kHz here (with torchaudio on
        the engine's device where it is used, else soxr)."""
        if self.model is None:
            raise RuntimeError(f"{self.name}: transcribe() before load()")
        if rate < 1000:
            raise ValueError(f"{self.name}: unusable sample rate {rate} Hz")
        language = pinned(self.name, language, self.options.language, self.multilingual)
        return self._transcribe(np.asarray(samples, dtype=np.float32), language, rate=rate)

    def _prepare(self, samples: np.ndarray, rate: int, data: dict[str, Any]) -> Any:
        """16 kHz audio for the features, levelled when asked: NumPy, or a device tensor."""
        level = self.options.level_lufs if self._audio.levels else None
        if rate == SAMPLE_RATE and level is None:
            return samples
        signal = self._audio.to_target(samples, rate)
        data["audio"] = {"rate": rate, "resampler": self._audio.name}
        if level is not None:
            signal, gain_db = self._audio.level(signal, level, self.options.max_gain_db)
            data["audio"]["gain_db"] = round(gain_db, 1)
        return signal

    def _features(self, signal: Any, window: int) -> Any:
        torch = self._torch
        if isinstance(signal, torch.Tensor):  # prepared on the device
            padded = torch.zeros(window * SAMPLE_RATE, dtype=torch.float32, device=signal.device)
            n = min(signal.shape[-1], padded.shape[0])
            padded[:n] = signal[:n]
            if self._log_mel is not None:
                return self._log_mel(padded).to(getattr(torch, self.dtype))
            padded = padded.cpu().numpy()
        else:
            padded = np.zeros(window * SAMPLE_RATE, dtype=np.float32)
            padded[: len(signal)] = signal[: len(padded)]
        if self._log_mel is not None:  # on the GPU: computed there, no round trip
            return self._log_mel(padded).to(getattr(torch, self.dtype))
        features = self.processor.feature_extractor(
            padded, sampling_rate=SAMPLE_RATE, padding="longest", return_tensors="pt"
        ).input_features[..., : window * 100]
        return features.to(self.device, getattr(self._torch, self.dtype))

    def _encode(self, features: Any) -> Any:
        """WhisperEncoder.forward without its 3000-frame check: positions sliced to the window."""
        enc = self.model.model.encoder
        gelu = self._torch.nn.functional.gelu
        hidden = gelu(enc.conv2(gelu(enc.conv1(features)))).permute(0, 2, 1)
        hidden = hidden + enc.embed_positions.weight[: hidden.shape[1]]
        for layer in enc.layers:
            out = layer(hidden, None, **self._layer_kw)
            hidden = out[0] if isinstance(out, tuple) else out
        return enc.layer_norm(hidden)

    def _prompt(self, language: str | None, timestamps: bool) -> list[int]:
        prompt = [self.sot]
        if self.multilingual:
            lang = f"<|{language}|>"
            if lang not in self.lang_to_id:
                raise ValueError(f"{self.name}: unknown language {language!r}")
            prompt += [self.lang_to_id[lang], self.task_to_id[self.options.task]]
        return prompt if timestamps else [*prompt, self.no_timestamps]

    def _step(self, ids: list[int] | list[list[int]], encoded: Any, cache: Any) -> tuple[Any, Any]:
        """The decoder's logits for one sequence (the first of a batch) and its cache."""
        logits, new_cache = self._steps(ids, encoded, cache)
        return logits[0], new_cache

    def _steps(self, ids: list[int] | list[list[int]], encoded: Any, cache: Any) -> tuple[Any, Any]:
        """The decoder's logits for a batch of sequences (batch, positions, vocabulary)."""
        torch = self._torch
        input_ids = torch.tensor([ids] if isinstance(ids[0], int) else ids, device=self.device)
        kwargs = {self._cache_kw: cache} if cache is not None else {}
        out = self.model.model.decoder(
            input_ids=input_ids, encoder_hidden_states=encoded, use_cache=True, **kwargs
        )
        logits = self.model.proj_out(out.last_hidden_state).float()
        new_cache = out.get("cache") if "cache" in out else out.get("past_key_values")
        return logits, new_cache

    def _detect_language(self, encoded: Any) -> tuple[str, float]:
        torch = self._torch
        logits, _ = self._step([self.sot], encoded, None)
        ids = torch.tensor(list(self.lang_to_id.values()), device=logits.device)
        probs = torch.softmax(logits[-1, ids], dim=-1)
        best = int(torch.argmax(probs))
        return list(self.lang_to_id)[best][2:-2], float(probs[best])

    def _timestamp_rules(self, logits: Any, tokens: list[int]) -> None:
        """OpenAI's ApplyTimestampRules for one sequence (in place)."""
        tb, inf = self.timestamp_begin, float("-inf")
        logits[self.no_timestamps] = inf
        last_ts = len(tokens) >= 1 and tokens[-1] >= tb
        penultimate_ts = len(tokens) < 2 or tokens[-2] >= tb
        if last_ts:
            if penultimate_ts:
                logits[tb:] = inf
            else:
                logits[: self.eot] = inf
        stamps = [t for t in tokens if t >= tb]
        if stamps:
            floor = stamps[-1] if last_ts and not penultimate_ts else stamps[-1] + 1
            logits[tb:floor] = inf
        if not tokens:
            logits[:tb] = inf
            logits[tb + int(MAX_INITIAL_TIMESTAMP_S / 0.02) + 1 :] = inf
        logprobs = self._torch.log_softmax(logits, dim=-1)
        # as a mask, not an `if`: a Python branch on a GPU value waits for the device
        logits[:tb].masked_fill_(
            self._torch.logsumexp(logprobs[tb:], dim=-1) > logprobs[:tb].max(), inf
        )

    def _greedy(
        self, encoded: Any, prompt: list[int], timestamps: bool, budget: int
    ) -> tuple[list[int], float, float]:
        torch = self._torch
        logits, cache = self._step(prompt, encoded, None)
        no_speech_prob = float(torch.softmax(logits[0], dim=-1)[self.no_speech_id])
        step_logits = logits[-1]
        tokens: list[int] = []
        # the sum stays on the device: one device->host copy per token (the token id)
        total = torch.zeros((), dtype=torch.float32, device=step_logits.device)
        suppress = torch.tensor(self.suppress, device=step_logits.device)
        begin = torch.tensor(self.begin_suppress, device=step_logits.device)
        for _ in range(min(budget, self.max_length - len(prompt))):
            step_logits[suppress] = float("-inf")
            if not tokens:
                step_logits[begin] = float("-inf")
            if timestamps:
                self._timestamp_rules(step_logits, tokens)
            best = torch.argmax(step_logits)
            total += torch.log_softmax(step_logits, dim=-1)[best]
            token = int(best)
            if token == self.eot:
                break
            tokens.append(token)
            logits, cache = self._step([token], encoded, cache)
            step_logits = logits[-1]
        return tokens, float(total) / (len(tokens) + 1), no_speech_prob

    def _sample(
        self,
        encoded: Any,
        prompt: list[int],
        timestamps: bool,
        budget: int,
        temperature: float,
        count: int,
    ) -> list[tuple[list[int], float]]:
        """``count`` decodes sampled at ``temperature`` in one batch, each with its average
        log-probability (of the model's own, untempered distribution: OpenAI's score)."""
        torch = self._torch
        batch = encoded.expand(count, -1, -1)
        logits, cache = self._steps([prompt] * count, batch, None)
        step_logits = logits[:, -1]
        tokens: list[list[int]] = [[] for _ in range(count)]
        totals = [0.0] * count
        done = [False] * count
        suppress = torch.tensor(self.suppress, device=step_logits.device)
        begin = torch.tensor(self.begin_suppress, device=step_logits.device)
        for step in range(min(budget, self.max_length - len(prompt))):
            step_logits[:, suppress] = float("-inf")
            if step == 0:
                step_logits[:, begin] = float("-inf")
            if timestamps:
                for row in range(count):
                    self._timestamp_rules(step_logits[row], tokens[row])
            logprobs = torch.log_softmax(step_logits, dim=-1)
            probs = torch.softmax(step_logits / temperature, dim=-1)
            picked = torch.multinomial(probs, 1, generator=self._sampler)[:, 0]
            chosen = [int(t) for t in picked]
            for row, token in enumerate(chosen):
                if done[row]:
                    continue
                totals[row] += float(logprobs[row, token])
                if token == self.eot:
                    done[row] = True
                else:
                    tokens[row].append(token)
            if all(done):
                break
            feed = [[self.eot if done[r] else chosen[r]] for r in range(count)]
            logits, cache = self._steps(feed, batch, cache)
            step_logits = logits[:, -1]
        return [(t, total / (len(t) + 1)) for t, total in zip(tokens, totals, strict=True)]

    def _decoded(
        self,
        tokens: list[int],
        avg_logprob: float,
        no_speech_prob: float,
        seconds: float,
        timestamps: bool,
        budget: int,
        temperature: float = 0.0,
    ) -> Decode:
        """One decode's text and what the fallback judges it by."""
        decode = self.processor.tokenizer.decode
        text_tokens = [t for t in tokens if t < self.eot]
        if timestamps:
            text, dropped = spoken_text(
                tokens,
                self.timestamp_begin,
                seconds,
                lambda ids: decode(ids, skip_special_tokens=True),
            )
        else:
            text, dropped = decode(tokens, skip_special_tokens=True).strip(), 0
        if dropped:  # what ran on past the audio is cut already: judge what is kept
            text_tokens = self.processor.tokenizer.encode(" " + text, add_special_tokens=False)
        loop = ""
        if len(tokens) >= budget and not dropped:
            loop = "spent its whole token budget (a loop)"
        elif repetitive(text_tokens):
            loop = f"a loop: {len(set(text_tokens))} distinct of {len(text_tokens)} tokens"
        return Decode(
            [Hypothesis(text, avg_logprob)],
            no_speech_prob,
            dropped,
            temperature,
            compression_ratio(decode(text_tokens, skip_special_tokens=True)),
            loop,
        )

    def _beam(self, features: Any, language: str | None) -> tuple[list[int], float]:
        kwargs: dict[str, Any] = {"task": self.options.task} if self.multilingual else {}
        if self.multilingual and language:
            kwargs["language"] = language
        out = self.model.generate(
            features,
            num_beams=self.options.beam_size,
            return_dict_in_generate=True,
            output_scores=True,
            max_new_tokens=self.max_length - 4,
            **kwargs,
        )
        tokens = [int(t) for t in out.sequences[0] if int(t) < self.eot]
        score = (
            float(out.sequences_scores[0])
            if getattr(out, "sequences_scores", None) is not None
            else 0.0
        )
        return tokens, score

    def _transcribe(
        self,
        samples: np.ndarray,
        language: str | None,
        warmup: bool = False,
        rate: int = SAMPLE_RATE,
    ) -> Transcript:
        torch, opts = self._torch, self.options
        seconds = len(samples) / rate
        started = time.perf_counter()
        data: dict[str, Any] = {"device": self.device, "dtype": self.dtype}
        quiet = None if warmup else too_quiet(samples, opts)
        if quiet:
            data |= {"rejected": quiet, "window_s": 0}
            return Transcript("", language or "en", self.name, seconds, True, data)
        if seconds > FULL_WINDOW_S:
            raise ValueError(
                f"{self.name}: {seconds:.0f} s of audio; utterances longer than "
                f"{FULL_WINDOW_S} s are not supported by this engine (use whisper-ctranslate2)"
            )
        beam = opts.beam_size > 1
        window = FULL_WINDOW_S if beam else window_seconds(seconds, opts)
        window = bucket_window(window, self.buckets)
        timestamps = window < FULL_WINDOW_S
        with torch.inference_mode():
            features = self._features(self._prepare(samples, rate, data), window)
            self._synchronize()
            t_features = time.perf_counter()
            encoded = self._encode(features)
            self._synchronize()  # else the encoder's time is booked as decoding
            t_encode = time.perf_counter()
            if self.multilingual and language is None:
                language, probability = self._detect_language(encoded)
                data["language_probability"] = round(probability, 3)
            budget = max_new_tokens(seconds, self.max_length)
            prompt = self._prompt(language, timestamps)
            fallback: list[dict[str, Any]] = []
            if beam:
                _, _, no_speech_prob = self._greedy_first(encoded, language)
                tokens, avg_logprob = self._beam(features, language)
                decoded = self._decoded(
                    tokens, avg_logprob, no_speech_prob, seconds, False, self.max_length
                )
            else:
                tokens, avg_logprob, no_speech_prob = self._greedy(
                    encoded, prompt, timestamps, budget
                )
                decoded = self._decoded(
                    tokens, avg_logprob, no_speech_prob, seconds, timestamps, budget
                )
                if not warmup:

                    def decode_at(temperature: float) -> Decode:
                        samples = self._sample(
                            encoded, prompt, timestamps, budget, temperature, opts.best_of
                        )
                        tried = [
                            self._decoded(
                                t, lp, no_speech_prob, seconds, timestamps, budget, temperature
                            )
                            for t, lp in samples
                        ]
                        return max(tried, key=lambda d: d.avg_logprob)

                    decoded, fallback = with_fallback(decoded, opts.temperatures, opts, decode_at)
        text, avg_logprob = decoded.hypotheses[0].text, decoded.avg_logprob
        dropped = decoded.dropped
        self._synchronize()
        done = time.perf_counter()
        verdict = judge(text, avg_logprob, no_speech_prob, opts)
        data |= {
            "window_s": window,
            "avg_logprob": round(avg_logprob, 3),
            "no_speech_prob": round(no_speech_prob, 3),
            **({"fallback": fallback} if fallback else {}),
            "timings_ms": {
                "features": round((t_features - started) * 1000, 1),
                "encode": round((t_encode - t_features) * 1000, 1),
                "decode": round((done - t_encode) * 1000, 1),
                "total": round((done - started) * 1000, 1),
            },
        }
        return decoded_transcript(self.name, text, language, seconds, verdict, data, dropped)

    def _greedy_first(self, encoded: Any, language: str | None) -> tuple[list[int], float, float]:
        logits, _ = self._step(self._prompt(language, False), encoded, None)
        return [], 0.0, float(self._torch.softmax(logits[0], dim=-1)[self.no_speech_id])
