"""``delta_event`` builds the per-chunk events without validation: they must be the same
events, field for field, as the validated ones."""

from __future__ import annotations

import pytest

from rxreact.events import ReasoningDelta, TextDelta, agent_event_adapter, delta_event


@pytest.mark.parametrize("cls", [TextDelta, ReasoningDelta])
def test_a_delta_event_is_the_validated_event(cls: type[TextDelta] | type[ReasoningDelta]) -> None:
    fast, validated = delta_event(cls, 3, "word "), cls(round=3, delta="word ")
    assert type(fast) is cls
    assert fast == validated and hash(fast) == hash(validated)
    assert repr(fast) == repr(validated)
    assert fast.model_dump() == validated.model_dump()
    assert fast.model_dump_json() == validated.model_dump_json()
    assert fast.model_fields_set == validated.model_fields_set == {"round", "delta"}
    assert agent_event_adapter.validate_json(agent_event_adapter.dump_json(fast)) == validated
    with pytest.raises(Exception, match="frozen"):
        fast.delta = "other"  # type: ignore[misc]


def test_delta_events_do_not_share_state() -> None:
    first, second = delta_event(TextDelta, 1, "a"), delta_event(TextDelta, 1, "b")
    first.__dict__["seq"] = 7  # what RunOutput does to each event it delivers
    assert second.seq == 0 and second.delta == "b"
    assert delta_event(TextDelta, 2, "c").path == ()
