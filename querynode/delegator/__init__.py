"""The delegator: shard leader of one vchannel."""
