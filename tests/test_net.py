"""A dialled connection that reached itself (TCP's simultaneous open) is not a peer: the
satellite dialer and the remote stages refuse it as nothing listening."""

from __future__ import annotations

import asyncio
import socket

import pytest
from voiced_plugins.remote import peer as remote_peer
from voiced_plugins.remote.peer import RemoteUnavailable, WyomingPeer
from voiced_plugins.wyoming_server import refuse_self_connection

from voiced.api.net import reached_itself


def self_connected() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.connect(sock.getsockname())  # allowed on Linux: the socket becomes its own peer
    return sock


def test_a_socket_connected_to_itself_reached_itself():
    with self_connected() as sock:
        assert reached_itself(sock)


def test_a_connection_to_a_listening_server_did_not():
    server = socket.create_server(("127.0.0.1", 0))
    with server, socket.create_connection(server.getsockname()) as sock:
        assert not reached_itself(sock)


def test_a_socket_no_longer_connected_did_not():
    with socket.socket() as sock:
        assert not reached_itself(sock)


def test_a_remote_stage_that_dialled_itself_says_nothing_listens_and_rests(monkeypatch):
    sock = self_connected()
    port = sock.getsockname()[1]
    monkeypatch.setattr(remote_peer.socket, "create_connection", lambda *a, **k: sock)
    peer = WyomingPeer(f"tcp://127.0.0.1:{port}", retry_seconds=30)
    with pytest.raises(RemoteUnavailable, match=r"nothing listens on .*reached itself"):
        peer.connect()
    assert sock.fileno() == -1  # closed, so the port is free for the service
    assert peer.resting


async def test_a_satellite_dial_that_reached_itself_is_closed_and_refused():
    sock = self_connected()
    _, writer = await asyncio.open_connection(sock=sock)
    uri = f"tcp://127.0.0.1:{sock.getsockname()[1]}"
    with pytest.raises(ConnectionError, match=rf"nothing listens on {uri} \(.*itself\)"):
        refuse_self_connection(writer, uri)
    assert writer.is_closing()


async def test_a_satellite_dial_to_a_listening_server_is_kept():
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    _, writer = await asyncio.open_connection("127.0.0.1", port)
    refuse_self_connection(writer, f"tcp://127.0.0.1:{port}")
    assert not writer.is_closing()
    writer.close()
    server.close()
