"""The agent's autoscaling half: scale targets and the objects above the floor (docs/autoscaling.md).

``workload`` reads the ``gitops.grove.io`` PodCliqueSet Git holds, ``expansion`` renders its
inputs at the live counts with the controller's own code, ``plan`` compares that with what
exists and orders the writes, ``status`` derives what scale targets report, and ``scaler``
runs it beside the day-2 loop, which releases and rolls the created pods like any other.
"""
