"""The worker: serves a dashboard over a websocket (docs/protocol.md, section 2)."""
