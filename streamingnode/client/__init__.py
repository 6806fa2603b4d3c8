"""The streaming client: find a pchannel's owner, produce to it, consume from it."""
