"""Logging: timestamps on a terminal or file, priority prefixes and no timestamps under journald.

systemd sets JOURNAL_STREAM=<dev>:<inode> of the stream it connected to stderr; the tests run
a real process whose stderr is a file and set JOURNAL_STREAM to that file's identity (or not).
"""

from __future__ import annotations

import logging
import os
import re
import socket
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from voiced.logs import JournalFormatter, JournalHandler, encode_entry, fields, report_fatal

SCRIPT = """
import logging
from voiced.logs import setup_logging
setup_logging("INFO")
logging.getLogger("voiced.test").debug("debug line")
logging.getLogger("voiced.test").info("info line")
logging.getLogger("voiced.test").warning("warning line")
logging.getLogger("voiced.test").error("error line")
logging.getLogger("urllib3").info("noisy library line")
"""

TIMESTAMPED = re.compile(r"^\d\d:\d\d:\d\d (INFO|WARNING|ERROR|DEBUG) +voiced\.test: ")


def run_logging(tmp_path: Path, journal: str | None, **env: str) -> list[str]:
    """Run SCRIPT with stderr to a file; ``journal``: "match", "other" or None."""
    err = tmp_path / "stderr.log"
    other = tmp_path / "other.log"
    other.write_text("")
    environment = {
        k: v for k, v in os.environ.items() if k not in ("JOURNAL_STREAM", "VOICED_LOG_LEVEL")
    }
    environment.update(env)
    with err.open("w") as handle:
        target = err if journal == "match" else other
        if journal is not None:
            st = os.stat(target)
            environment["JOURNAL_STREAM"] = f"{st.st_dev}:{st.st_ino}"
        subprocess.run(
            [sys.executable, "-c", SCRIPT], stderr=handle, env=environment, check=True, timeout=60
        )
    return err.read_text().splitlines()


def test_under_journald_lines_have_priority_prefixes_and_no_timestamps(tmp_path):
    lines = run_logging(tmp_path, journal="match")
    assert lines == [
        "<6>voiced.test: info line",
        "<4>voiced.test: warning line",
        "<3>voiced.test: error line",
    ]


def test_on_a_terminal_or_file_lines_carry_time_and_level(tmp_path):
    lines = run_logging(tmp_path, journal=None)
    assert len(lines) == 3
    assert all(TIMESTAMPED.match(line) for line in lines), lines


def test_journal_stream_of_another_file_means_stderr_was_redirected(tmp_path):
    # e.g. `voiced run 2>file` inside a unit: the journal is not where our stderr goes
    lines = run_logging(tmp_path, journal="other")
    assert all(TIMESTAMPED.match(line) for line in lines), lines


def test_voiced_log_level_environment_overrides_the_configured_level(tmp_path):
    lines = run_logging(tmp_path, journal="match", VOICED_LOG_LEVEL="debug")
    assert lines[0] == "<7>voiced.test: debug line"
    assert "noisy library line" not in "\n".join(lines)  # libraries stay at WARNING


@pytest.mark.parametrize(
    ("level", "prefix"),
    [
        (logging.DEBUG, "<7>"),
        (logging.INFO, "<6>"),
        (logging.WARNING, "<4>"),
        (logging.ERROR, "<3>"),
        (logging.CRITICAL, "<2>"),
    ],
)
def test_journal_formatter_maps_levels_to_syslog_priorities(level, prefix):
    record = logging.LogRecord("voiced", level, __file__, 1, "message", None, None)
    assert JournalFormatter("%(name)s: %(message)s").format(record) == f"{prefix}voiced: message"


# -- journald's native protocol ---------------------------------------------------------------


def parse_entry(data: bytes) -> dict[str, str]:
    """Decode one native-protocol datagram as journald does."""
    entry: dict[str, str] = {}
    while data:
        line, _, rest = data.partition(b"\n")
        if b"=" in line:
            name, _, value = line.partition(b"=")
            entry[name.decode()] = value.decode()
            data = rest
        else:  # NAME\n<le64 length><value>\n
            size = struct.unpack("<Q", rest[:8])[0]
            entry[line.decode()] = rest[8 : 8 + size].decode()
            data = rest[8 + size + 1 :]
    return entry


@pytest.fixture
def journal_socket(tmp_path) -> Iterator[tuple[str, socket.socket]]:
    path = str(tmp_path / "journal.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    server.bind(path)
    server.settimeout(5)
    yield path, server
    server.close()


def test_native_journal_entries_carry_priority_logger_code_and_run_fields(journal_socket):
    path, server = journal_socket
    handler = JournalHandler(path)
    log = logging.getLogger("voiced.events")
    record = log.makeRecord(
        "voiced.events",
        logging.WARNING,
        __file__,
        7,
        "%s ended",
        ("run",),
        None,
        extra=fields(run_id="abc123", site_id="kitchen", absent=None),
    )
    handler.emit(record)
    entry = parse_entry(server.recv(65536))
    assert entry["MESSAGE"] == "voiced.events: run ended"
    assert entry["PRIORITY"] == "4"
    assert entry["SYSLOG_IDENTIFIER"] == "voiced"
    assert entry["LOGGER"] == "voiced.events"
    assert entry["CODE_LINE"] == "7"
    assert (entry["RUN_ID"], entry["SITE_ID"]) == ("abc123", "kitchen")
    assert "ABSENT" not in entry
    handler.close()


def test_a_multi_line_message_is_one_entry_with_a_length_prefixed_value(journal_socket):
    path, server = journal_socket
    handler = JournalHandler(path)
    handler.emit(logging.LogRecord("voiced", logging.ERROR, "", 0, "one\ntwo", None, None))
    entry = parse_entry(server.recv(65536))
    assert entry["MESSAGE"] == "voiced: one\ntwo"
    assert entry["PRIORITY"] == "3"
    handler.close()


def test_without_a_reachable_journal_socket_there_is_no_native_handler(tmp_path):
    assert JournalHandler.if_reachable(str(tmp_path / "absent.sock")) is None


def test_when_the_journal_goes_away_records_fall_back_to_prefixed_stderr(tmp_path, capsys):
    path = str(tmp_path / "journal.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    server.bind(path)
    handler = JournalHandler.if_reachable(path)
    assert handler is not None
    server.close()
    os.unlink(path)
    handler.fallback.stream = sys.stderr
    handler.emit(logging.LogRecord("voiced.x", logging.INFO, "", 0, "still here", None, None))
    assert capsys.readouterr().err == "<6>voiced.x: still here\n"
    handler.close()


def test_encode_entry_skips_names_journald_would_reject():
    assert encode_entry({"MESSAGE": "x", "bad-name": "y", "_TRUSTED": "z"}) == b"MESSAGE=x\n"


def test_a_fatal_message_outside_journald_is_printed_to_stderr_as_is(capsys, monkeypatch):
    monkeypatch.delenv("JOURNAL_STREAM", raising=False)
    report_fatal("voiced: configuration error:\nline two")
    assert capsys.readouterr().err == "voiced: configuration error:\nline two\n"
