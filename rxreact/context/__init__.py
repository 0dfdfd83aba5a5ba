"""What fits in the model's context window.

- :mod:`~rxreact.context.budget`: :class:`ContextBudget`, trimming a request's history to fit
  (cutting long tool results, summarising old turns);
- private: ``_token_counter`` (counting tokens, calibrated by the provider's usage) and
  ``_fit_step`` (the trimming step of a run).
"""
