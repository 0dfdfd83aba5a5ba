"""Marbles: record any Observable and draw it, as ASCII marble lines or as an SVG diagram.

::

    from reactivex.testing import TestScheduler
    from rxreact import ReactAgent, ScriptedModel
    from rxreact.marbles import record
    from rxreact.model.scripted.replies import text_reply

    scheduler = TestScheduler()
    agent = ReactAgent(ScriptedModel([text_reply("Sunny.", interval=0.5)]), scheduler=scheduler)
    recording = record(agent.stream("Weather in Paris?"), scheduler)
    print(recording.to_text(unit=1.0))      # one marble line per lane, then the legends
    recording                               # in Jupyter: the SVG diagram
"""

from rxreact.marbles.lanes import LANE_ORDER, lane_of
from rxreact.marbles.recorder import Recorder, record
from rxreact.marbles.recording import Marble, MarbleKind, Recording

__all__ = ["LANE_ORDER", "Marble", "MarbleKind", "Recorder", "Recording", "lane_of", "record"]
