"""grove-gitops: Grove's PodCliqueSet expansion as a GitOps renderer.

The pipeline is visible in the package layout: ``load`` (source files) → ``api`` (typed
models) → ``validation`` (Grove's admission rules) → ``expand`` (Grove's desired state) →
``backends`` (scheduler translators, a top-level package of plug-ins) → ``output`` (files)
→ ``gitops`` (commits).
"""

__version__ = "0.1.0"
