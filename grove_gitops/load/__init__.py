"""Stage 1 of the pipeline: read the source tree safely into plain Python documents."""
