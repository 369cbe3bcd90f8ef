"""Parsers: one per input format, each turning lines into normalized events
(rocrtrace.events).  Parsers know text; they know nothing of the models."""
