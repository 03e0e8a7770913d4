"""`FaultProxy`: a TCP pass-through in front of one dependency, behind a switch (issue 14, the
local stack's outages; issue 26, the fleet simulator's core-api). Asyncio, standard library.

Modes (`set_mode`):
- `pass`: bytes are copied unchanged both ways, one upstream connection per client
  connection; when the upstream cannot be reached the client's connection is cut.
- `hang`: connections are accepted and read, never answered: what a hung dependency looks like.
- `refuse`: not listening: connection refused, as when the service has gone away.

Every mode change cuts the open connections; leaving `refuse` listens again on the same port.
`scripts/fault_proxy.py` runs one as a process of the stack (`scripts/dev stop NAME` kills it);
benches/fleet switches one in process.
"""

from __future__ import annotations

import asyncio

CHUNK = 64 * 1024
MODES = ("pass", "hang", "refuse")


class FaultProxy:
    """Listens on `host:port` (port 0: the OS's pick, kept across `refuse`) and forwards to
    `target_host:target_port` (module doc)."""

    def __init__(self, target_port: int, target_host: str = "127.0.0.1", host: str = "127.0.0.1",
                 port: int = 0) -> None:
        self.target_host = target_host
        self.target_port = target_port
        self.host = host
        self.port = port
        self.mode = "pass"
        self._server: asyncio.base_events.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        """Starts listening; `port` is then the bound port."""
        self._server = await asyncio.start_server(self._handle, self.host, self.port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]

    async def serve_forever(self) -> None:
        """Starts and serves until cancelled."""
        await self.start()
        await asyncio.Event().wait()

    async def set_mode(self, mode: str) -> None:
        """Switches to `mode` (one of MODES; ValueError otherwise), cutting open connections."""
        if mode not in MODES:
            raise ValueError(f"a fault proxy's mode is one of {', '.join(MODES)}, not {mode!r}")
        if mode == self.mode:
            return
        previous, self.mode = self.mode, mode
        self._cut()
        if mode == "refuse" and self._server:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        elif previous == "refuse":
            await self.start()

    async def stop(self) -> None:
        """Cuts the open connections and stops listening."""
        self._cut()
        if self._server:
            self._server.close()

    def _cut(self) -> None:
        for w in list(self._open):
            w.close()
        self._open.clear()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Copies until EOF or an error on either side, then closes the writing side."""
        try:
            while data := await reader.read(CHUNK):
                if self.mode == "pass":
                    writer.write(data)
                    await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def _handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        self._open.add(client_w)
        try:
            if self.mode == "hang":
                while await client_r.read(CHUNK):
                    pass
                return
            try:
                up_r, up_w = await asyncio.open_connection(self.target_host, self.target_port)
            except OSError:
                return  # the dependency behind is down too: the client's connection is cut
            self._open.add(up_w)
            await asyncio.gather(self._pipe(client_r, up_w), self._pipe(up_r, client_w))
            self._open.discard(up_w)
        except (ConnectionError, OSError):
            pass
        finally:
            self._open.discard(client_w)
            client_w.close()
