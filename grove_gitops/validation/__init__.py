"""Stage 3: Grove's admission — defaulting, then validation with Grove's messages."""
