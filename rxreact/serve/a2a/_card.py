"""The A2A agent card: who the agent is, what it can do, where and how to call it.

Served at ``/.well-known/agent-card.json`` to anyone (a client reads it before it has
credentials: it says which ones to bring). Its skills are the agent's tools, one each, after a
general ``answer`` skill; its one interface is the JSON-RPC endpoint at the address the request
came to; with users (``create_app(authenticate=...)``) it asks for a bearer token.
"""

from __future__ import annotations

import hashlib

from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH, PROTOCOL_VERSION_1_0, TransportProtocol
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from rxreact.serve._context import ServeContext

__all__ = ["BEARER", "agent_card", "card_route"]

BEARER = "bearer"
"""The name of the card's security scheme when the app has users."""

_VERSION = "1.0.0"


def agent_card(context: ServeContext, rpc_path: str) -> AgentCard:
    """The card of the app's agent, its interface URL still relative (``rpc_path``)."""
    agent = context.runs.agent
    tools = sorted(agent.tools.values(), key=lambda t: t.name)
    names = ", ".join(t.name for t in tools) or "no tools"
    skills = [
        AgentSkill(
            id="answer",
            name="answer",
            description=f"Answers a question, calling its tools as it sees fit ({names}).",
            tags=["react", "chat"],
        )
    ]
    skills += [
        AgentSkill(id=f"tool:{t.name}", name=t.name, description=t.description, tags=["tool"])
        for t in tools
    ]
    card = AgentCard(
        name=context.model_name,
        description=f"A ReAct agent ({context.model_name}) served by rxreact: it streams its "
        "answer as a task artifact and its tool calls as task status messages.",
        supported_interfaces=[
            AgentInterface(
                url=rpc_path,
                protocol_binding=TransportProtocol.JSONRPC.value,
                protocol_version=PROTOCOL_VERSION_1_0,
            )
        ],
        version=_VERSION,
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain", "application/json"],
        skills=skills,
    )
    if context.authenticated:
        scheme = HTTPAuthSecurityScheme(
            scheme="Bearer", description="A token the server's operator gave you."
        )
        card.security_schemes[BEARER].CopyFrom(SecurityScheme(http_auth_security_scheme=scheme))
        card.security_requirements.append(SecurityRequirement(schemes={BEARER: StringList()}))
    return card


def card_route(card: AgentCard) -> Route:
    """``GET /.well-known/agent-card.json``: ``card`` with its interface at this server."""

    async def get_card(request: Request) -> Response:
        served = AgentCard()
        served.CopyFrom(card)
        base = str(request.base_url).rstrip("/")
        for interface in served.supported_interfaces:
            interface.url = base + interface.url
        body = agent_card_to_dict(served)
        etag = 'W/"' + hashlib.sha256(served.SerializeToString(deterministic=True)).hexdigest()
        headers = {"etag": etag + '"', "cache-control": "no-cache"}
        if request.headers.get("if-none-match") == headers["etag"]:
            return Response(status_code=304, headers=headers)
        return JSONResponse(body, headers=headers)

    return Route(AGENT_CARD_WELL_KNOWN_PATH, get_card, methods=["GET"])
