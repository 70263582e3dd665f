"""Stage 4: Grove's desired state for one validated, defaulted PodCliqueSet.

Pure functions from the PodCliqueSet (plus configuration) to Kubernetes objects as plain
dictionaries; the scheduler backend is asked for its part at the documented hook points and
nowhere else.
"""
