# grove-gitops image: `grove-gitops agent`, `grove-gitops controller` and the Argo CD Config
# Management Plugin sidecar (overlays/argocd) all run from it. docs/deploy.md has the build
# commands: `docker build .` (or podman / buildah) with Docker Hub's python:3.11-slim, or
# scripts/build-image.sh with a local Debian base image and no registry at all.
#
# Both stages use one base, a build argument: any Debian-like image with python3 (3.11+) and its
# venv module. No `# syntax=` line and no RUN --mount, so no builder frontend image is pulled.
ARG PYTHON_IMAGE=python:3.11-slim

# ---- builder: a venv with grove-gitops and its runtime dependencies (no dev extras) ---------
FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_CONFIG_FILE=/mnt/pip.conf
# PIP_CONFIG_FILE: scripts/build-image.sh mounts a pip.conf (`cert =` the host's CA bundle, for a
# TLS-inspecting proxy) and the bundle on /mnt for the RUN steps only; without it pip finds no
# file there and uses its defaults. This ENV is the builder's, not the image's.
# The Kubernetes versions whose strict schemas kubernetes-validate keeps in the image (the rest,
# about 75 MB, goes); grove_gitops/validation/podspec.py loads `v<version>.*-local-strict`.
ARG KUBE_SCHEMA_VERSIONS="1.31 1.32 1.33 1.34 1.35 1.36 1.37"
WORKDIR /src
# The runtime dependencies first, read from pyproject.toml alone, so that a change to the
# sources reuses this layer. A venv, not the base's site-packages: Debian's python3 refuses
# system-wide pip installs (PEP 668). Then the image sheds what grove-gitops never loads: the
# other schemas, the asyncio client of `kubernetes` (68 MB; grove-gitops uses the synchronous
# one) with aiohttp and the packages only it needs, and the dependencies' own test suites. The
# generated API and model classes of `kubernetes` (a thousand modules, 31 MB of source, nearly
# all docstrings) are kept as bytecode only, without docstrings: 53 MB become about 18 MB.
# Last, each RECORD lists only the files left (kubernetes-validate's listed every schema).
COPY pyproject.toml ./
RUN python3 -m venv /opt/grove-gitops \
    && python3 -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))' \
       > /tmp/requirements.txt \
    && /opt/grove-gitops/bin/python3 -m pip install --quiet --no-compile -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt \
    && site=$(/opt/grove-gitops/bin/python3 -c 'import sysconfig; print(sysconfig.get_path("purelib"))') \
    && schemas="$site/kubernetes_validate/kubernetes-json-schema" \
    && for dir in "$schemas"/*; do \
         keep=; for v in $KUBE_SCHEMA_VERSIONS; do \
           case "${dir##*/}" in "v$v".*-local-strict) keep=1 ;; esac; \
         done; \
         [ -n "$keep" ] || rm -rf "$dir"; \
       done \
    && for v in $KUBE_SCHEMA_VERSIONS; do ls -d "$schemas/v$v".*-local-strict >/dev/null; done \
    && rm -rf "$site/kubernetes/aio" \
    && /opt/grove-gitops/bin/python3 -m pip uninstall --quiet --yes \
       aiohttp aiohttp-retry aiohappyeyeballs aiosignal frozenlist multidict propcache yarl \
    && find "$site" -mindepth 2 -maxdepth 2 -type d -name tests -exec rm -rf {} + \
    && /opt/grove-gitops/bin/python3 -OO -m compileall -q -j 0 -b -o 2 \
       "$site/kubernetes/client/api" "$site/kubernetes/client/models" \
    && find "$site/kubernetes/client/api" "$site/kubernetes/client/models" -name '*.py' -delete \
    && /opt/grove-gitops/bin/python3 -c 'import pathlib, sys; site = pathlib.Path(sys.argv[1]); [r.write_text("".join(line for line in r.read_text().splitlines(True) if (site / line.split(",")[0]).exists())) for r in site.glob("*.dist-info/RECORD")]' "$site"
COPY README.md ./
COPY grove_gitops ./grove_gitops
COPY backends ./backends
# Then the project itself; pip and setuptools leave the venv (nothing installs at run time), and
# everything is compiled once here: the root filesystem is read-only when the image runs.
RUN /opt/grove-gitops/bin/python3 -m pip install --quiet --no-compile --no-deps . \
    && /opt/grove-gitops/bin/python3 -m pip uninstall --quiet --yes pip setuptools \
    && /opt/grove-gitops/bin/python3 -m compileall -q -j 0 --invalidation-mode unchecked-hash /opt/grove-gitops/lib \
    && GIT_PYTHON_REFRESH=quiet /opt/grove-gitops/bin/grove-gitops --version

# ---- runtime -----------------------------------------------------------------------------
FROM ${PYTHON_IMAGE}
ENV PATH=/opt/grove-gitops/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# git: the controller shells out to it (GitPython); openssh-client for ssh:// remotes;
# ca-certificates for https remotes. git's server side (daemon, http-backend, http-push,
# imap-send, git-shell, scalar: 17 MB) is never run here, so dpkg leaves it out.
RUN printf 'path-exclude %s\n' /usr/bin/git-shell /usr/bin/scalar /usr/lib/git-core/git-shell \
       /usr/lib/git-core/scalar /usr/lib/git-core/git-daemon /usr/lib/git-core/git-http-backend \
       /usr/lib/git-core/git-http-push /usr/lib/git-core/git-imap-send '/usr/share/gitweb/*' \
       > /etc/dpkg/dpkg.cfg.d/grove-gitops-git-client \
    && apt-get update \
    && apt-get install -y --no-install-recommends git openssh-client ca-certificates \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/debconf/*-old /var/log/apt /var/log/dpkg.log
# A fixed non-root user; the manifests in overlays/ run as 65532:65532 as well.
RUN groupadd --system --gid 65532 grove-gitops \
    && useradd --system --uid 65532 --gid 65532 --home-dir /home/grove-gitops --create-home \
       --shell /usr/sbin/nologin grove-gitops
# Only the venv of the builder: no source tree, no wheels, no pip.
COPY --from=builder /opt/grove-gitops /opt/grove-gitops
WORKDIR /home/grove-gitops
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["grove-gitops"]
CMD ["--help"]
