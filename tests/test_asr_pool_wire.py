"""What the pool puts on the broker: topics, jobs with their audio, replies, and the options
that keep audio off anonymous connections."""

from __future__ import annotations

import json
import re

import pytest
from pydantic import ValidationError
from voiced_plugins.asr_pool.options import PoolOptions
from voiced_plugins.asr_pool.wire import BadMessage, Job, Reply, Topics

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
