"""Scheduler translators, one module per scheduler (plug-ins via ``grove_gitops.backends``).

Everything scheduler-specific lives here; ``grove_gitops`` itself never branches on a
scheduler name.
"""
