"""Files served over HTTP on 127.0.0.1 for tests: media as Home Assistant serves it, pages."""

from __future__ import annotations

import contextlib
import http.server
import io
import threading
import wave
from collections.abc import Iterator

import numpy as np


def tone_wav(seconds: float, rate: int = 22050) -> bytes:
    """A 440 Hz tone at about half of full scale (peak 16000), as a WAV file."""
    t = np.arange(int(rate * seconds)) / rate
    pcm = (np.sin(2 * np.pi * 440 * t) * 16000).astype("<i2").tobytes()
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(pcm)
    return buffer.getvalue()


@contextlib.contextmanager
def serving(bodies: dict[str, bytes], unsized: frozenset[str] = frozenset()) -> Iterator[str]:
    """Serve ``bodies`` by path (404 for others); the base URL. Paths in ``unsized`` are sent
    with no Content-Length (HTTP/1.0: the body ends when the server closes)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path not in bodies:
                self.send_error(404)
                return
            body = bodies[self.path]
            self.send_response(200)
            if self.path not in unsized:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
