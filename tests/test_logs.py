"""Logging: timestamps on a terminal or file, priority prefixes and no timestamps under journald.

systemd sets JOURNAL_STREAM=<dev>:<inode> of the stream it connected to stderr; the tests run
a real process whose stderr is a file and set JOURNAL_STREAM to that file's identity (or not).
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from voiced.logs import JournalFormatter

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
