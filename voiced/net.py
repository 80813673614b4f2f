"""Dialling a TCP peer: a connection that reached itself is not a peer.

A client that dials a port of its own host in the ephemeral range while nothing listens there
can be given that very port as its source and connect to itself (TCP's simultaneous open): it
holds the port the service needs and hears its own requests as answers.
"""

from __future__ import annotations

import socket


def reached_itself(sock: socket.socket) -> bool:
    """Whether a connected TCP socket is its own peer."""
    try:
        return sock.getsockname() == sock.getpeername()
    except OSError:  # no longer connected: not a peer either way, the read will say so
        return False
