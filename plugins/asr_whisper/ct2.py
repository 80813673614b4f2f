"""Engine ``whisper-ctranslate2``: faster-whisper's CTranslate2 model, int8 on the CPU.

Short utterances (everything a voice command is) skip faster-whisper's long-form loop: one
feature extraction, one encoder pass over a window sized to the utterance, one decode. Audio
longer than Whisper's 30-second window goes through faster-whisper's ``transcribe``.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from voiced.api.devices import choose_ct2_device
from voiced.api.intents import Transcript
from voiced.api.recognition import Decode, NextLogprobs

from .common import (
    FULL_WINDOW_S,
    SAMPLE_RATE,
    fill_frames,
    max_new_tokens,
    pcm16_to_float,
    window_audio,
    window_seconds,
)
from .ct2_scoring import forced_scores, next_logprobs
from .ct2_steps import StepDecoder
from .language import check_languages, pinned
from .listen.driver import recognize
from .listen.homes import Homes
from .listen.options import RecognitionOptions
from .listen.state import DRAFT, FULL, WARMUP, Plan
from .models import ModelError, load_error, resolve_ct2
from .readings import readings_decode, whisper_prompt

log = logging.getLogger(__name__)


class WhisperCt2Options(RecognitionOptions):
    section: ClassVar[str] = "stages.asr.whisper-ctranslate2"

    compute_type: str = Field("auto", description="auto: int8 on CPU, float16 on CUDA")
    cpu_threads: int = Field(0, ge=0, description="0: CTranslate2's default (all cores)")
    vad_filter: bool = Field(False, description="faster-whisper's Silero VAD (long audio only)")
    download_root: str | None = None


class WhisperCt2Asr:
    """Whisper on CTranslate2 through faster-whisper."""

    name = "whisper-ctranslate2"

    def __init__(self, options: WhisperCt2Options | None = None, app: Any = None) -> None:
        self.options = options or WhisperCt2Options()
        self.app = app
        self.device = "cpu"
        self.compute_type = ""
        self.reason = ""
        self._model: Any = None
        self._steps: StepDecoder | None = None
        self._tokenizers: dict[tuple[str | None, str], Any] = {}
        self.homes = Homes(app, self)

    def load(self) -> None:
        # Intel MKL (inside CTranslate2) keeps the buffers of its biggest products per thread
        # for good: a +20-30 MB step at a random moment after start-up (#16). Before MKL starts.
        os.environ.setdefault("MKL_DISABLE_FAST_MM", "1")
        try:
            from faster_whisper import WhisperModel
        except ImportError as exc:
            raise ModelError(f"whisper-ctranslate2 needs faster-whisper ({exc})") from exc
        opts = self.options
        choice = choose_ct2_device(opts.device, opts.compute_type)
        source, local = resolve_ct2(opts.model)
        try:
            self._model = WhisperModel(
                source,
                device=choice.device,
                device_index=choice.device_index,
                compute_type=choice.compute_type,
                cpu_threads=opts.cpu_threads,
                download_root=opts.download_root,
                local_files_only=local or not opts.allow_download,
            )
        except Exception as exc:
            raise load_error(opts.model, local, exc) from exc
        if opts.seed is not None:
            import ctranslate2

            ctranslate2.set_random_seed(opts.seed)
        self.device = f"cuda:{choice.device_index}" if choice.device == "cuda" else "cpu"
        self.compute_type = choice.compute_type
        self.reason = choice.reason
        check_languages(self.name, opts.model, self.multilingual, opts.language, self.app)
        log.info("%s: %s on %s (%s)", self.name, opts.model, self.device, choice.reason)
        if self.device == "cpu" and opts.recognition.searches:
            folder = _model_dir(source, local, opts.download_root)
            threads = opts.cpu_threads or min(4, len(os.sched_getaffinity(0)))
            self._steps = StepDecoder.of_model(folder, threads) if folder is not None else None
        if opts.warmup:
            self._decode(np.zeros(SAMPLE_RATE, dtype=np.float32) + 1e-3, None, WARMUP)
        self.homes.build(self.options)

    def warm_home(self, home: Any, language: str | None) -> None:
        """Build ``home``'s token grammar for the constrained search now, off the hot path (a
        pool worker given a front end's home)."""
        self.homes.warm(self.options, home, language)

    def close(self) -> None:
        self._model = None
        if self._steps is not None:
            self._steps.close()
        self._steps = None
        self._tokenizers.clear()

    @property
    def multilingual(self) -> bool:
        return bool(self._model.model.is_multilingual)

    @property
    def scores_beside_steps(self) -> bool:
        """The numpy steps (a CPU core) beside ``align`` (CTranslate2's threads): yes; not in
        float32, where both are numpy, nor where both are CTranslate2's (a GPU)."""
        return self._steps is not None and self.compute_type != "float32"

    def transcribe(self, audio: bytes, language: str | None = None) -> Transcript:
        if self._model is None:
            raise RuntimeError(f"{self.name}: transcribe() before load()")
        samples = pcm16_to_float(audio)
        language = pinned(self.name, language, self.options.language, self.multilingual)
        return self._decode(samples, language)

    def draft(self, audio: bytes, language: str | None = None) -> Transcript:
        """A quick first reading (the N-best and its choice of a command, but no rescoring and
        no prompted retry): the speculative pass during a pause must come back before the
        speaker goes on, and hear a command as the endpoint's pass would."""
        if self._model is None:
            raise RuntimeError(f"{self.name}: draft() before load()")
        language = pinned(self.name, language, self.options.language, self.multilingual)
        return self._decode(pcm16_to_float(audio), language, DRAFT)

    def _tokenizer(self, language: str | None) -> Any:
        from faster_whisper.tokenizer import Tokenizer

        key = (language, self.options.task)
        if key not in self._tokenizers:
            self._tokenizers[key] = Tokenizer(
                self._model.hf_tokenizer,
                self.multilingual,
                task=self.options.task,
                language=language if self.multilingual else None,
            )
        return self._tokenizers[key]

    def _decode(self, samples: np.ndarray, language: str | None, plan: Plan = FULL) -> Transcript:
        data = {"device": self.device, "compute_type": self.compute_type}
        return recognize(self, self.homes, samples, language, self.options, plan, data)

    # The Decoder contract (voiced.api.recognition): CTranslate2's primitives.

    def tokenizer(self, language: str | None) -> Any:
        return self._tokenizer(language)

    def detect(self, samples: np.ndarray) -> tuple[str, float]:
        return self._detect(samples)

    def encode(self, samples: np.ndarray, window: int) -> Any:
        return self._encode(samples, window)

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
        return self._generate(encoded, seconds, window, language, prompt_text, count, temperature)

    def forced_scores(
        self, encoded: Any, language: str | None, texts: list[str], frames: int
    ) -> list[float]:
        """Teacher-forced scores: CTranslate2's ``align``, whose int8 numbers the rescoring's
        limits were chosen on; in float32 the numpy decoder's, the same numbers sooner (the
        home's sentences' shared beginnings decoded once)."""
        tokenizer = self._tokenizer(language)
        if self._steps is not None and self.compute_type == "float32":
            prompt = [*tokenizer.sot_sequence, tokenizer.no_timestamps]
            tokens = [tokenizer.encode(" " + t.strip()) or [tokenizer.eot] for t in texts]
            return self._steps.forced(np.asarray(encoded), prompt, tokens, tokenizer.eot)
        return forced_scores(self._model.model, tokenizer, encoded, texts, frames)

    def next_logprobs(self, encoded: Any) -> NextLogprobs:
        """The search's steps: the decoder in numpy with its keys and values kept between
        steps (ct2_steps.py) on the CPU; CTranslate2's ``generate`` per step on a GPU."""
        if self._steps is not None:
            return self._steps.steps(np.asarray(encoded))
        return next_logprobs(self._model.model, encoded)

    def transcribe_long(
        self, samples: np.ndarray, language: str | None, data: dict[str, Any]
    ) -> Transcript:
        return self._long_form(
            samples, language, len(samples) / SAMPLE_RATE, data, time.perf_counter()
        )

    def _detect(self, samples: np.ndarray) -> tuple[str, float]:
        encoded = self._encode(samples, window_seconds(len(samples) / SAMPLE_RATE, self.options))
        detected = self._model.model.detect_language(encoded)[0][0]
        return detected[0][2:-2], round(float(detected[1]), 3)

    def _encode(self, samples: np.ndarray, window: int) -> Any:
        import ctranslate2

        model = self._model
        features = fill_frames(model.feature_extractor(window_audio(samples, window)), window * 100)
        return model.model.encode(
            ctranslate2.StorageView.from_array(np.ascontiguousarray(features[None])),
            to_cpu=model.model.device == "cuda" and len(model.model.device_index) > 1,
        )

    def _generate(
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
        ``temperature``; its best ``count`` hypotheses, best first, loops cut."""
        from faster_whisper.transcribe import get_suppressed_tokens

        opts = self.options
        model = self._model
        tokenizer = self._tokenizer(language)
        timestamps = window < FULL_WINDOW_S  # to drop what is decoded past the audio
        prompt = whisper_prompt(tokenizer, prompt_text, timestamps, model.max_length)
        budget = max_new_tokens(seconds, model.max_length - len(prompt))
        if temperature > 0:
            search = {
                "beam_size": 1,
                "num_hypotheses": max(opts.best_of, count),
                "sampling_topk": 0,
                "sampling_temperature": temperature,
            }
        else:
            search = {"beam_size": max(opts.beam_size, count), "num_hypotheses": count}
        result = model.model.generate(
            encoded,
            [prompt],
            max_length=len(prompt) + budget,
            return_scores=True,
            return_no_speech_prob=True,
            suppress_blank=True,
            suppress_tokens=list(get_suppressed_tokens(tokenizer, [-1])),
            **search,
        )[0]
        readings = [
            (tokens, score * len(tokens) / (len(tokens) + 1))  # the end of text counted
            for tokens, score in zip(result.sequences_ids, result.scores, strict=True)
        ]
        return readings_decode(
            readings,
            tokenizer,
            seconds,
            timestamps,
            budget,
            result.no_speech_prob,
            temperature,
            count,
        )

    def _long_form(
        self,
        samples: np.ndarray,
        language: str | None,
        seconds: float,
        data: dict[str, Any],
        started: float,
    ) -> Transcript:
        opts = self.options
        segments, info = self._model.transcribe(
            samples,
            language=language,
            task=opts.task,
            beam_size=opts.beam_size,
            best_of=opts.best_of,
            temperature=[0.0, *opts.temperatures],
            vad_filter=opts.vad_filter,
            no_speech_threshold=opts.no_speech_threshold,
            log_prob_threshold=opts.log_prob_threshold,
            compression_ratio_threshold=opts.compression_ratio_threshold,
            condition_on_previous_text=False,
            without_timestamps=False,
        )
        texts = []
        for segment in segments:
            if (
                opts.no_speech_threshold is not None
                and segment.no_speech_prob > opts.no_speech_threshold
                and segment.avg_logprob < (opts.log_prob_threshold or 0.0)
            ):
                continue
            texts.append(segment.text.strip())
        text = " ".join(t for t in texts if t)
        done = time.perf_counter()
        data |= {
            "window_s": FULL_WINDOW_S,
            "long_form": True,
            "timings_ms": {"total": round((done - started) * 1000, 1)},
        }
        return Transcript(text, info.language, self.name, seconds, not text, data)


def _model_dir(source: str, local: bool, download_root: str | None) -> str | None:
    """The directory faster-whisper loaded ``source`` from (a hub id: its cached copy)."""
    if local:
        return source
    from faster_whisper.utils import download_model

    try:
        return download_model(source, local_files_only=True, cache_dir=download_root)
    except Exception as exc:  # the search steps on CTranslate2's generate instead
        log.info(
            "%s: no local copy of %s for the search steps (%s)", WhisperCt2Asr.name, source, exc
        )
        return None
