"""What every HTTP response of the server holds to, as an ASGI middleware around the app:

- the `Host` header, where there is one, names this server: a loopback bind answers to
  localhost names only, another to those, to its own address (any IP address where it binds
  them all) and to `serving.allowed_hosts`. A page of another site whose name it points at
  this address (DNS rebinding) is then refused by that name, though its browser thinks it is
  the same origin;
- every response says `X-Content-Type-Options: nosniff` and that no other site may frame it
  (`X-Frame-Options`, and CSP's `frame-ancestors` for the browsers that read only that);
- `HEAD` is answered wherever `GET` is, with the same headers and no body.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Sequence
from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'",
}
LOCALHOST = "localhost"


def host_name(header: str | None) -> str | None:
    """The name of a `Host` header, lower-case, without port or an IPv6 address's brackets;
    None where there is none."""
    if not header:
        return None
    try:
        return urlsplit(f"//{header}").hostname
    except ValueError:  # "[::1" and the like
        return None


def _address(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


def is_loopback(name: str) -> bool:
    """Whether a host name or address is this machine's loopback: `localhost` (and names under
    it), 127.0.0.0/8, ::1."""
    address = _address(name)
    if address is not None:
        return address.is_loopback
    return name == LOCALHOST or name.endswith("." + LOCALHOST)


def host_allowed(name: str | None, bind: str, allowed: Sequence[str]) -> bool:
    """Whether a request whose `Host` names `name` is for a server bound to `bind`."""
    if name is None:
        return False
    if "*" in allowed or is_loopback(name):
        return True
    if any(
        name == entry or (entry.startswith("*.") and name.endswith(entry[1:])) for entry in allowed
    ):
        return True
    if is_loopback(bind):
        return False
    bound, address = _address(bind), _address(name)
    if address is None:
        return False  # a name, which only the allow-list grants
    return bound is None or bound.is_unspecified or address == bound


class Guard:
    def __init__(self, app: ASGIApp, bind: str, allowed_hosts: Sequence[str]) -> None:
        self.app = app
        self.bind = bind
        self.allowed = [entry.lower() for entry in allowed_hosts]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        head = scope["method"] == "HEAD"

        async def guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message).update(SECURITY_HEADERS)
            elif message["type"] == "http.response.body" and head:
                message = {**message, "body": b""}  # its Content-Length stays: GET's
            await send(message)

        header = Headers(scope=scope).get("host")
        # No Host at all (HTTP/1.0) is no page's request: a browser always sends the name.
        if header is not None and not host_allowed(host_name(header), self.bind, self.allowed):
            await self._refuse(guarded, header)
            return
        if head:
            scope = {**scope, "method": "GET"}
        await self.app(scope, receive, guarded)

    async def _refuse(self, send: Send, header: str | None) -> None:
        names = "localhost names"
        if not is_loopback(self.bind):
            bound = _address(self.bind)
            names += ", IP addresses" if bound is None or bound.is_unspecified else f", {self.bind}"
        error = (
            f"the Host header {header!r} is not a name of this server (it answers to {names}"
            f"{''.join(f', {entry}' for entry in self.allowed)}): serve that name with "
            "serving.allowed_hosts=NAME"
        )
        body = json.dumps({"error": error}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 400,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
