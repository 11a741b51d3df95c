"""Agent transcripts: one parser per CLI log format → one normalized event model (`Session`, `Event`)."""

from kernelbench.transcripts.loader import load
from kernelbench.transcripts.model import Event, Kind, Session, Usage
from kernelbench.transcripts.normalized import NormalizedWriter, write_session

__all__ = ["Event", "Kind", "NormalizedWriter", "Session", "Usage", "load", "write_session"]
