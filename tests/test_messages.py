"""Usage arithmetic: a run's usage is the sum of its rounds', the provider's extras included."""

from __future__ import annotations

from rxreact.messages import Usage


def test_counts_add_up_and_none_stays_none_only_on_both_sides() -> None:
    total = Usage(prompt_tokens=3, completion_tokens=None) + Usage(prompt_tokens=4)
    assert total.prompt_tokens == 7
    assert total.completion_tokens is None
    assert Usage(total_tokens=1) + None == Usage(total_tokens=1)


def test_extras_merge_key_by_key() -> None:
    first = Usage.model_validate(
        {
            "prompt_tokens": 43,
            "cost": 0.25,
            "is_byok": False,
            "provider": "a",
            "prompt_tokens_details": {"cached_tokens": 10, "audio_tokens": 0},
            "cost_details": {"upstream_inference_cost": None},
        }
    )
    second = Usage.model_validate(
        {
            "prompt_tokens": 50,
            "cost": 0.5,
            "is_byok": False,
            "provider": "b",
            "prompt_tokens_details": {"cached_tokens": 30},
            "cost_details": {"upstream_inference_cost": 1.5},
            "only_here": 2,
        }
    )
    total = (second + first).model_dump(exclude_unset=True)
    assert total == {
        "prompt_tokens": 93,
        "cost": 0.75,  # numbers add up
        "is_byok": False,  # a flag is not a number
        "provider": "b",  # different non-numbers: the left side's
        "prompt_tokens_details": {"cached_tokens": 40, "audio_tokens": 0},  # nested merge
        "cost_details": {"upstream_inference_cost": 1.5},  # None gives way to a value
        "only_here": 2,  # one side only: kept
    }


def test_summing_leaves_both_sides_unchanged() -> None:
    a = Usage.model_validate({"cost": 1, "details": {"x": 1}})
    b = Usage.model_validate({"cost": 2, "details": {"x": 2}})
    a + b
    assert a.model_dump(exclude_unset=True) == {"cost": 1, "details": {"x": 1}}
    assert b.model_dump(exclude_unset=True) == {"cost": 2, "details": {"x": 2}}
