"""An utterance streamed to an ASR engine while it is spoken (``voiced.stages.AsrStream``).

The site opens one when speech starts (if the active ASR engine offers streams), sends it the
speech frames as the segmenter passes them, and hands it with the utterance to the ASR queue
at the VAD end; there the engine finishes it, or, when the stream failed, the chain's next
engine transcribes the whole utterance as usual.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from voiced.stages import AsrStream

log = logging.getLogger(__name__)


@dataclass
class SpeechStream:
    engine: str
    stream: AsrStream
    sent: int = 0  # bytes of the utterance handed to the stream so far

    def send(self, audio: bytes) -> None:
        if not audio:
            return
        self.sent += len(audio)
        try:
            self.stream.feed(audio)
        except Exception as exc:  # the stream's finish() says what went wrong
            log.info("ASR stream to %s: feed failed: %s", self.engine, exc)

    def send_rest(self, utterance: bytes) -> None:
        """The whole utterance at its end: send what the stream has not had yet."""
        self.send(utterance[self.sent :])

    def abort(self) -> None:
        try:
            self.stream.abort()
        except Exception as exc:
            log.info("ASR stream to %s: abort failed: %s", self.engine, exc)
