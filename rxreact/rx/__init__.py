"""The reactive substrate under the agent: rxreact's own Rx plumbing, private to the package.

- ``_fused``: operators that subscribe to one another directly (operator fusion), without
  RxPY's per-subscription wrappers;
- ``_immediate``, ``_ordered_serial``, ``_valve``: serialising and back-pressure helpers;
- ``_run_output``: the end of a run's pipeline (what a subscriber gets);
- ``_blocking``: blocking and asyncio iteration over an Observable;
- ``_daemon_pool`` (the thread pool and the I/O loop's hand-offs), ``_timer_thread``: what
  :mod:`rxreact.scheduling` builds its schedulers from;
- ``_call_once``: a function that runs once, whoever asks first.

The public schedulers are in :mod:`rxreact.scheduling`; the public operators in
:mod:`rxreact.operators`.
"""
