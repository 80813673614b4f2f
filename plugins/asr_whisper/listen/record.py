"""The transcript of a decided utterance: its text, verdict and the Decision in its data."""

from __future__ import annotations

import time
from typing import Any

from voiced.api.intents import Transcript

from ..common import decoded_transcript, judge, rms_dbfs
from .state import Listening, Utterance


def transcript(u: Utterance, s: Listening, data: dict[str, Any]) -> Transcript:
    """The kept reading as a transcript; ``data``: what the engine adds (device, ...)."""
    chosen, decode = s.chosen, s.decode
    verdict = judge(chosen.text, chosen.avg_logprob, decode.no_speech_prob, u.options)
    data |= {
        "window_s": s.window.width,
        "avg_logprob": round(float(chosen.avg_logprob), 3),
        "no_speech_prob": round(float(decode.no_speech_prob), 3),
        "level_dbfs": round(rms_dbfs(u.samples), 1),
        "hypotheses": [h.to_dict() for h in s.hypotheses],
        **({"retry_hypotheses": [h.to_dict() for h in s.retried]} if s.retried else {}),
        **({"rescored": s.rescored} if s.rescored is not None else {}),
        **({"fallback": s.fallback} if s.fallback else {}),
        "hypothesis": s.decision.hypothesis(),
        "decision": s.decision.to_dict(),
        "timings_ms": {"total": round((time.perf_counter() - u.started) * 1000, 1)},
    }
    return decoded_transcript(
        u.decoder.name, chosen.text, u.language, u.seconds, verdict, data, decode.dropped
    )
