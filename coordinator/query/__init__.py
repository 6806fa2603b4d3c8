"""Query coordination: which query node serves (delegates) each vchannel of a loaded collection."""
