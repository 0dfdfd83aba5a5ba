"""``POST /a2a`` and ``GET /.well-known/agent-card.json``: the agent as an A2A 1.0 server.

The JSON-RPC endpoint, its SSE streams and the method names (``SendMessage``,
``SendStreamingMessage``, ``GetTask``, ``CancelTask``, ``SubscribeToTask``, and their 0.3 names
``message/send``, ``message/stream``, ``tasks/get``, ``tasks/cancel``, ``tasks/resubscribe``)
are the official ``a2a-sdk``'s; :class:`_RunHandler` answers them from the app's runs:

- a task is a run: its id is the run id and the context signed for the user (``RunIds``), so
  another user's task id is "task not found", and any worker sharing the event log and the
  secret can answer for it;
- ``contextId`` is the conversation (the user's own, ``conversation_key``); a message without
  one starts a new conversation whose id the task carries;
- the updates are :func:`rxreact.serve.a2a.to_a2a_events` of the run's events; a stream whose
  client leaves detaches (the task goes on); ``SubscribeToTask`` replays the run from the
  ``seq`` in ``Last-Event-ID`` (after a task folded from the events up to it), or all of it;
- ``CancelTask`` is the run's cancel, in whichever worker runs it.

Task storage, push notifications and task lists are the event log's business or not offered:
nothing here keeps a task once its run is out of the log.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import AsyncGenerator
from typing import Final

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import RequestHandler
from a2a.server.routes import DefaultServerCallContextBuilder, create_jsonrpc_routes
from a2a.types.a2a_pb2 import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
)
from a2a.utils.errors import (
    ExtendedAgentCardNotConfiguredError,
    InternalError,
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from reactivex import Observable
from reactivex import operators as ops
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from rxreact.errors import RunNotFoundError, RxReactError
from rxreact.serve._body import HTTPProblem, check_conversation_id, message_too_long
from rxreact.serve._context import ServeContext
from rxreact.serve._guard import user_of
from rxreact.serve._media import text_chars
from rxreact.serve.a2a import TERMINAL_STATES, A2AUpdate, new_task, to_a2a_events
from rxreact.serve.a2a._card import agent_card, card_route
from rxreact.serve.a2a._parts import question
from rxreact.serve.a2a._stream import resumed, settle
from rxreact.serve.a2a._tasks import AskedMessages, busy_at_start, with_history_length
from rxreact.serve.auth import conversation_key

__all__ = ["A2A_PATH", "a2a_routes"]

A2A_PATH = "/a2a"
"""Where the JSON-RPC endpoint listens (the agent card names it)."""

SETTLE_TIMEOUT = 30.0
"""Seconds ``GetTask`` and ``CancelTask`` wait for an ended (or cancelled) run's log to be read."""

_USER: Final = "rxreact.user"
_SCOPE: Final = "rxreact.scope"
_REFUSED: Final = "rxreact.a2a.refused"
_SEPARATOR = "~"  # between the run id (hex) and the context (base64url): in neither alphabet


class _ContextBuilder(DefaultServerCallContextBuilder):
    """The SDK's call context, with the user the app's guard admitted."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state[_USER] = user_of(request)
        context.state[_SCOPE] = request.scope  # where a refusal is left for the endpoint
        return context


def a2a_routes(context: ServeContext) -> list[BaseRoute]:
    """The agent card and the JSON-RPC endpoint over the app's runs."""
    handler = _RunHandler(context)
    rpc = create_jsonrpc_routes(
        handler, A2A_PATH, context_builder=_ContextBuilder(), enable_v0_3_compat=True
    )[0]

    async def endpoint(request: Request) -> Response:
        response: Response = await rpc.endpoint(request)
        # A run that could not start is the app's HTTP answer (429 with Retry-After...), as
        # in every protocol, not the JSON-RPC error the SDK made of it.
        refusal = request.scope.pop(_REFUSED, None)
        if refusal is not None:
            raise refusal
        return response

    card = agent_card(context, A2A_PATH)
    return [card_route(card), Route(A2A_PATH, endpoint, methods=["POST"])]


class _RunHandler(RequestHandler):
    """The A2A methods over the app's run registry (see the module)."""

    def __init__(self, context: ServeContext) -> None:
        self.context = context
        self.runs = context.runs
        self.asked = AskedMessages()

    # -- tasks and ids -------------------------------------------------------------------------

    def _task_id(self, user: str, run_id: str, context_id: str) -> str:
        encoded = base64.urlsafe_b64encode(context_id.encode()).decode().rstrip("=")
        return self.context.run_ids.public(user, f"{run_id}{_SEPARATOR}{encoded}")

    def _owned(self, user: str, task_id: str) -> tuple[str, str]:
        """The run id and context id of the user's task ``task_id`` (else "not found")."""
        payload = self.context.run_ids.private(user, task_id) if len(task_id) < 1000 else None
        run_id, _, encoded = (payload or "").partition(_SEPARATOR)
        try:
            context_id = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
        except (binascii.Error, UnicodeDecodeError):
            context_id = ""
        if not run_id or not context_id or not run_id.isalnum():
            raise TaskNotFoundError(message=f"no task {task_id[:200]!r}")
        return run_id, context_id

    # -- messages ------------------------------------------------------------------------------

    async def _start(
        self, params: SendMessageRequest, call: ServerCallContext
    ) -> tuple[str, Message, Observable[A2AUpdate]]:
        """Start the message's run; its task id, the message, and the task's updates."""
        user: str = call.state[_USER]
        message = params.message
        if message.task_id:
            raise UnsupportedOperationError(
                message="a task here ends with its run: send a new message with the same "
                "contextId to continue the conversation"
            )
        try:
            asked_for = question(message)
        except HTTPProblem as invalid:
            raise InvalidParamsError(message=invalid.detail) from None
        if text_chars(asked_for) > self.context.max_message_chars:
            limit = self.context.max_message_chars
            raise InvalidParamsError(message=message_too_long(limit).detail)
        context_id = message.context_id or uuid.uuid4().hex
        try:
            key = conversation_key(user, check_conversation_id(context_id))
        except HTTPProblem as invalid:
            raise InvalidParamsError(message=f"contextId: {invalid.detail}") from None
        try:
            run = await run_in_threadpool(self.runs.start, asked_for, key, user)
            # An agent that rejects a second run on a busy conversation fails it at once: that
            # is the answer "busy", as on every protocol, not a task that failed.
            busy = await busy_at_start(run) if self.runs.agent.on_busy == "reject" else None
            if busy is not None:
                raise busy
        except RxReactError as error:
            refusal = self.context.refuse(error)
            if refusal is None:
                raise
            call.state[_SCOPE][_REFUSED] = refusal
            raise InternalError(message=refusal.detail) from None
        task_id = self._task_id(user, run.id, context_id)
        asked = Message()
        asked.CopyFrom(message)
        asked.context_id, asked.task_id = context_id, task_id
        self.asked.keep(run.id, asked)
        return task_id, asked, run.events().pipe(to_a2a_events(task_id, context_id))

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        task_id, asked, updates = await self._start(params, context)
        if params.configuration.return_immediately:
            task = new_task(task_id, asked.context_id)
            task.history.append(asked)
        else:
            task = await settle(updates, asked, timeout=None)
        return with_history_length(task, params.configuration)

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[A2AUpdate]:
        _, asked, updates = await self._start(params, context)
        async for update in resumed(updates, 0, asked):
            yield update

    # -- tasks ---------------------------------------------------------------------------------

    async def _ended(self, user: str, run_id: str, context_id: str) -> bool:
        key = conversation_key(user, context_id)
        return await run_in_threadpool(self.runs.active_run, key) != run_id

    def _updates(
        self, run_id: str, task_id: str, context_id: str, after: int = 0
    ) -> Observable[A2AUpdate]:
        return self.runs.event_log.read(run_id, after).pipe(to_a2a_events(task_id, context_id))

    async def _read(self, run_id: str, task_id: str, context_id: str) -> Task:
        """The task folded from the run's log by its end (a run gone from the log: not found)."""
        failures: list[Exception] = []
        updates = self.runs.event_log.read(run_id).pipe(
            ops.do_action(on_error=failures.append), to_a2a_events(task_id, context_id)
        )
        task = await settle(updates, self.asked.get(run_id), SETTLE_TIMEOUT)
        if any(isinstance(f, RunNotFoundError) for f in failures):
            raise TaskNotFoundError(message=f"no task {task_id[:200]!r}")
        return task

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task:
        user: str = context.state[_USER]
        run_id, context_id = self._owned(user, params.id)
        if not await self._ended(user, run_id, context_id):
            task = new_task(params.id, context_id)
            asked = self.asked.get(run_id)
            if asked is not None:
                task.history.append(asked)
        else:
            task = await self._read(run_id, params.id, context_id)
        return with_history_length(task, params)

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task:
        user: str = context.state[_USER]
        run_id, context_id = self._owned(user, params.id)
        if await self._ended(user, run_id, context_id):
            task = await self._read(run_id, params.id, context_id)
            if task.status.state in TERMINAL_STATES:
                raise TaskNotCancelableError(message=f"task {params.id!r} has ended")
            return task
        await run_in_threadpool(self.runs.cancel, run_id)
        return await self._read(run_id, params.id, context_id)

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[A2AUpdate]:
        user: str = context.state[_USER]
        run_id, context_id = self._owned(user, params.id)
        after = _last_event_id(context.state.get("headers", {}))
        async for update in resumed(self._updates(run_id, params.id, context_id), after, None):
            yield update

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        raise UnsupportedOperationError(message="tasks are not listed: keep their ids")

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        raise ExtendedAgentCardNotConfiguredError

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        raise PushNotificationNotSupportedError

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        raise PushNotificationNotSupportedError


def _last_event_id(headers: dict[str, str]) -> int:
    raw = headers.get("last-event-id", "").strip()
    if not raw:
        return 0
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 18:  # "²" is a digit, 10**5000 slow
        raise InvalidParamsError(message="Last-Event-ID must be an event seq")
    return int(raw)
