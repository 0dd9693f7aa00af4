"""The engine: worker processes (prefill, decode, store node), request dispatch and the control channel."""
