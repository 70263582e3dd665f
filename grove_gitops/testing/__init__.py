"""Test-support helpers shared by the test suite and the in-project fake Kubernetes API server."""
