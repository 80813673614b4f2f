"""Engine ``whisper-transformers``: WhisperForConditionalGeneration on torch (ROCm, CUDA or CPU).

ROCm builds of torch expose the GPU as ``torch.cuda``, so one code path serves AMD and NVIDIA.

It offers the recognizer's ``Decoder`` (voiced.api.recognition) with torch primitives, and its
``transcribe`` and ``draft`` run the same driver as whisper-ctranslate2 (``listen/driver.py``):
N-best choice, temperature fallback, rescoring with the constrained search, the prompted
retry and the second look. The primitives:

- ``encode``: the encoder on a window sized to the utterance, which transformers'
  ``WhisperEncoder.forward`` refuses (it insists on 3000 frames): positions sliced to it;
- ``generate``: CTranslate2's beam search (N-best) or samples at a temperature, with
  Whisper's suppression and timestamp rules, in loops of our own over the KV cache
  (``torch_search.py``);
- ``forced_scores`` and ``next_logprobs``: one decoder pass over a batch (``torch_scoring.py``);
- ``transcribe_long``: transformers' own long-form ``generate`` past 30 seconds.

On a ROCm GPU every new input shape makes MIOpen search for its convolution kernels (seconds
on first use), so fitted windows are rounded up to a few buckets, each warmed up at load.

With torchaudio (optional) on a GPU, audio at another rate is resampled there and utterances
can be levelled to a loudness (ITU-R BS.1770) before the features (``device_audio``).
"""

from __future__ import annotations

import inspect
import logging
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from voiced.api.devices import DeviceError, choose_torch_device, from_pretrained_dtype
from voiced.api.intents import Transcript
from voiced.api.recognition import Decode, NextLogprobs

from .common import (
    FULL_WINDOW_S,
    HOP_SAMPLES,
    SAMPLE_RATE,
    max_new_tokens,
    pcm16_to_float,
    window_audio,
    window_seconds,
)
from .device_audio import SoxrAudio, TorchaudioAudio, device_audio
from .language import check_languages, pinned
from .listen.driver import recognize
from .listen.homes import Homes
from .listen.options import RecognitionOptions
from .listen.state import DRAFT, FULL, WARMUP, Plan
from .log_mel import LogMel
from .models import ModelError, default_cache_dir, load_error, resolve_transformers
from .readings import readings_decode, whisper_prompt
from .torch_decoder import DecoderCalls
from .torch_long import long_form
from .torch_scoring import forced_scores, next_logprobs
from .torch_search import Rules, beam_search, sample

log = logging.getLogger(__name__)

ROCM_WINDOW_BUCKETS = (5, 10, 15, 20, 30)


def bucket_window(window: int, buckets: tuple[int, ...]) -> int:
    """The smallest bucket that holds a window (the window itself when none is set)."""
    return next((b for b in sorted(buckets) if b >= window), window) if buckets else window


def later_engines(app: Any, name: str) -> list[str]:
    """The ASR engines configured after ``name`` in the app's fallback chain."""
    chain = list(getattr(getattr(getattr(app, "settings", None), "pipeline", None), "asr", []))
    return chain[chain.index(name) + 1 :] if name in chain else []


def decode_steps(prompt_length: int, budget: int) -> int:
    """The most tokens a decode writes: what CTranslate2 allows the same request (it counts
    its ``max_length`` over the prompt and halves it; ``ct2_scoring.py``), so that both
    engines' decodes stop alike."""
    total = prompt_length + budget
    return max(1, min(total // 2, budget + 1))


class WhisperTransformersOptions(RecognitionOptions):
    section: ClassVar[str] = "stages.asr.whisper-transformers"
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
        self.processor: Any = None
        self.multilingual = False
        self.scores_beside_steps = False
        """Forced scores and the search's steps share torch's threads (and a GPU): one at a
        time (the held-out set on the CPU: the rescoring ×1.29 with them side by side)."""
        self.max_length = 448
        self._torch: Any = None
        self._calls: DecoderCalls | None = None
        self.buckets: tuple[int, ...] = ()
        self._log_mel: LogMel | None = None
        self._audio: SoxrAudio | TorchaudioAudio = SoxrAudio()
        self._sampler: Any = None  # torch.Generator of the fallback's samples
        self._tokenizers: dict[str | None, Any] = {}
        self._rules: dict[tuple[str | None, bool], Rules] = {}
        self._layer_kw: dict[str, Any] = {}
        self.lang_to_id: dict[str, int] = {}
        self.homes = Homes(app, self)

    # -- loading ---------------------------------------------------------------------------

    def load(self) -> None:
        torch = _import_torch()
        opts = self.options
        choice = choose_torch_device(opts.device, opts.dtype)
        self._defer_without_gpu(choice)
        if opts.cpu_threads:
            torch.set_num_threads(opts.cpu_threads)
        self._load_model(torch, choice)
        self._torch = torch
        if opts.temperatures:
            self._sampler = torch.Generator(device=choice.device)
            self._sampler.manual_seed(opts.seed if opts.seed is not None else torch.seed())
        self.device, self.dtype, self.reason = choice.device, choice.dtype, choice.reason
        self._setup_tokens()
        audio_reason = self._setup_audio()
        if opts.window_buckets is not None:
            self.buckets = tuple(sorted(set(opts.window_buckets)))
        elif choice.backend == "rocm":
            self.buckets = ROCM_WINDOW_BUCKETS
        check_languages(self.name, opts.model, self.multilingual, opts.language, self.app)
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
        self.homes.build(opts)

    def _defer_without_gpu(self, choice: Any) -> None:
        """Step aside for the next engine of the chain on a machine without a usable GPU."""
        opts = self.options
        if choice.device == "cpu" and opts.device == "auto" and opts.when_no_gpu == "defer":
            after = later_engines(self.app, getattr(self, "stage_name", self.name))
            if after:
                raise DeviceError(
                    f"{choice.reason}; {after[0]} serves on the CPU (set when_no_gpu = "
                    '"cpu" to run this engine there anyway)'
                )

    def _load_model(self, torch: Any, choice: Any) -> None:
        import transformers
        from transformers import WhisperForConditionalGeneration, WhisperProcessor

        opts = self.options
        cache = Path(opts.cache_dir).expanduser() if opts.cache_dir else default_cache_dir()
        source, local = resolve_transformers(opts.model, cache)
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
        self._calls = DecoderCalls(torch, self.model)
        # transformers 4.x encoder layers take a (required) head mask, 5.x none
        layer = inspect.signature(model.model.encoder.layers[0].forward).parameters
        self._layer_kw = {"layer_head_mask": None} if "layer_head_mask" in layer else {}

    def _setup_audio(self) -> str:
        """The feature and audio paths of the device; says which audio path it took."""
        extractor = self.processor.feature_extractor
        if self.device.startswith("cuda") and not getattr(extractor, "dither", 0.0):
            self._log_mel = LogMel(extractor, self.device)
        try:
            self._audio, reason = device_audio(self.device, self.options.torchaudio)
        except RuntimeError as exc:
            raise ModelError(f"{self.name}: {exc}") from exc
        if self.options.level_lufs is not None and not self._audio.levels:
            log.warning("%s: level_lufs is off: %s", self.name, reason)
        return reason

    def _setup_tokens(self) -> None:
        if getattr(self.processor.tokenizer, "backend_tokenizer", None) is None:
            raise ModelError(f"{self.name}: {self.options.model} has no fast tokenizer")
        gen = self.model.generation_config
        self.multilingual = bool(getattr(gen, "is_multilingual", False))
        self.lang_to_id = dict(getattr(gen, "lang_to_id", None) or {})
        self.max_length = int(self.model.config.max_target_positions)
        self._tokenizers.clear()
        self._rules.clear()

    def warm_up(self) -> list[int]:
        """Run each window shape once (MIOpen and cuDNN pick their kernels on first use)."""
        noise = np.random.default_rng(0).normal(0, 0.01, SAMPLE_RATE).astype(np.float32)
        if not self.buckets:
            self._decode(noise, "en", WARMUP)
            return []
        for window in self.buckets:
            self.generate(self.encode(noise, window), 1.0, window, "en")
        self._synchronize()
        return list(self.buckets)

    def _synchronize(self) -> None:
        """Wait for the GPU, so that a timing covers the work it names."""
        if self.device.startswith("cuda"):
            self._torch.cuda.synchronize(self.device)

    def warm_home(self, home: Any, language: str | None) -> None:
        """Build ``home``'s token grammar for the constrained search now, off the hot path (a
        pool worker given a front end's home)."""
        self.homes.warm(self.options, home, language)

    def close(self) -> None:
        self.model = None
        self._calls = None
        self._tokenizers.clear()

    # -- transcription ---------------------------------------------------------------------

    def transcribe(self, audio: bytes, language: str | None = None) -> Transcript:
        return self.transcribe_samples(pcm16_to_float(audio), SAMPLE_RATE, language)

    def draft(self, audio: bytes, language: str | None = None) -> Transcript:
        """A quick first reading (the N-best and its choice of a command, but no rescoring and
        no prompted retry), as whisper-ctranslate2's draft."""
        return self.transcribe_samples(pcm16_to_float(audio), SAMPLE_RATE, language, DRAFT)

    def transcribe_samples(
        self, samples: np.ndarray, rate: int, language: str | None = None, plan: Plan = FULL
    ) -> Transcript:
        """Mono float samples at any ``rate``: resampled to 16 kHz here (with torchaudio on
        the engine's device where it is used, else soxr)."""
        if self.model is None:
            raise RuntimeError(f"{self.name}: transcribe() before load()")
        if rate < 1000:
            raise ValueError(f"{self.name}: unusable sample rate {rate} Hz")
        language = pinned(self.name, language, self.options.language, self.multilingual)
        data: dict[str, Any] = {}
        prepared = self._prepare(np.asarray(samples, dtype=np.float32), rate, data)
        return self._decode(prepared, language, plan, data)

    def _decode(
        self,
        samples: np.ndarray,
        language: str | None,
        plan: Plan = FULL,
        data: dict[str, Any] | None = None,
    ) -> Transcript:
        data = {"device": self.device, "dtype": self.dtype, **(data or {})}
        transcript = recognize(self, self.homes, samples, language, self.options, plan, data)
        width = transcript.data.get("window_s")
        if self.buckets and width:  # the window the encoder ran: the bucket that holds it
            transcript.data["window_s"] = bucket_window(width, self.buckets)
        return transcript

    def _prepare(self, samples: np.ndarray, rate: int, data: dict[str, Any]) -> np.ndarray:
        """16 kHz audio for the recognizer, levelled when asked."""
        level = self.options.level_lufs if self._audio.levels else None
        if rate == SAMPLE_RATE and level is None:
            return samples
        signal = self._audio.to_target(samples, rate)
        data["audio"] = {"rate": rate, "resampler": self._audio.name}
        if level is not None:
            signal, gain_db = self._audio.level(signal, level, self.options.max_gain_db)
            data["audio"]["gain_db"] = round(gain_db, 1)
        if isinstance(signal, self._torch.Tensor):
            return signal.float().cpu().numpy()
        return np.asarray(signal, dtype=np.float32)

    # -- the Decoder contract (voiced.api.recognition): torch's primitives --------------------

    def tokenizer(self, language: str | None) -> Any:
        """faster-whisper's ``Tokenizer`` over this model's own (the interface the recognizer
        and the constrained search ask of either engine)."""
        from faster_whisper.tokenizer import Tokenizer

        if language not in self._tokenizers:
            self._tokenizers[language] = Tokenizer(
                self.processor.tokenizer.backend_tokenizer,
                self.multilingual,
                task=self.options.task,
                language=language if self.multilingual else None,
            )
        return self._tokenizers[language]

    def detect(self, samples: np.ndarray) -> tuple[str, float]:
        torch = self._torch
        sot = self.tokenizer("en").sot
        encoded = self.encode(samples, window_seconds(len(samples) / SAMPLE_RATE, self.options))
        with torch.inference_mode():
            hidden, _ = self._calls.hidden([[sot]], encoded)
            logits = self._calls.logits(hidden[0, -1])
            ids = torch.tensor(list(self.lang_to_id.values()), device=logits.device)
            probs = torch.softmax(logits[ids], dim=-1)
        best = int(torch.argmax(probs))
        return list(self.lang_to_id)[best][2:-2], round(float(probs[best]), 3)

    def encode(self, samples: np.ndarray, window: int) -> Any:
        with self._torch.inference_mode():
            return self._encoder(self._features(samples, window))

    def generate(
        self,
        encoded: Any,
        seconds: float,
        window: int,
        language: str | None,
        prompt_text: str = "",
        count: int = 1,
        temperature: float = 0.0,
    ) -> Decode:
        """One decode of the encoded audio: greedy/beam, or ``best_of`` samples at
        ``temperature``; its best ``count`` hypotheses, best first, loops cut (as
        whisper-ctranslate2's)."""
        torch, opts = self._torch, self.options
        tokenizer = self.tokenizer(language)
        timestamps = window < FULL_WINDOW_S  # to drop what is decoded past the audio
        prompt = whisper_prompt(tokenizer, prompt_text, timestamps, self.max_length)
        budget = max_new_tokens(seconds, self.max_length - len(prompt))
        steps = decode_steps(len(prompt), budget)
        rules = self._rules_of(tokenizer, language, timestamps)
        with torch.inference_mode():
            logits, cache = self._calls.steps([prompt], encoded, None)
            sot = prompt.index(tokenizer.sot)
            no_speech_prob = float(torch.softmax(logits[0, sot], dim=-1)[tokenizer.no_speech])
            first = (logits[:, -1], cache)
            if temperature > 0:
                many = max(opts.best_of, count)
                readings = sample(
                    torch,
                    self._calls,
                    encoded,
                    first,
                    rules,
                    temperature,
                    many,
                    self._sampler,
                    steps,
                )
            else:
                beam = max(opts.beam_size, count)
                readings = beam_search(
                    torch, self._calls, encoded, first, rules, beam, count, steps
                )
        return readings_decode(
            readings, tokenizer, seconds, timestamps, budget, no_speech_prob, temperature, count
        )

    def forced_scores(
        self, encoded: Any, language: str | None, texts: list[str], frames: int
    ) -> list[float]:
        with self._torch.inference_mode():
            return forced_scores(self._calls, self.tokenizer(language), encoded, texts)

    def next_logprobs(self, encoded: Any) -> NextLogprobs:
        steps = next_logprobs(self._calls, encoded)
        inference_mode = self._torch.inference_mode

        def in_inference(prompt: list[int], prefixes: list[tuple[int, ...]]) -> list[np.ndarray]:
            with inference_mode():
                return steps(prompt, prefixes)

        return in_inference

    def transcribe_long(
        self, samples: np.ndarray, language: str | None, data: dict[str, Any]
    ) -> Transcript:
        return long_form(self, samples, language, data)

    # -- features and the encoder ----------------------------------------------------------

    def _rules_of(self, tokenizer: Any, language: str | None, timestamps: bool) -> Rules:
        """Whisper's rules for the next token, as whisper-ctranslate2 asks CTranslate2."""
        from faster_whisper.transcribe import get_suppressed_tokens

        key = (language, timestamps)
        if key not in self._rules:
            torch, vocabulary = self._torch, self.model.config.vocab_size
            suppress = [t for t in get_suppressed_tokens(tokenizer, [-1]) if t < vocabulary]
            begin = self.model.generation_config.begin_suppress_tokens or [220, tokenizer.eot]
            self._rules[key] = Rules(
                torch.tensor(suppress, device=self.device),
                torch.tensor([t for t in begin if t < vocabulary], device=self.device),
                tokenizer.eot,
                tokenizer.no_timestamps,
                tokenizer.timestamp_begin,
                timestamps,
            )
        return self._rules[key]

    def _features(self, signal: np.ndarray, window: int) -> Any:
        """Log-mel features of a window (``common.window_audio``), rounded up to its bucket."""
        torch = self._torch
        width = bucket_window(window, self.buckets)
        audio = window_audio(signal, window, width)
        if window == FULL_WINDOW_S:  # faster-whisper's extractor appends a hop; this one none
            audio = np.concatenate([audio, np.zeros(HOP_SAMPLES, dtype=np.float32)])
        if self._log_mel is not None:  # on the GPU: computed there, no round trip
            features = self._log_mel(audio)
        else:
            features = self.processor.feature_extractor(
                audio, sampling_rate=SAMPLE_RATE, padding="longest", return_tensors="pt"
            ).input_features
        frames = width * 100
        features = features[..., :frames]
        if features.shape[-1] < frames:
            features = torch.nn.functional.pad(features, (0, frames - features.shape[-1]))
        return features.to(self.device, getattr(torch, self.dtype))

    def _encoder(self, features: Any) -> Any:
        """WhisperEncoder.forward without its 3000-frame check: positions sliced to the window."""
        enc = self.model.model.encoder
        gelu = self._torch.nn.functional.gelu
        hidden = gelu(enc.conv2(gelu(enc.conv1(features)))).permute(0, 2, 1)
        hidden = hidden + enc.embed_positions.weight[: hidden.shape[1]]
        for layer in enc.layers:
            out = layer(hidden, None, **self._layer_kw)
            hidden = out[0] if isinstance(out, tuple) else out
        return enc.layer_norm(hidden)


def _import_torch() -> Any:
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError as exc:
        raise ModelError(
            f"whisper-transformers needs torch and transformers ({exc}); install them with "
            "pip install 'voiced[gpu]' (on AMD: torch from the ROCm wheel index first)"
        ) from exc
    return torch
