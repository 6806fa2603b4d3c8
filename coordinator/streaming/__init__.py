"""Streaming coordination: pchannel -> streaming node assignment with terms."""
