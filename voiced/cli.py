"""The ``voiced`` command line."""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from voiced import __version__
from voiced.config import EXIT_CONFIG, ConfigError, masked
from voiced.events import Event, print_json_line
from voiced.hookspecs import hookimpl
from voiced.limits import CommandRefused, TextTooLong
from voiced.logs import report_fatal, setup_logging
from voiced.pipeline import StartupError
from voiced.plugins import PluginError, PluginHost, load_plugins

log_cli = logging.getLogger("voiced.cli")


@functools.cache
def plugin_host() -> PluginHost:
    """Plugins, loaded once per process (subcommand discovery and the command share them)."""
    return load_plugins()


class EventPrinter:
    """Prints events as JSON lines on stdout (``--events json``)."""

    @hookimpl
    def voiced_event(self, event: Event) -> None:
        print_json_line(event)


def stage_overrides(kind: str, specs: list[str], host: PluginHost) -> dict[str, Any]:
    """``--source file:PATH`` -> pipeline.source = ["file"], stages.source.file.path = PATH."""
    names: list[str] = []
    options: dict[str, dict[str, Any]] = {}
    for index, spec in enumerate(specs):
        name, _, value = spec.partition(":")
        stage = host.stage_spec(kind, name)
        if stage is None:
            available = ", ".join(host.stage_names(kind)) or "none"
            raise ConfigError(
                f"--{kind} {spec}: no {kind} stage named {name!r}; available: {available}"
            )
        key = name if len(specs) == 1 else f"{name}#{index + 1}"
        names.append(key)
        opts: dict[str, Any] = {}
        if value:
            if not stage.shorthand:
                raise ConfigError(f"--{kind} {spec}: stage {name!r} takes no ':VALUE'")
            opts[stage.shorthand] = value
        if len(specs) > 1 and stage.options is not None and "site_id" in stage.options.model_fields:
            opts["site_id"] = f"{name}{index + 1}"
        if opts:
            options[key] = opts
    return {"pipeline": {kind: names}, "stages": {kind: options}}


def merge(*dicts: dict[str, Any]) -> dict[str, Any]:
    from voiced.config import deep_merge

    out: dict[str, Any] = {}
    for d in dicts:
        out = deep_merge(out, d)
    return out


# -- commands -------------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    from voiced.daemon import Daemon

    setup_logging(args.log_level or os.environ.get("VOICED_LOG_LEVEL", "INFO"))
    host = plugin_host()
    check_file_sources(args.source or [])
    overrides = cli_overrides(args, host)
    extra = [("cli-events", EventPrinter())] if args.events == "json" else []
    if args.events == "json":
        overrides = merge(
            overrides,
            {"pipeline": {"service": [s for s in _configured_services(args) if s != "log"]}},
        )
    daemon = Daemon(args.config, overrides, extra, host=host, stop_deadline=True)
    setup_logging(args.log_level or daemon.settings.log_level)
    return asyncio.run(daemon.run())


def unreadable(path: Path) -> str | None:
    """Why an input file cannot be read ("no such file", ...), or None: checked before any
    model loads, so a typo fails at once."""
    if not path.exists():
        return "no such file"
    if path.is_dir():
        return "is a folder, not a sound file"
    if not os.access(path, os.R_OK):
        return "not readable (permission denied)"
    return None


def check_file_sources(specs: list[str]) -> None:
    """``--source file:PATH`` with a PATH that cannot be read: a clear error before start-up."""
    for spec in specs:
        name, _, value = spec.partition(":")
        if name != "file" or not value or value == "-" or value.startswith("bundled:"):
            continue
        reason = unreadable(Path(value).expanduser())
        if reason:
            raise ConfigError(f"--source {spec}: {value}: {reason}")


def _configured_services(args: argparse.Namespace) -> list[str]:
    from voiced.config import load_settings

    return load_settings(args.config).pipeline.service


def cli_overrides(args: argparse.Namespace, host: PluginHost) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    for kind in ("source", "wake", "sink", "asr", "tts"):
        specs = getattr(args, kind, None)
        if specs:
            parts.append(stage_overrides(kind, specs, host))
    if getattr(args, "realtime", False):
        if getattr(args, "source", None):
            for kind_opts in parts:
                for opts in kind_opts.get("stages", {}).get("source", {}).values():
                    opts["realtime"] = True
        else:  # the configured sources that can play at real time (their options say so)
            from voiced.config import load_settings

            for name in load_settings(getattr(args, "config", None)).pipeline.source:
                spec = host.stage_spec("source", name)
                if spec and spec.options and "realtime" in spec.options.model_fields:
                    parts.append({"stages": {"source": {name: {"realtime": True}}}})
    if getattr(args, "site_id", None):
        parts.append({"site_id": args.site_id})
    if getattr(args, "muted", False):
        parts.append({"conversation": {"muted": True}})
    return merge(*parts) if parts else {}


def cmd_plugins(args: argparse.Namespace) -> int:
    from voiced.config import load_settings

    settings = load_settings(args.config)
    host = load_plugins(settings.plugins.disabled) if settings.plugins.disabled else plugin_host()
    rows = []
    for info in host.plugins:
        rows.append(
            {
                "name": info.name,
                "status": info.status,
                "module": info.module,
                "from": f"{info.distribution} {info.version}"
                + (" (built-in)" if info.builtin else ""),
                "hooks": host.hooks_of(info.name),
                "stages": info.stages,
                "error": info.error,
            }
        )
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        print(f"{row['name']:<20} {row['status']:<9} {row['from']}")
        print(f"    module: {row['module']}")
        if row["hooks"]:
            print(f"    hooks:  {', '.join(row['hooks'])}")
        if row["stages"]:
            print(f"    stages: {', '.join(row['stages'])}")
        if row["error"]:
            print(f"    error:  {row['error']}")
    return 0


def cmd_config(args: argparse.Namespace) -> int:
    from voiced.daemon import prepare

    settings, host = prepare(args.config, host=plugin_host())
    data = settings.model_dump(mode="json")
    # Show each configured stage's options with its plugin's defaults filled in.
    from voiced.building import configured_stages, validate_options

    effective: dict[str, dict[str, Any]] = {}
    for kind, name, key in configured_stages(settings):
        options = validate_options(host, settings, kind, name, key)
        if options is not None:
            effective.setdefault(kind, {})[name] = options.model_dump(mode="json")
    data["stages"] = effective
    data = masked(data)
    source = str(settings.config_file) if settings.config_file else "built-in defaults"
    if args.json:
        print(json.dumps({"config_file": source, **data}, indent=2))
    else:
        print(f"# effective configuration (file: {source}; VOICED_* environment applied)")
        print(to_toml(data))
    return 0


def to_toml(data: dict[str, Any], prefix: str = "") -> str:
    """A small TOML writer for the effective config (tables, scalars, lists)."""
    lines: list[str] = []
    tables: list[tuple[str, dict[str, Any]]] = []
    for key, value in data.items():
        if isinstance(value, dict):
            tables.append((key, value))
        else:
            lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
    out = []
    if lines:
        if prefix:
            out.append(f"[{prefix}]")
        out.extend(lines)
        out.append("")
    for key, value in tables:
        name = f"{prefix}.{_toml_key(key)}" if prefix else _toml_key(key)
        out.append(to_toml(value, name))
    return "\n".join(part for part in out if part is not None)


def _toml_key(key: str) -> str:
    return key if key.replace("-", "").replace("_", "").isalnum() else json.dumps(key)


def _toml_value(value: Any) -> str:
    if value is None:
        return '""  # unset'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(str(value))


def cmd_transcribe(args: argparse.Namespace) -> int:
    from voiced.audio import PCM_BYTES_PER_SECOND, AudioFormatError, read_pipeline_audio
    from voiced.daemon import prepare
    from voiced.pipeline import Pipeline

    missing = [path for path in args.files if unreadable(path)]
    for path in missing:
        print(f"error: {path}: {unreadable(path)}", file=sys.stderr)
    if len(missing) == len(args.files):
        return 1
    host = plugin_host()
    settings, host = prepare(args.config, cli_overrides(args, host), host=host)
    pipeline = Pipeline(settings, host)
    pipeline.build(only={"asr"})
    assert pipeline.asr is not None
    pipeline.asr.load()
    status = 1 if missing else 0
    for path in args.files:
        if path in missing:
            continue
        try:
            audio = read_pipeline_audio(path)
        except AudioFormatError as exc:
            print(f"error: {exc}", file=sys.stderr)
            status = 1
            continue
        started = time.monotonic()
        engine, transcript = pipeline.asr.call("transcribe", audio, args.language)
        seconds = time.monotonic() - started
        if args.json:
            audio_s = len(audio) / PCM_BYTES_PER_SECOND
            print(
                json.dumps(
                    {
                        "file": str(path),
                        "text": transcript.text,
                        "engine": engine,
                        "audio_seconds": round(audio_s, 3),
                        "seconds": round(seconds, 4),
                        "rtf": round(seconds / audio_s, 4),
                        **transcript.data,
                    }
                )
            )
        else:
            print(transcript.text if len(args.files) == 1 else f"{path}: {transcript.text}")
    pipeline.asr.close()
    return status


def cmd_intent(args: argparse.Namespace) -> int:
    from voiced.building import make_stage
    from voiced.daemon import prepare
    from voiced.pipeline import Pipeline

    sentences = intent_sentences(args)
    if not sentences:
        print("voiced intent: no sentence given", file=sys.stderr)
        return 1
    settings, host = prepare(args.config, host=plugin_host())
    pipeline = Pipeline(settings, host)
    # A one-shot command starts no services: handlers that publish through one say so at INFO.
    pipeline.services_offline = "voiced intent starts no services"
    if settings.pipeline.service:
        log_cli.info(
            "voiced intent starts no services (%s): handlers that publish through them "
            "only say what they would do",
            ", ".join(settings.pipeline.service),
        )
    components = []
    for kind, names in (
        ("intent", settings.pipeline.intent),
        ("handler", settings.pipeline.handler),
    ):
        for name in reversed(names):  # pluggy calls the last registered first
            component = make_stage(host, settings, kind, name, app=pipeline)
            component.load()
            pipeline.components[(kind, name)] = component
            host.pm.register(component, name=f"{kind}:{name}")
            components.append(component)
    try:
        misses = sum(
            0 if recognize_one(text, settings, host, pipeline, args.json) else 1
            for text in sentences
        )
    finally:
        for component in components:
            component.close()
    return 0 if misses == 0 else 1


def intent_sentences(args: argparse.Namespace) -> list[str]:
    """The sentences to recognize: the argument, or one a line from ``--file`` (``-``: stdin)."""
    if args.file is None:
        return [args.text] if args.text is not None else []
    if args.file == "-":
        lines = sys.stdin.read(MAX_SENTENCE_FILE_CHARS + 1)
    else:
        path = Path(args.file)
        if not path.is_file():
            raise ConfigError(f"--file {args.file}: no such file")
        with path.open(encoding="utf-8", errors="replace") as handle:
            lines = handle.read(MAX_SENTENCE_FILE_CHARS + 1)
    if len(lines) > MAX_SENTENCE_FILE_CHARS:
        raise ConfigError(f"--file {args.file}: longer than {MAX_SENTENCE_FILE_CHARS} characters")
    texts = [line.strip() for line in lines.splitlines()]
    return [text for text in texts if text and not text.startswith("#")]


MAX_SENTENCE_FILE_CHARS = 1_000_000


def recognize_one(text: str, settings: Any, host: PluginHost, pipeline: Any, as_json: bool) -> bool:
    """Recognize and handle one sentence; print the result; whether an intent was found."""
    from voiced.context import RunContext
    from voiced.intents import Transcript

    context = RunContext(site_id=settings.site_id, language=settings.language, app=pipeline)
    transcript = Transcript(text=text, language=settings.language, engine="cli")
    started = time.monotonic()
    intent = host.pm.hook.voiced_recognize(transcript=transcript, context=context)
    recognized = time.monotonic()
    response = host.pm.hook.voiced_handle(intent=intent, context=context) if intent else None
    result = {
        "text": text,
        "intent": intent.to_dict() if intent else None,
        "response": response.to_dict() if response else None,
        "recognize_ms": round((recognized - started) * 1000, 3),
        "reasons": context.data.get("intent_errors", []),
    }
    if as_json:
        print(json.dumps(result, indent=2, default=str, ensure_ascii=False))
    elif intent is None:
        print(f"not recognized: {text!r}")
        for reason in result["reasons"]:
            print(f"  {reason}")
    else:
        print(f"intent:   {intent.name}  (by {intent.recognizer}, {result['recognize_ms']:.2f} ms)")
        for slot, value in intent.slots.items():
            print(f"  {slot}: {value}")
        print(f"response: {response.speech if response else '(no handler answered)'}")
    return intent is not None


def cmd_say(args: argparse.Namespace) -> int:
    from voiced.daemon import prepare
    from voiced.pipeline import Pipeline

    if not args.text.strip():
        print("voiced say: nothing to say: the text is empty", file=sys.stderr)
        return 1
    host = plugin_host()
    overrides = cli_overrides(args, host)
    if args.out:
        overrides = merge(
            overrides,
            {"pipeline": {"sink": ["wav"]}, "stages": {"sink": {"wav": {"path": args.out}}}},
        )
    extra = [("cli-events", EventPrinter())] if args.events == "json" else []
    settings, host = prepare(args.config, overrides, extra, host=host)
    setup_logging(args.log_level or settings.log_level)

    # Of the services only the event logger: a one-shot `say` starts no MQTT or Wyoming.
    settings.pipeline.service = ["log"] if args.events == "log" else []

    async def speak() -> None:
        pipeline = Pipeline(settings, host)
        pipeline.build(only={"tts", "sink", "service"})
        await pipeline.start()
        try:
            await pipeline.say(args.text)
        finally:
            await pipeline.stop()

    try:
        asyncio.run(speak())
    except (TextTooLong, CommandRefused) as exc:
        print(f"voiced say: {exc}", file=sys.stderr)
        return 1
    if args.out:
        print(args.out)
    return 0


# -- parser ---------------------------------------------------------------------------------

Command = tuple[str, str, Callable[[argparse.ArgumentParser], None], Callable[..., int]]


def plugin_commands() -> list[Command]:
    """Subcommands that plugins add through ``voiced_register_commands``."""
    commands: list[Command] = []
    try:
        host = plugin_host()
    except PluginError:
        return commands

    def add_command(
        name: str, help: str, configure: Callable[..., None], run: Callable[..., int]
    ) -> None:
        commands.append((name, help, configure, run))

    host.pm.hook.voiced_register_commands(add_command=add_command)
    return commands


def build_parser(extra: list[Command]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="voiced",
        description="A plugin-based voice pipeline daemon: audio in, Whisper, Home Assistant "
        "intents, Piper, and every step as an event (log, MQTT).",
    )
    parser.add_argument("--version", action="version", version=f"voiced {__version__}")
    parser.add_argument(
        "--config",
        "-c",
        metavar="PATH",
        help="TOML config (default: $VOICED_CONFIG, config/voiced.toml, "
        "/etc/voiced/voiced.toml, else built-in defaults)",
    )
    parser.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def stage_args(p: argparse.ArgumentParser, kinds: tuple[str, ...]) -> None:
        helps = {
            "source": "audio source NAME[:VALUE], e.g. file:PATH or stdin (repeatable: sites)",
            "sink": "answer sink NAME[:VALUE], e.g. wav:DIR (repeatable)",
            "asr": "ASR engine NAME (repeatable: a fallback chain)",
            "tts": "TTS engine NAME (repeatable: a fallback chain)",
            "wake": "wake word stage NAME[:VALUE], e.g. openwakeword:hey_jarvis",
        }
        for kind in kinds:
            p.add_argument(f"--{kind}", action="append", metavar="NAME[:VALUE]", help=helps[kind])

    run = sub.add_parser(
        "run",
        help="run the daemon (until its file sources end, or a signal)",
        description="Run the voice pipeline. With a file source it processes "
        "the file and exits; with a microphone or a server it runs until "
        "SIGTERM/SIGINT. SIGHUP reloads the config.",
    )
    stage_args(run, ("source", "wake", "sink", "asr", "tts"))
    run.add_argument("--muted", action="store_true", help="start muted (unmute over MQTT)")
    run.add_argument("--realtime", action="store_true", help="feed files at speaking pace")
    run.add_argument("--site-id", help="the site (room) id of the local source")
    run.add_argument(
        "--events",
        choices=["log", "json"],
        default="log",
        help="log: readable event lines on stderr; json: JSON lines on stdout",
    )
    run.set_defaults(func=cmd_run)

    p = sub.add_parser("plugins", help="list plugins, their hooks, stages and origin")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_plugins)

    p = sub.add_parser("config", help="print the effective configuration (secrets masked)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_config)

    p = sub.add_parser("transcribe", help="transcribe sound files with the configured ASR")
    p.add_argument("files", nargs="+", type=Path)
    p.add_argument("--json", action="store_true", help="one JSON line per file, with timings")
    p.add_argument("--language")
    stage_args(p, ("asr",))
    p.set_defaults(func=cmd_transcribe)

    p = sub.add_parser("intent", help="recognize the intent of a sentence and answer it")
    p.add_argument("text", nargs="?", help="the sentence (or --file)")
    p.add_argument(
        "--file",
        metavar="FILE",
        help="sentences, one a line ('-': stdin), recognized with one grammar load",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_intent)

    p = sub.add_parser("say", help="speak text with the configured TTS to the sinks")
    p.add_argument("text")
    p.add_argument("--out", metavar="FILE.wav", help="write the audio to this WAV file")
    p.add_argument("--events", choices=["log", "json"], default="log")
    stage_args(p, ("tts", "sink"))
    p.set_defaults(func=cmd_say)

    from voiced import doctor, service_install, setup, speakers_cli

    p = sub.add_parser("doctor", help=doctor.HELP, description=doctor.HELP)
    doctor.configure_doctor_parser(p)
    p.set_defaults(func=doctor.run_doctor)
    p = sub.add_parser(
        "install-service", help=service_install.HELP, description=service_install.HELP
    )
    service_install.configure_install_parser(p)
    p.set_defaults(func=service_install.run_install_service)
    p = sub.add_parser("setup", help=setup.HELP, description=setup.command.DESCRIPTION)
    setup.configure_setup_parser(p)
    p.set_defaults(func=setup.run_setup)
    p = sub.add_parser("speakers", help=speakers_cli.HELP, description=speakers_cli.HELP)
    speakers_cli.configure_speakers_parser(p)
    p.set_defaults(func=speakers_cli.run_speakers)

    groups: dict[str, argparse._SubParsersAction] = {}
    for name, help_text, configure, func in extra:
        head, _, tail = name.partition(" ")
        if tail:
            if head not in groups:
                group = sub.add_parser(head, help=f"{head} commands")
                groups[head] = group.add_subparsers(
                    dest=f"{head}_command", metavar="COMMAND", required=True
                )
            p = groups[head].add_parser(tail, help=help_text, description=help_text)
        else:
            p = sub.add_parser(name, help=help_text, description=help_text)
        configure(p)
        p.set_defaults(func=func)
    return parser


PROGRESS_LOGGER = "voiced.progress"
"""First-time preparation (joining a split model, converting one): said at INFO by every
command, so a one-shot command that waits on it does not look hung."""


def main(argv: list[str] | None = None) -> int:
    setup_logging(os.environ.get("VOICED_LOG_LEVEL", "WARNING"))
    logging.getLogger(PROGRESS_LOGGER).setLevel(logging.INFO)
    parser = build_parser(plugin_commands())
    args = parser.parse_args(argv)
    if args.command not in ("run", "say"):
        setup_logging(args.log_level or "WARNING")
    try:
        return int(args.func(args) or 0)
    except ConfigError as exc:
        report_fatal(f"voiced: configuration error:\n{exc}")
        return EXIT_CONFIG
    except PluginError as exc:
        report_fatal(f"voiced: plugin error: {exc}")
        return EXIT_CONFIG
    except StartupError as exc:
        print(f"voiced: cannot start: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
