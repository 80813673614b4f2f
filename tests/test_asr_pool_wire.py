"""What the pool puts on the broker: topics, jobs with their audio, replies, and the options
that keep audio off anonymous connections."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from voiced_plugins.asr_pool.options import PoolOptions
from voiced_plugins.asr_pool.wire import Job, Reply, Topics


def test_workers_share_the_jobs_topic_through_the_group():
    topics = Topics("voiced/asr-pool", "voiced-asr")
    assert topics.jobs == "voiced/asr-pool/jobs"
    assert topics.shared_jobs == "$share/voiced-asr/voiced/asr-pool/jobs"
    assert topics.reply("front-kitchen") == "voiced/asr-pool/reply/front-kitchen"
    assert topics.workers == "voiced/asr-pool/workers/+"


def test_a_job_carries_its_audio_byte_for_byte_after_a_json_header():
    audio = bytes(range(256)) * 40 + b"\n\n"  # PCM may contain newlines
    job = Job("j1", "voiced/asr-pool/reply/f", 1234.5, audio, language="en")
    back = Job.decode(job.encode())
    assert back == job


def test_a_payload_without_a_header_line_is_refused():
    with pytest.raises(ValueError, match="header"):
        Job.decode(b"just bytes")
    with pytest.raises(KeyError):
        Job.decode(b'{"id": "j1"}\n')


def test_a_reply_round_trips():
    reply = Reply("j1", "result", "w1", text="turn on the lights", asr_s=0.2)
    assert Reply.decode(reply.encode()) == reply


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
