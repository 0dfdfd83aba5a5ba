"""rxreact's benchmarks: ``python -m benchmarks`` (``make bench``); see ``BENCHMARKS.md``.

Every workload talks only to a mock server on 127.0.0.1 that it starts itself, and every
loop in it is bounded in count and time.
"""
