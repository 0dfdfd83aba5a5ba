"""Money: what requests cost (:mod:`~rxreact.costs.prices`) and the limits a run keeps to
(:mod:`~rxreact.costs.budget`)."""
