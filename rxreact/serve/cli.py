"""``rxreact serve``: the chat page and the UI message stream endpoints over uvicorn.

One worker keeps conversations in a SQLite file and runs in an in-memory event log (in a SQLite
file with ``--event-log PATH``, so its runs outlive it: a restarted worker resumes them); with
``--redis URL`` the memory and the event log are in Redis, so several workers (``--workers N``,
or processes on several machines) share conversations and a resume can land on any of them.

Without ``--token-file`` the server has one anonymous user and answers on loopback only;
``--token-file PATH`` (one ``token user`` a line) gives each user their own conversations, and
is what a server on another interface needs (or ``--insecure-no-auth``, for a trusted network).

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

__all__ = [
    "CONFIG_ENV",
    "add_serve_command",
    "app_from_env",
    "is_loopback",
    "serve",
    "served_hosts",
]

DESCRIPTION = """\
Serve the chat page and the AI SDK UI message stream endpoints (POST /api/chat and the resume,
cancel and replay endpoints) over uvicorn; needs the serve extra: pip install 'rxreact[serve]'.

One worker keeps conversations in a SQLite file and runs in an in-memory event log (in a SQLite
file with --event-log PATH, so its runs outlive it: a restarted worker resumes them); with
--redis URL the memory and the event log are in Redis, so several workers (--workers N, or
processes on several machines) share conversations and a resume can land on any of them.

The endpoint is OPENAI_BASE_URL (else OpenAI's), the key OPENAI_API_KEY (a server on a
loopback address such as 127.0.0.1 needs none), the model RXREACT_MODEL; --base-url and
--model override them, --demo needs none of them."""

CONFIG_ENV = "RXREACT_SERVE_CONFIG"
"""The environment variable that carries ``rxreact serve``'s options to its workers."""


def add_serve_command(commands: Any) -> None:
    """Register ``serve`` on the ``rxreact`` command's subparsers."""
    from rxreact._cli.help import command_parser, examples

    parser = command_parser(
        commands,
        "serve",
        help="serve the chat page and the AI SDK UI message stream endpoints",
        description=DESCRIPTION,
        epilog=examples(
            ("rxreact serve --demo", "the chat page on http://127.0.0.1:8000, no key needed"),
            ("rxreact serve --tools my_tools:get_weather", "the configured model, your tools"),
            (
                "rxreact serve --workers 4 --redis redis://localhost:6379/0",
                "four worker processes sharing conversations and runs through Redis",
            ),
        ),
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on")
    parser.add_argument("--port", type=int, default=8000, help="port (0: a free one)")
    parser.add_argument(
        "--workers", type=int, default=1, help="worker processes (more than one needs --redis)"
    )
    parser.add_argument(
        "--tools", metavar="MODULE:NAME", action="append", default=[],
        help="tools to offer: a @tool function or a list of them, repeatable "
        "(default: none; the demo's tools with --demo)",
    )  # fmt: skip
    parser.add_argument(
        "--deps-factory", metavar="MODULE:NAME", default=None,
        help="fn(request, user) -> deps: each served run's RunContext deps (create_app's "
        "deps_factory; default: none)",
    )  # fmt: skip
    parser.add_argument(
        "--redis", metavar="URL", default=None,
        help="keep memory and the event log in Redis (default: SQLite and in memory, one worker)",
    )  # fmt: skip
    parser.add_argument(
        "--redis-cluster", action="store_true",
        help="--redis URL names a node of a Redis Cluster (docs/redis.md)",
    )  # fmt: skip
    parser.add_argument(
        "--memory", metavar="PATH", default=None,
        help="SQLite file of conversations without --redis, or a postgresql:// DSN "
        "(default: the one rxreact chat uses)",
    )  # fmt: skip
    parser.add_argument(
        "--event-log", metavar="PATH", default=None,
        help="SQLite file of runs' events without --redis, or a postgresql:// DSN (shared by "
        "--workers and hosts): a run outlives its worker, and a restarted one resumes it "
        "(default: in memory, lost with the worker)",
    )  # fmt: skip
    parser.add_argument(
        "--listen-dsn", metavar="DSN", default=None,
        help="with --event-log postgresql://...: a direct connection (not through PgBouncer) "
        "for LISTEN/NOTIFY, or 'poll' to poll (default: the event log's DSN)",
    )  # fmt: skip
    parser.add_argument(
        "--lost-after", metavar="SECONDS", type=float, default=None,
        help="seconds without a worker's heartbeat after which another resumes its runs "
        "(with --redis or --event-log; default: 30)",
    )  # fmt: skip
    parser.add_argument(
        "-m", "--model", default=None,
        help="model name, or provider:model (anthropic:claude-sonnet-4-5, openai:gpt-5, "
        "ollama:llama3.2...; default: $RXREACT_MODEL)",
    )  # fmt: skip
    parser.add_argument("--base-url", default=None, help="endpoint (default: $OPENAI_BASE_URL)")
    parser.add_argument(
        "--max-rounds", type=int, default=5, help="model requests with tools offered, per run"
    )
    parser.add_argument("--system", default=None, help="system prompt (default: none)")
    parser.add_argument(
        "--demo", action="store_true",
        help="answer with the no-key demo model (a loopback mock) instead of a real endpoint",
    )  # fmt: skip
    parser.add_argument(
        "--on-busy", choices=("queue", "reject"), default="reject",
        help="a message to a conversation whose answer is still running: wait, or refuse it",
    )  # fmt: skip
    parser.add_argument(
        "--token-file", metavar="PATH", default=None,
        help="bearer tokens, one 'token user' a line: each user sees only their conversations "
        "(default: none, one anonymous user on a loopback host)",
    )  # fmt: skip
    parser.add_argument(
        "--insecure-no-auth", action="store_true",
        help="serve a non-loopback host without --token-file (anyone who reaches it is the user)",
    )  # fmt: skip
    parser.add_argument(
        "--cors-origin", metavar="ORIGIN", action="append", default=[], dest="cors_origins",
        help="another origin (scheme://host[:port]) allowed to call the API from a browser; "
        "repeatable (default: the page's own origin only)",
    )  # fmt: skip
    parser.add_argument(
        "--request-deadline", metavar="SECONDS", type=float, default=60.0,
        help="seconds a request's headers and body may take to arrive, in total: a slower "
        "sender gets 408 and is disconnected (default: 60)",
    )  # fmt: skip
    parser.add_argument(
        "--limit-concurrency", metavar="N", type=int, default=1000,
        help="connections (and tasks) per worker past which new requests get 503 "
        "(default: 1000; each open answer stream is one)",
    )  # fmt: skip
    parser.add_argument(
        "--allowed-host", metavar="NAME", action="append", default=[], dest="allowed_hosts",
        help="another Host name the server answers (a LAN name, a proxy's); repeatable (default: "
        "any with --token-file, else loopback names and the --host address)",
    )  # fmt: skip
    parser.add_argument(
        "--unknown-resume", type=int, choices=(204, 404), default=204,
        help="the answer to a resume of a chat the server never saw: 204 as for an idle one "
        "(what useChat({resume: true}) expects of a new chat), or 404",
    )  # fmt: skip
    parser.set_defaults(run=serve)


def serve(args: argparse.Namespace) -> int:
    """Run uvicorn with ``args`` (blocks until interrupted)."""
    try:
        import uvicorn
    except ImportError:
        print("rxreact serve needs the serve extra: pip install 'rxreact[serve]'", file=sys.stderr)
        return 2
    if not args.token_file and not args.insecure_no_auth and not is_loopback(args.host):
        print(
            f"rxreact serve: without --token-file anyone who can reach {args.host} would run the "
            "agent (and its tools, on your API key): add --token-file PATH, or "
            "--insecure-no-auth if the network is yours alone",
            file=sys.stderr,
        )
        return 2
    if args.workers > 1 and not (args.redis or is_postgres(args.event_log)):
        print(
            "rxreact serve: several workers share runs through Redis or Postgres: add "
            "--redis URL or --event-log postgresql://...",
            file=sys.stderr,
        )
        return 2
    if args.redis and args.event_log:
        print("rxreact serve: --event-log is the event log without --redis", file=sys.stderr)
        return 2
    if args.redis_cluster and not args.redis:
        print("rxreact serve: --redis-cluster goes with --redis URL", file=sys.stderr)
        return 2
    if args.lost_after is not None and (args.lost_after <= 0 or not (args.redis or args.event_log)):
        print(
            "rxreact serve: --lost-after takes a positive number of seconds, with --redis or "
            "--event-log (an in-memory event log loses its runs with the worker)",
            file=sys.stderr,
        )
        return 2
    if args.request_deadline <= 0 or args.limit_concurrency < 1:
        print(
            "rxreact serve: --request-deadline takes a positive number of seconds, "
            "--limit-concurrency a positive count",
            file=sys.stderr,
        )
        return 2
    config = {
        key: getattr(args, key)
        for key in (
            "tools",
            "deps_factory",
            "redis",
            "redis_cluster",
            "memory",
            "event_log",
            "listen_dsn",
            "lost_after",
            "model",
            "base_url",
            "max_rounds",
            "system",
            "demo",
            "on_busy",
            "token_file",
            "insecure_no_auth",
            "cors_origins",
            "host",
            "allowed_hosts",
            "unknown_resume",
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
        limit_concurrency=args.limit_concurrency,
    )
    from rxreact.serve.deadline import with_request_deadline

    with_request_deadline(settings, args.request_deadline)  # slow senders are cut off
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
        _worker(settings, app).run(sockets=[sock])
    return 0


def _worker(settings: Any, app: Any) -> Any:
    """A uvicorn server that lets ``app``'s runs go once it stopped serving: in its shutdown,
    since after it uvicorn raises the signal that stopped it again, which ends the process."""
    import asyncio

    import uvicorn

    class Worker(uvicorn.Server):
        async def shutdown(self, sockets: list[Any] | None = None) -> None:
            await super().shutdown(sockets)
            await asyncio.to_thread(_let_go, app)

    return Worker(settings)


def _let_go(app: Any) -> None:
    """Stop resuming runs and close a durable event log, which commits what is queued and lets
    this worker's parked runs go: the next worker applies a decision on one at once, not
    ``lost_after`` after this one's last beat."""
    keeper = getattr(app.state, "runs_keeper", None)
    if keeper is None:  # an in-memory log: its runs end with the process anyway
        return
    keeper.close()
    app.state.runs.event_log.close()


def is_postgres(place: str | None) -> bool:
    """A ``--memory`` or ``--event-log`` that names a Postgres database, not a file."""
    return bool(place) and str(place).startswith(("postgresql://", "postgres://"))


def app_from_env() -> Any:
    """The app of one worker, from ``$RXREACT_SERVE_CONFIG`` (uvicorn's factory)."""
    from rxreact import (
        ChatMemory,
        EventLog,
        InMemoryEventLog,
        PostgresChatMemory,
        PostgresEventLog,
        RedisChatMemory,
        RedisEventLog,
        SQLiteEventLog,
    )
    from rxreact._cli.chat import check_endpoint, load_tools, open_memory, open_model, require_key
    from rxreact.agent.react_agent import ReactAgent
    from rxreact.model.fallback.fallback_model import FallbackModel
    from rxreact.model.http.model import HTTPChatModel
    from rxreact.model.openai.client import OpenAIChatModel
    from rxreact.serve.app import create_app

    config: dict[str, Any] = json.loads(os.environ.get(CONFIG_ENV, "{}"))
    # Who may use the app first: a bad token file fails before anything starts.
    options: dict[str, Any] = {"cors_origins": config.get("cors_origins") or ()}
    if config.get("token_file"):
        from rxreact.serve.auth import TokenAuthenticator

        authenticator = TokenAuthenticator.from_file(config["token_file"])
        # Every worker reads the same file: they derive the same secret, so a run id signed by
        # one is recognised by all.
        options.update(authenticate=authenticator, run_id_secret=authenticator.secret)
    options.update(served_hosts(config))
    options["unknown_resume"] = config.get("unknown_resume", 204)
    base_url, api_key = config.get("base_url"), None
    if not config.get("demo"):
        check_endpoint(config.get("model"), base_url)
    else:
        from rxreact.demo import demo_model_script
        from rxreact.testing import MockOpenAIServer

        mock = MockOpenAIServer(demo_model_script).start()  # lives as long as the worker
        base_url, api_key = mock.base_url, "sk-demo"
    if api_key:  # the demo's own mock: chat completions, whatever the environment says
        model: HTTPChatModel | FallbackModel = OpenAIChatModel(
            "mock-weather-model", base_url=base_url, api_key=api_key
        )
    else:
        model = open_model(config.get("model"), base_url)
    require_key(model)  # at start-up, not in the first visitor's answer
    tools = load_tools(config.get("tools") or [])
    if config.get("deps_factory"):
        from rxreact._cli.chat import import_named

        options["deps_factory"] = import_named(
            "--deps-factory", config["deps_factory"], "my_app:deps_for"
        )
    if not tools and config.get("demo"):  # a real model gets no fake tools it did not ask for
        from rxreact.demo import demo_tools

        tools = list(demo_tools())
    redis_url, log_path = config.get("redis"), config.get("event_log")
    durable: dict[str, Any] = {}
    if config.get("lost_after") is not None:
        durable["lost_after"] = config["lost_after"]
    if redis_url:
        cluster = bool(config.get("redis_cluster"))
        memory: ChatMemory = RedisChatMemory(redis_url, cluster=cluster)
        event_log: EventLog = RedisEventLog(redis_url, cluster=cluster, **durable)
    else:
        memory_path = config.get("memory")
        if is_postgres(memory_path):
            memory = PostgresChatMemory(memory_path)
        else:
            memory = open_memory(memory_path)
        if is_postgres(log_path):
            # Without --listen-dsn the DSN is taken to be a direct connection, so it carries
            # LISTEN too; behind PgBouncer name a direct one, or poll (docs/postgres.md).
            listen = config.get("listen_dsn") or log_path
            event_log = PostgresEventLog(
                log_path, listen_dsn=None if listen == "poll" else listen, **durable
            )
        else:
            event_log = SQLiteEventLog(log_path, **durable) if log_path else InMemoryEventLog()
    agent = ReactAgent(
        model,
        tools,
        max_rounds=config.get("max_rounds", 5),
        system_prompt=config.get("system"),
        memory=memory,
        event_log=event_log,
        on_busy=config.get("on_busy", "reject"),
    )
    app = create_app(agent, **options)
    if redis_url or log_path:
        # Every worker resumes the runs of workers that died (each run is claimed by one), and
        # the parked runs someone decided on meanwhile.
        app.state.runs_keeper = agent.runs_keeper()
    # What start-up made (modules, the app, the agent) lives as long as the worker: frozen, it
    # is no longer walked by every full collection, which at thousands of conversations is
    # what sets the p99 latency.
    gc.collect()
    gc.freeze()
    return app


def served_hosts(config: dict[str, Any]) -> dict[str, Any]:
    """``create_app``'s ``allowed_hosts`` for the command line: none named with a token file
    (any host) or without ``--insecure-no-auth`` (loopback, from loopback peers), unless
    ``--allowed-host`` names some; with ``--insecure-no-auth`` the loopback names, the
    ``--host`` address when it is one (not ``0.0.0.0``) and the ``--allowed-host`` names: the
    DNS-rebinding check stays, any peer is served."""
    from rxreact.serve._guard import LOOPBACK_HOSTS

    named = list(config.get("allowed_hosts") or ())
    if config.get("insecure_no_auth") and not config.get("token_file"):
        host = str(config.get("host") or "127.0.0.1").lower()
        bound = [] if host in ("0.0.0.0", "::", "[::]", "") else [host]
        return {"allowed_hosts": [*LOOPBACK_HOSTS, *bound, *named]}
    if named:
        extra = [] if config.get("token_file") else list(LOOPBACK_HOSTS)
        return {"allowed_hosts": [*extra, *named]}
    return {}


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` reaches this machine only."""
    import ipaddress

    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: it may resolve to anything
