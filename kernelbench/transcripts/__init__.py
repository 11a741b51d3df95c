"""transcripts stage."""
