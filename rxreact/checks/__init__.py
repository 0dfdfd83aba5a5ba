"""Checks on an answer before it is final.

- :mod:`~rxreact.checks.judge`: :class:`LLMJudge`, a second model's verdict on a draft (the
  VALIDATING phase of a run);
- :mod:`~rxreact.checks.validation`: typed answers (``output_type``): the structured-output
  request and the parser that checks the draft.
"""
