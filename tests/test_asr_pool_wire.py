"""What the pool puts on the broker: topics, jobs with their audio, replies, and the options
that keep audio off anonymous connections."""

from __future__ import annotations

import json
import re
import zlib

import pytest
from pydantic import ValidationError
from voiced_plugins.asr_pool.options import PoolOptions
from voiced_plugins.asr_pool.wire import (
    BadMessage,
    GrammarMessage,
    Job,
    Reply,
    Topics,
    grammar_digest,
)

CAP = 32000  # one second of audio


def test_each_worker_has_its_jobs_topic_and_replies_go_to_one_the_two_ids_fix():
    topics = Topics("voiced/asr-pool", "voiced-asr")
    assert topics.jobs("w1") == "voiced/asr-pool/jobs/w1"
    assert topics.reply("front-kitchen", "w1") == "voiced/asr-pool/reply/front-kitchen/w1"
    assert topics.replies("front-kitchen") == "voiced/asr-pool/reply/front-kitchen/+"
    assert topics.workers == "voiced/asr-pool/workers/+"


def test_a_job_carries_its_audio_byte_for_byte_after_a_json_header():
    audio = bytes(range(256)) * 40 + b"\n\n"  # PCM may contain newlines
    job = Job("j1", "front-f", 1234.5, audio, language="en")
    back = Job.decode(job.encode(), max_audio_bytes=len(audio))
    assert back == job


def test_a_payload_without_a_header_line_is_refused():
    with pytest.raises(BadMessage, match="header"):
        Job.decode(b"just bytes", CAP)
    with pytest.raises(BadMessage, match="'front' must be a string"):
        Job.decode(b'{"id": "j1"}\n', CAP)


def header(**fields) -> bytes:
    return json.dumps({"id": "j1", "front": "f1", "deadline": 1.0, **fields}).encode() + b"\n"


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (header(deadline="soon"), "'deadline' must be a number, not str"),
        (header(deadline=True), "'deadline' must be a number, not bool"),
        (header(language=["en"]), "'language' must be a string"),
        (header(run_id="r" * 500), "'run_id' is 500 characters"),
        (header(rate=8000), "'rate' must be 16000"),
        (header() + b"\0" * (CAP + 2), f"over the cap ({CAP} bytes, 1 s)"),
        (header() + b"\0", "odd number of bytes"),
        (b"[1, 2]\n", "a JSON list, not an object"),
        (b"{" + b" " * 5000 + b"}\n", "header line of at most"),
    ],
)
def test_a_job_that_breaks_the_schema_is_refused_with_its_id_and_front(payload, reason):
    with pytest.raises(BadMessage, match=re.escape(reason)) as refused:
        Job.decode(payload, CAP)
    if payload.startswith(b'{"id"'):
        assert (refused.value.job, refused.value.front) == ("j1", "f1")


def test_a_job_front_that_is_not_one_topic_level_is_refused():
    with pytest.raises(BadMessage, match="'front' must be"):
        Job.decode(header(front="site/kitchen/command/say"), CAP)


def test_a_reply_round_trips():
    reply = Reply("j1", "result", "w1", text="turn on the lights", asr_s=0.2)
    assert Reply.decode(reply.encode(), 65536) == reply


def test_a_reply_over_the_cap_or_off_schema_is_refused():
    big = Reply("j1", "result", "w1", text="x" * 70000).encode()
    with pytest.raises(BadMessage, match="over the cap"):
        Reply.decode(big, 65536)
    with pytest.raises(BadMessage, match="'type' must be one of"):
        Reply.decode(b'{"id": "j1", "type": "boom", "worker": "w1"}', 65536)
    with pytest.raises(BadMessage, match="'text' must be a string"):
        Reply.decode(b'{"id": "j1", "type": "result", "worker": "w1", "text": 5}', 65536)


@pytest.mark.parametrize("group", ["a/b", "a+", "#"])
def test_a_group_name_with_topic_characters_is_refused(group):
    with pytest.raises(ValidationError, match="shared-subscription group"):
        PoolOptions(group=group)


def test_a_password_login_is_enough_and_the_connection_is_forced_to_mqtt_5():
    options = PoolOptions.model_validate(
        {"broker": {"url": "mqtt://voiced:pw@127.0.0.1:1883", "protocol": "3.1.1"}}
    )
    broker = options.broker_options(None)
    assert broker.endpoint().username == "voiced" and broker.protocol == "5"


def test_a_job_names_its_home_grammar_by_digest_or_is_refused():
    digest = "0123456789abcdef" * 2
    job = Job("j1", "f1", 1e12, b"\0\0", grammar=digest)
    assert Job.decode(job.encode(), CAP).grammar == digest
    with pytest.raises(BadMessage, match="'grammar' must be a digest"):
        Job.decode(header(grammar="../../etc"), CAP)


def test_a_grammar_message_round_trips_and_its_digest_is_of_its_body():
    message = GrammarMessage.of({"format": 1, "language": "en", "sentences": {}}, "en")
    decoded = GrammarMessage.decode(message.encode(), 65536)
    assert decoded == message and decoded.digest == grammar_digest(message.body)
    assert decoded.data(65536)["sentences"] == {}
    assert GrammarMessage.of({"language": "en", "format": 1, "sentences": {}}, "en") == message


def test_a_grammar_message_too_big_forged_or_a_bomb_is_refused():
    message = GrammarMessage.of({"sentences": "x" * 100}, "en")
    encoded = message.encode()
    with pytest.raises(BadMessage, match="over the cap"):
        GrammarMessage.decode(encoded, len(encoded) - 1)
    forged = encoded.replace(message.digest.encode(), b"f" * 32)
    with pytest.raises(BadMessage, match="the body's digest is not f"):
        GrammarMessage.decode(forged, 65536)
    with pytest.raises(BadMessage, match="'bytes' says"):
        GrammarMessage.decode(encoded[:-1], 65536)
    bomb = GrammarMessage("0" * 32, "en", zlib.compress(b" " * 1_000_000))
    with pytest.raises(BadMessage, match="over 65536 bytes decompressed"):
        bomb.data(65536)
    with pytest.raises(BadMessage, match="not zlib data"):
        GrammarMessage("0" * 32, "en", b"plain").data(65536)
