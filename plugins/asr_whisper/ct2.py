"""Engine ``whisper-ctranslate2``: faster-whisper's CTranslate2 model, int8 on the CPU.

Short utterances (everything a voice command is) skip faster-whisper's long-form loop: one
feature extraction, one encoder pass over a window sized to the utterance, one decode. Audio
longer than Whisper's 30-second window goes through faster-whisper's ``transcribe``.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

import numpy as np
from pydantic import Field

from voiced.api.devices import choose_ct2_device
from voiced.api.intents import Transcript

from .choose import Hypothesis, checker_of, choose, pick_retry, unique
from .common import (
    FULL_WINDOW_S,
    SAMPLE_RATE,
    compression_ratio,
    decoded_transcript,
    judge,
    max_new_tokens,
    pcm16_to_float,
    rms_dbfs,
    too_quiet,
    window_seconds,
)
from .constrained import (
    BEAM,
    Found,
    GrammarCache,
    TokenGrammar,
    WithConstrained,
    commands_found,
)
from .fallback import Decode, FallbackOptions, repetitive, with_fallback
from .language import check_languages, pinned
from .models import ModelError, load_error, resolve_ct2
from .rescore import (
    DROP,
    DROP_FULL,
    forced_scores,
    names_heard,
    pick_rescored,
    rescorer_of,
    surface_forms,
)
from .segments import first_sentences, spoken_text

log = logging.getLogger(__name__)


class WhisperCt2Options(FallbackOptions):
    compute_type: str = Field("auto", description="auto: int8 on CPU, float16 on CUDA")
    cpu_threads: int = Field(0, ge=0, description="0: CTranslate2's default (all cores)")
    vad_filter: bool = Field(False, description="faster-whisper's Silero VAD (long audio only)")
    download_root: str | None = None
    hypotheses: int = Field(
        3,
        ge=1,
        le=8,
        description="N-best: hypotheses to decode (beam search, beam >= N) when an intent stage "
        "can tell commands: it picks one within hypothesis_margin of the top one",
    )
    hypothesis_margin: float = Field(
        0.3, ge=0.0, description="most average log-probability below the top hypothesis"
    )
    home_rescore: bool = Field(
        True,
        description="when no hypothesis is a command: score this home's sentences a word or "
        "two from them against the audio; one that nearly says it, alone, wins (rescore.py)",
    )
    home_constrained: bool = Field(
        True,
        description="with home_rescore: also search Whisper's decoder within this home's "
        "sentences (its word graph) and hand the commands found to the rescoring (constrained.py)",
    )
    home_retry: bool = Field(
        True,
        description="when no hypothesis is a command: decode again with the full window and "
        "the home's names as a prompt; kept only if that is a command close to the first decode",
    )
    home_rescore_drop: float = Field(
        DROP,
        ge=0.0,
        description="most mean log-probability a token a rescored command may score below "
        "the free reading (first look; the full window's second look keeps 0.8)",
    )
    home_rescore_forms: bool = Field(
        True,
        description="score each rescored candidate as Whisper writes (cased as heard, the first "
        "word capitalized, ending in nothing, '.', '?' or the readings' own mark), the best form "
        "counting, as the free reading is scored in its own (rescore.py surface_forms)",
    )
    home_search_beam: int = Field(
        BEAM, ge=1, le=32, description="with home_constrained: readings the search keeps a step"
    )
    home_search_one_template: bool = Field(
        True,
        description="with home_constrained: the search keeps to sentences whose word pairs are "
        "all of one template (else any pair of the home's graph may follow any other)",
    )
    home_search_first_words: bool = Field(
        True,
        description="with home_constrained: offer the rescoring the likeliest other first "
        "words that make a command, of sentences found and of its best-scored candidates "
        "that are none ('in the back door locked' -> 'is the back door locked'; off: the "
        "likeliest four first words of found sentences only, commands or not)",
    )
    home_rescore_names: bool = Field(
        True,
        description="with home_rescore: a rescored command keeps every word of the home's "
        "names the top reading has ('...the kitchen lights and the fan' is not 'turn off the "
        "kitchen light')",
    )
    home_rescore_full: bool = Field(
        False,
        description="with home_retry and home_rescore: when the retry is no command either, "
        "listen again in the full window (the retry's encoder output): rescoring and the "
        "constrained search there, against the free readings of both windows (off: +1 of 105 "
        "on the tuning set, 0 of 56 held out, for about twice the p90 of unmatched speech)",
    )


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
        self._tokenizers: dict[tuple[str | None, str], Any] = {}
        self._grammars: dict[str | None, GrammarCache] = {}

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
        if opts.warmup:
            self._decode(np.zeros(SAMPLE_RATE, dtype=np.float32) + 1e-3, None, warmup=True)
        self._build_grammars()

    def _build_grammars(self) -> None:
        """The constrained search's token grammar of each language the config speaks, built
        now as the model is, not on the first utterance nothing matches (maybe hours later)."""
        opts = self.options
        if not (opts.home_rescore and opts.home_constrained):
            return
        languages = getattr(getattr(self.app, "settings", None), "languages", None)
        spoken = list(languages()) if callable(languages) else []
        for requested in dict.fromkeys([*spoken, opts.language]):
            if requested is None and self.multilingual:
                continue  # detected per utterance: no grammar to guess
            language = pinned(self.name, requested, opts.language, self.multilingual)
            rescorer = rescorer_of(checker_of(self.app, language))
            if rescorer is not None:
                self._grammar(language, rescorer)

    def _grammar(self, language: str | None, rescorer: Any) -> TokenGrammar | None:
        """The constrained search's token grammar of ``rescorer``'s home in ``language``
        (built once per home; None when the home has no sentence graph)."""
        return self._grammars.setdefault(language, GrammarCache()).get(
            rescorer, self._tokenizer(language)
        )

    def close(self) -> None:
        self._model = None
        self._tokenizers.clear()

    @property
    def multilingual(self) -> bool:
        return bool(self._model.model.is_multilingual)

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
        return self._decode(pcm16_to_float(audio), language, quick=True)

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

    def _decode(
        self, samples: np.ndarray, language: str | None, warmup: bool = False, quick: bool = False
    ) -> Transcript:
        opts = self.options
        seconds = len(samples) / SAMPLE_RATE
        started = time.perf_counter()
        data: dict[str, Any] = {"device": self.device, "compute_type": self.compute_type}
        quiet = None if warmup else too_quiet(samples, opts)
        if quiet:
            data |= {"rejected": quiet, "window_s": 0}
            return Transcript("", language or "en", self.name, seconds, True, data)
        if seconds > FULL_WINDOW_S:
            return self._long_form(samples, language, seconds, data, started)

        if self.multilingual and language is None:
            language, probability = self._detect(samples)
            data["language_probability"] = probability
        window = window_seconds(seconds, opts)
        checker = None if warmup else checker_of(self.app, language)
        count = self.options.hypotheses if checker is not None else 1  # N-best needs a judge
        encoded: Any = self._encode(samples, window)
        decode = self._generate(encoded, seconds, window, language, count=count)
        choice = choose(decode.hypotheses, checker, opts.hypothesis_margin)
        fallback: list[dict[str, Any]] = []
        if not (warmup or quick or choice.command):  # a command on this home is kept as heard

            def decode_at(temperature: float) -> Decode:
                return self._generate(
                    encoded, seconds, window, language, count=count, temperature=temperature
                )

            decode, fallback = with_fallback(decode, opts.temperatures, opts, decode_at)
            if fallback:
                choice = choose(decode.hypotheses, checker, opts.hypothesis_margin)
        hypotheses, no_speech_prob, dropped = (
            decode.hypotheses,
            decode.no_speech_prob,
            decode.dropped,
        )
        chosen = hypotheses[choice.index]
        why = choice.why
        retried: list[Hypothesis] = []
        won = None
        rescored: dict[str, Any] | None = None
        unmatched_speech = (
            not quick
            and checker is not None
            and not choice.command
            and bool(chosen.text.strip())
            and not judge(chosen.text, chosen.avg_logprob, no_speech_prob, opts).no_speech
        )
        rescorer = rescorer_of(checker) if unmatched_speech and opts.home_rescore else None
        # per encoder window: forced scores (the second round reuses them), the constrained
        # search's commands (it runs once per window)
        known: dict[int, dict[str, float]] = {}
        constrained: dict[int, Found] = {}
        heard_names = (
            names_heard(hypotheses[0].text, checker.prompt_words())
            if rescorer is not None and opts.home_rescore_names
            else frozenset()
        )

        def rescore(
            heard: list[Hypothesis],
            free: list[Hypothesis],
            features: Any = None,
            width: int = window,
        ) -> Hypothesis | None:
            """The home's sentence near ``heard`` the audio says (rescore.py), if any, in the
            encoder output ``features`` of a ``width`` s window; ``free``: that window's own
            readings (they bound the constrained search)."""
            nonlocal rescored, why
            assert rescorer is not None
            features = encoded if features is None else features
            frames = min(width * 100, int(seconds * 100) + 1)
            scored = known.setdefault(width, {})

            def score(texts: list[str]) -> list[float]:
                new = [t for t in dict.fromkeys(texts) if t not in scored]
                if new:
                    tokenizer = self._tokenizer(language)
                    values = forced_scores(self._model.model, tokenizer, features, new, frames)
                    scored.update(zip(new, values, strict=True))
                return [scored[t] for t in texts]

            texts = [h.text for h in heard]
            judge_with: Any = rescorer
            grammar = self._grammar(language, rescorer) if opts.home_constrained else None
            if grammar is not None:
                if width not in constrained:
                    constrained[width] = commands_found(
                        self._model.model,
                        self._tokenizer(language),
                        features,
                        grammar,
                        [(h.text, h.avg_logprob) for h in free],
                        rescorer,
                        opts.home_search_beam,
                        opts.home_search_one_template,
                        opts.home_search_first_words,
                    )
                judge_with = WithConstrained(rescorer, constrained[width])
            # a second look, in the full window: against the best free reading of either
            # window's top one, with the stricter limit (each look is one more chance to err)
            second = width != window and bool(retried)
            tops = [hypotheses[0].text, retried[0].text] if second else []
            picked, reason = pick_rescored(
                texts,
                judge_with,
                score,
                drop=min(DROP_FULL, opts.home_rescore_drop) if second else opts.home_rescore_drop,
                references=list(dict.fromkeys(tops)) or None,
                forms=surface_forms([*texts, *(h.text for h in free)])
                if opts.home_rescore_forms
                else None,
                heard_names=heard_names,
            )
            rescored = picked.to_dict() if picked is not None else {"why": reason}
            rescored["window_s"] = width
            if width in constrained:
                rescored["constrained"] = constrained[width].commands
            if picked is None:
                return None
            why = "rescored: " + picked.why
            return Hypothesis(picked.text, hypotheses[0].avg_logprob)

        if rescorer is not None and (found := rescore(hypotheses, hypotheses)) is not None:
            chosen, unmatched_speech = found, False
        if unmatched_speech and opts.home_retry:
            assert checker is not None
            full = self._encode(samples, FULL_WINDOW_S)
            retried = self._generate(
                full, seconds, FULL_WINDOW_S, language, checker.prompt_words(), count
            ).hypotheses
            won = pick_retry(retried, hypotheses, checker, opts.hypothesis_margin)
            if won is not None:
                chosen, why = won, "retry with the full window and the home's names: a command"
            else:
                why += "; the prompted retry gave no command close to it"
                # what the retry read may be nearer a command: all of it, listened to again,
                # in the full window (noise and long commands read better there: issue #15)
                # or, without home_rescore_full, in the fitted one
                if rescorer is not None:
                    heard = [*hypotheses, *retried]
                    found = (
                        rescore(heard, [*retried, *hypotheses], full, FULL_WINDOW_S)
                        if opts.home_rescore_full
                        else rescore(heard, hypotheses)
                    )
                    if found is not None:
                        chosen, won = found, found
        t_decoded = time.perf_counter()
        text, avg_logprob = chosen.text, chosen.avg_logprob
        verdict = judge(text, avg_logprob, no_speech_prob, opts)
        data |= {
            "window_s": window,
            "avg_logprob": round(float(avg_logprob), 3),
            "no_speech_prob": round(float(no_speech_prob), 3),
            "level_dbfs": round(rms_dbfs(samples), 1),
            "hypotheses": [h.to_dict() for h in hypotheses],
            **({"retry_hypotheses": [h.to_dict() for h in retried]} if retried else {}),
            **({"rescored": rescored} if rescored is not None else {}),
            **({"fallback": fallback} if fallback else {}),
            "hypothesis": {
                "index": -1 if won is not None or (rescored or {}).get("text") else choice.index,
                "retried": bool(retried),
                "why": why,
            },
            "timings_ms": {
                "total": round((t_decoded - started) * 1000, 1),
            },
        }
        return decoded_transcript(self.name, text, language, seconds, verdict, data, dropped)

    def _detect(self, samples: np.ndarray) -> tuple[str, float]:
        encoded = self._encode(samples, window_seconds(len(samples) / SAMPLE_RATE, self.options))
        detected = self._model.model.detect_language(encoded)[0][0]
        return detected[0][2:-2], round(float(detected[1]), 3)

    def _encode(self, samples: np.ndarray, window: int) -> Any:
        import ctranslate2

        model = self._model
        frames = window * 100
        if window == FULL_WINDOW_S:  # exactly as faster-whisper: features padded with zeros
            features = model.feature_extractor(samples)[:, :frames]
            features = np.pad(features, ((0, 0), (0, frames - features.shape[1])))
        else:  # audio padded with silence, as Whisper was trained (measured: fewer errors)
            padded = np.zeros(window * SAMPLE_RATE, dtype=np.float32)
            padded[: len(samples)] = samples
            features = model.feature_extractor(padded)[:, :frames]
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
        prompt = list(tokenizer.sot_sequence)
        if prompt_text:
            words = tokenizer.encode(" " + prompt_text.strip())[-(model.max_length // 2 - 1) :]
            prompt = [tokenizer.sot_prev, *words, *prompt]
        if not timestamps:
            prompt.append(tokenizer.no_timestamps)
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
        decoded = []
        for tokens, score in zip(result.sequences_ids, result.scores, strict=True):
            avg_logprob = score * len(tokens) / (len(tokens) + 1)
            if timestamps:
                text, cut = spoken_text(
                    tokens, tokenizer.timestamp_begin, seconds, tokenizer.decode
                )
            else:
                text, cut = first_sentences(tokenizer.decode(tokens))
            decoded.append((float(avg_logprob), text, int(cut), tokens))
        decoded.sort(key=lambda d: -d[0])  # samples come in no particular order
        avg_logprob, _, dropped, tokens = decoded[0]
        text_tokens = [t for t in tokens if t < tokenizer.eot]
        loop = ""
        if len(tokens) >= budget:
            loop = "spent its whole token budget (a loop)"
        elif repetitive(text_tokens):
            loop = f"a loop: {len(set(text_tokens))} distinct of {len(text_tokens)} tokens"
        return Decode(
            unique([Hypothesis(text, lp) for lp, text, _, _ in decoded])[:count],
            float(result.no_speech_prob),
            dropped,
            temperature,
            compression_ratio(tokenizer.decode(text_tokens)),
            loop,
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
