"""A run's hold on its conversation: the lease taken before the history is loaded, renewed
while the run lives, released when it ends (``rxreact.memory.lease``).

::

    run.events():  with_lease(conversation) ---- lease granted ---- steps() ... ---|  released
                   (queue / reject while held elsewhere; a resumed run takes the lost
                    owner's lease over at once, if nothing was granted after it)

:class:`~rxreact.agent.run_loop.RunLoop` supplies the terms (``_lease_terms``) and is told
when the lease is granted (``_leased``); a resumed run overrides both.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from reactivex import Observable

from rxreact._validate import check_optional_seconds
from rxreact.errors import ChatMemoryError, RxReactError
from rxreact.memory._process_leases import leasing
from rxreact.memory.lease import Lease
from rxreact.operators import LEASE_POLL
from rxreact.operators._with_lease import LeaseHold, OnBusy, with_lease_

if TYPE_CHECKING:
    from rxreact.agent.run_loop import RunLoop

__all__ = ["LeaseTerms", "hold_for", "holding_conversation", "run_owner"]

_HOST = socket.gethostname()


class LeaseTerms(NamedTuple):
    """How a run takes its conversation's lease."""

    owner: str
    """Who holds it: unique per run."""
    on_busy: OnBusy
    """What the run does while another run holds it."""
    busy_timeout: float | None
    """The longest wait for it while it is held elsewhere."""
    take_over: Lease | None = None
    """A stopped owner's lease to take over at once, if nothing was granted after it."""


def run_owner(run_id: str) -> str:
    """A new run's name as a lease holder: ``host/pid/run id``."""
    return f"{_HOST}/{os.getpid()}/{run_id}"


def holding_conversation(run: RunLoop, steps: Callable[[], Observable[Any]]) -> Observable[Any]:
    """``steps()`` while ``run`` holds its conversation's lease; no lease without memory or
    conversation."""
    agent = run.agent
    if agent.memory is None or run.conversation_id is None:
        return steps()

    def body(lease: Lease) -> Observable[Any]:
        run.lease = lease
        run._leased()
        return steps()

    terms = run._lease_terms()
    return with_lease_(
        leasing(agent.memory),
        run.conversation_id,
        body,
        owner=terms.owner,
        ttl=agent.lease_ttl,
        on_busy=terms.on_busy,
        busy_timeout=terms.busy_timeout,
        poll=LEASE_POLL,
        take_over=terms.take_over,
        hold=run._lease_hold,
    )


def hold_for(hold: LeaseHold, ttl: float | None) -> None:
    """Renew with ``ttl`` from now on (see ``RunLoop.hold_conversation``)."""
    seconds = check_optional_seconds("ttl", ttl)
    try:
        hold.hold(seconds)
    except RxReactError:
        raise
    except Exception as error:
        raise ChatMemoryError(f"could not renew the conversation's lease: {error}") from error
