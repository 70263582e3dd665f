"""The in-cluster gate-lifter: releases a gang's pods once the gang is complete.

Grove's operator removes the ``grove.io/podgang-pending-creation`` gate from a pod once the
pod is listed in its PodGang (and, for a scaled PodGang, once the base PodGang is scheduled).
Without the operator, the gate-lifter does the same from what the renderer wrote: the
PodGang, its ``podReferences``, and the backend objects it lists in the
``gitops.grove.io/gang-objects`` annotation — so it needs no scheduler-specific code.
"""
