"""The pieces of the ``rxreact`` command (:mod:`rxreact.cli` builds the parser and dispatches)."""
