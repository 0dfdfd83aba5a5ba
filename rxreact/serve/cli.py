"""``rxreact serve``: the chat page and the UI message stream endpoints over uvicorn.

One worker keeps conversations in a SQLite file and runs in an in-memory event log; with
``--redis URL`` the memory and the event log are in Redis, so several workers (``--workers N``,
or processes on several machines) share conversations and a resume can land on any of them.

The workers are separate processes that import the app by name, so the command line travels to
them as JSON in ``RXREACT_SERVE_CONFIG`` and :func:`app_from_env` builds each worker's app.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from typing import Any

__all__ = ["CONFIG_ENV", "add_serve_command", "app_from_env", "serve"]

CONFIG_ENV = "RXREACT_SERVE_CONFIG"
"""The environment variable that carries ``rxreact serve``'s options to its workers."""


def add_serve_command(commands: Any) -> None:
    """Register ``serve`` on the ``rxreact`` command's subparsers."""
    parser = commands.add_parser(
        "serve",
        help="serve the chat page and the AI SDK UI message stream endpoints",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--workers", type=int, default=1, help="worker processes (needs --redis)")
    parser.add_argument(
        "--tools", metavar="MODULE:NAME", action="append", default=[],
        help="tools to offer: a @tool function or a list of them, repeatable "
        "(default: the demo's tools)",
    )  # fmt: skip
    parser.add_argument("--redis", metavar="URL", default=None, help="Redis memory and event log")
    parser.add_argument(
        "--memory", metavar="PATH", default=None,
        help="SQLite file of the conversations without --redis (default: as for `rxreact chat`)",
    )  # fmt: skip
    parser.add_argument("--model", default=None, help="model name (default: $RXREACT_MODEL)")
    parser.add_argument("--base-url", default=None, help="endpoint (default: $OPENAI_BASE_URL)")
    parser.add_argument("--max-rounds", type=int, default=5)
    parser.add_argument("--system", default=None, help="system prompt")
    parser.add_argument(
        "--demo", action="store_true",
        help="answer with the no-key demo model (a loopback mock) instead of a real endpoint",
    )  # fmt: skip
    parser.add_argument("--on-busy", choices=("queue", "reject"), default="reject")
    parser.set_defaults(run=serve)


def serve(args: argparse.Namespace) -> int:
    """Run uvicorn with ``args`` (blocks until interrupted)."""
    try:
        import uvicorn
    except ImportError:
        print("rxreact serve needs the serve extra: pip install 'rxreact[serve]'", file=sys.stderr)
        return 2
    if args.workers > 1 and not args.redis:
        print(
            "rxreact serve: several workers share runs through Redis: add --redis URL",
            file=sys.stderr,
        )
        return 2
    config = {
        key: getattr(args, key)
        for key in (
            "tools",
            "redis",
            "memory",
            "model",
            "base_url",
            "max_rounds",
            "system",
            "demo",
            "on_busy",
        )
    }
    os.environ[CONFIG_ENV] = json.dumps(config)
    # Built here first so a bad option fails once, readably, rather than in every worker; one
    # worker serves this very app, several build their own from the environment.
    app = app_from_env()
    settings = uvicorn.Config(
        app if args.workers == 1 else "rxreact.serve.cli:app_from_env",
        factory=args.workers > 1,
        host=args.host,
        port=args.port,
        workers=args.workers,
        log_level="info",
        timeout_graceful_shutdown=5,
    )
    # Listening before the workers start: a request sent at once waits in the backlog instead of
    # being refused while they import, and the address printed is the one bound (--port 0).
    sock = settings.bind_socket()
    sock.listen(settings.backlog)
    host, port = sock.getsockname()[:2]
    print(f"rxreact serve: listening on http://{host}:{port}", file=sys.stderr, flush=True)
    if args.workers > 1:
        from uvicorn.supervisors import Multiprocess

        Multiprocess(settings, sockets=[sock]).run()
    else:
        uvicorn.Server(settings).run(sockets=[sock])
    return 0


def app_from_env() -> Any:
    """The app of one worker, from ``$RXREACT_SERVE_CONFIG`` (uvicorn's factory)."""
    from rxreact import ChatMemory, EventLog, InMemoryEventLog, RedisChatMemory, RedisEventLog
    from rxreact._cli.chat import load_tools, open_memory
    from rxreact.agent.react_agent import ReactAgent
    from rxreact.model.openai.client import OpenAIChatModel
    from rxreact.serve.app import create_app

    config: dict[str, Any] = json.loads(os.environ.get(CONFIG_ENV, "{}"))
    base_url, api_key = config.get("base_url"), None
    if config.get("demo"):
        from rxreact.demo import demo_model_script
        from rxreact.testing import MockOpenAIServer

        mock = MockOpenAIServer(demo_model_script).start()  # lives as long as the worker
        base_url, api_key = mock.base_url, "sk-demo"
    model = OpenAIChatModel(config.get("model") or ("mock-weather-model" if api_key else None),
                            base_url=base_url, api_key=api_key)  # fmt: skip
    tools = load_tools(config.get("tools") or [])
    if not tools:
        from rxreact.demo import demo_tools

        tools = list(demo_tools())
    redis_url = config.get("redis")
    if redis_url:
        memory: ChatMemory = RedisChatMemory(redis_url)
        event_log: EventLog = RedisEventLog(redis_url)
    else:
        memory = open_memory(config.get("memory"))
        event_log = InMemoryEventLog()
    agent = ReactAgent(
        model,
        tools,
        max_rounds=config.get("max_rounds", 5),
        system_prompt=config.get("system"),
        memory=memory,
        event_log=event_log,
        on_busy=config.get("on_busy", "reject"),
    )
    app = create_app(agent)
    if redis_url:
        # Every worker resumes the runs of workers that died (each run is claimed by one).
        app.state.runs_keeper = agent.runs_keeper()
    # What start-up made (modules, the app, the agent) lives as long as the worker: frozen, it
    # is no longer walked by every full collection, which at thousands of conversations is
    # what sets the p99 latency.
    gc.collect()
    gc.freeze()
    return app
