"""Text-match indexes of sealed segments (``TEXT_MATCH`` / ``PHRASE_MATCH``)."""
