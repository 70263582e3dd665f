"""Stage 6: Git — the controller that renders every source commit into an output branch or
folder, and the local ``watch`` loop."""
