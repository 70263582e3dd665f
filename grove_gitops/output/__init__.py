"""Stage 5: the output tree — layout, GitOps annotations, bytes, and the atomic swap."""
