"""The worker: sealed segments and their vector indexes, on behalf of delegators."""
