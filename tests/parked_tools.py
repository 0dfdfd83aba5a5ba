"""The tool of the ``rxreact serve`` processes of tests/test_serve_page_parked.py
(``--tools parked_tools:pay``): a payment a person approves first.

Each payment appends the paying process's id to the file named by ``$RXREACT_TEST_PAID``, so
the test counts payments across processes and knows which worker made them.
"""

from __future__ import annotations

import os

from rxreact import tool

PAID_ENV = "RXREACT_TEST_PAID"


@tool(requires_approval=True)
def pay(amount: int) -> str:
    """Pays an amount (a person approves it first)."""
    with open(os.environ[PAID_ENV], "a") as paid:
        paid.write(f"{os.getpid()}\n")
    return f"paid {amount}"
