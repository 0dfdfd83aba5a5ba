from rxreact.runs.memory import InMemoryEventLog as RedisEventLog  # placeholder
