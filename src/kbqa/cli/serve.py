"""``kbqa serve``: the chat page in a browser, on 127.0.0.1 (:mod:`kbqa.serve.app`)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kbqa.cli.app import app, fail
from kbqa.cli.ask import load_models, make_context
from kbqa.cli.settings import context_options


@app.command()
@context_options()
def serve(
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0: any free one).")] = 8765,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            help="Where threads are kept, as for kbqa chat: a SQLite file or a postgresql:// URL "
            "\\[default: ~/.cache/kbqa/chat.sqlite]",
        ),
    ] = None,
    *,
    settings: dict[str, Any],
) -> None:
    """Ask questions from a web page: tokens stream in, each node's progress shows, and the
    answer comes with its sources (each with its sentence highlighted and a link); threads
    persist as in kbqa chat. Serves only on 127.0.0.1; Ctrl-C stops it."""
    from kbqa.errors import KBQAError
    from kbqa.serve.app import INSTALL_HINT, LOOPBACK, ChatService, create_app

    if not 0 <= port <= 65535:
        fail(f"--port must be in 0..65535, got {port}")
    if db is not None and not db.strip():
        fail("--db is empty: give a SQLite file or a postgresql:// URL, or leave --db out")
    try:
        import uvicorn
    except ImportError:
        fail(f"kbqa serve needs uvicorn: {INSTALL_HINT}")
    ctx = make_context(settings)
    try:
        load_models(ctx)
        service = ChatService(ctx, db)
        application = create_app(service)
    except (KBQAError, ValueError) as exc:
        fail(str(exc))
    import socket

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((LOOPBACK, port))
        sock.listen(128)  # connections wait in the backlog until uvicorn accepts them
    except OSError as exc:
        service.store.close()
        fail(f"cannot serve on {LOOPBACK}:{port}: {exc.strerror or exc}")
    url = f"http://{LOOPBACK}:{sock.getsockname()[1]}/"
    typer.echo(
        f"kbqa serve: {url} ({ctx.index_dir}, {ctx.readers_said()}); Ctrl-C stops it", err=True
    )
    server = uvicorn.Server(uvicorn.Config(application, log_level="warning"))
    try:
        server.run(sockets=[sock])
    finally:
        service.store.close()
