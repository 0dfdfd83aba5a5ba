"""The model layer: chunks, the ChatModel contract, and the implementations."""
