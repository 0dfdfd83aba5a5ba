"""Amazon Bedrock's Converse API on the shared transport (:mod:`rxreact.model.http`).

- :mod:`~rxreact.model.bedrock.client`: :class:`BedrockModel`; its codec:
  :mod:`~rxreact.model.bedrock.request_codec` (request → JSON body),
  :mod:`~rxreact.model.bedrock.wire` (event-stream messages → chunks, a whole answer) and
  :mod:`~rxreact.model.bedrock.signing` (SigV4 or a Bedrock API key).
"""

from rxreact.model.bedrock.client import BedrockModel

__all__ = ["BedrockModel"]
