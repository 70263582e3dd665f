# syntax=docker/dockerfile:1
# grove-gitops image: `grove-gitops gate-lifter`, `grove-gitops controller` and the Argo CD
# Config Management Plugin sidecar (overlays/argocd) all run from it. docs/deploy.md has the
# build command. Needs BuildKit (the default builder of Docker 23+, Podman/Buildah) for the
# bind mount in the runtime stage.

# ---- builder: wheels of grove-gitops and of its runtime dependencies (no dev extras) -------
FROM python:3.11-slim AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
# Only what the wheel is built from (.dockerignore keeps the rest of the checkout out, too).
COPY pyproject.toml README.md ./
COPY grove_gitops ./grove_gitops
COPY backends ./backends
RUN pip wheel --wheel-dir /wheels .

# ---- runtime -----------------------------------------------------------------------------
FROM python:3.11-slim
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# git: the controller shells out to it (GitPython); openssh-client for ssh:// remotes;
# ca-certificates for https remotes.
RUN apt-get update \
    && apt-get install -y --no-install-recommends git openssh-client ca-certificates \
    && rm -rf /var/lib/apt/lists/*
# Install the wheel (and its dependencies) from the builder without keeping the wheels.
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    pip install --no-index --find-links=/wheels grove-gitops \
    && grove-gitops --version
# A fixed non-root user; the manifests in overlays/ run as 65532:65532 as well.
RUN groupadd --system --gid 65532 grove-gitops \
    && useradd --system --uid 65532 --gid 65532 --home-dir /home/grove-gitops --create-home \
       --shell /usr/sbin/nologin grove-gitops
WORKDIR /home/grove-gitops
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["grove-gitops"]
CMD ["--help"]
