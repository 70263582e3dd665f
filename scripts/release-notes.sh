#!/usr/bin/env bash
# The notes of a GitHub release (.github/workflows/release.yml): every artefact of the release,
# named as docs/install.md names it but with the owner filled in and pinned: the image by digest,
# the Action and the GitLab job by commit, the Python package by version and SHA-256.
#
#   bash scripts/release-notes.sh TAG IMAGE_REPOSITORY DIGEST COMMIT REPOSITORY DIST_DIR
#
#   TAG               vX.Y.Z (the version in pyproject.toml)
#   IMAGE_REPOSITORY  ghcr.io/<owner>/grove-gitops, where the image was pushed
#   DIGEST            sha256:<64 hex>, what `podman push --digestfile` wrote
#   COMMIT            the 40-hex commit the tag names
#   REPOSITORY        <owner>/grove-gitops on GitHub
#   DIST_DIR          the wheel, the sdist and SHA256SUMS
#
# Every argument is checked first: a release never goes out with notes naming an empty digest.
set -euo pipefail

die() { echo "release-notes.sh: $*" >&2; exit 1; }

[ $# -eq 6 ] || die "usage: release-notes.sh TAG IMAGE_REPOSITORY DIGEST COMMIT REPOSITORY DIST_DIR"
tag=$1 image=$2 digest=$3 commit=$4 repository=$5 dist=$6

[[ $tag =~ ^v([0-9]+\.[0-9]+\.[0-9]+)$ ]] || die "TAG '$tag' is not vX.Y.Z"
version=${BASH_REMATCH[1]}
[[ $image =~ ^ghcr\.io/[a-z0-9][a-z0-9._-]*/grove-gitops$ ]] || die "IMAGE_REPOSITORY '$image' is not ghcr.io/<owner in lower case>/grove-gitops"
[[ $digest =~ ^sha256:[0-9a-f]{64}$ ]] || die "DIGEST '$digest' is not sha256:<64 hex digits>"
[[ $commit =~ ^[0-9a-f]{40}$ ]] || die "COMMIT '$commit' is not a 40-hex commit"
[[ $repository =~ ^[A-Za-z0-9-]+/grove-gitops$ ]] || die "REPOSITORY '$repository' is not <owner>/grove-gitops"
[ -f "$dist/SHA256SUMS" ] || die "$dist/SHA256SUMS is missing"
wheel="grove_gitops-$version-py3-none-any.whl"
wheel_sum=$(awk -v f="$wheel" '$2 == f || $2 == "*" f { print $1 }' "$dist/SHA256SUMS")
[[ $wheel_sum =~ ^[0-9a-f]{64}$ ]] || die "$dist/SHA256SUMS has no line for $wheel"

cat <<EOF
## grove-gitops $tag

Commit \`$commit\`.

### Image

\`\`\`
$image@$digest
\`\`\`

Also tagged \`$image:$tag\`; deploy the digest. In your kustomization (one entry sets the agent, the
controller and the Argo CD plugin sidecar, docs/install.md):

\`\`\`yaml
images:
  - name: ghcr.io/OWNER/grove-gitops
    newName: $image
    digest: $digest
\`\`\`

### GitHub Action (PR check)

\`\`\`yaml
- uses: $repository@$commit  # $tag
\`\`\`

### GitLab merge-request job (docs/diff.md)

\`\`\`yaml
GROVE_GITOPS_COMMIT: $commit  # $tag
\`\`\`

or run it in the image: \`image: {name: "$image@$digest", entrypoint: [""]}\`.

### Python package

\`grove-gitops==$version\` on PyPI, and attached here with \`SHA256SUMS\`:

\`\`\`
grove-gitops @ https://github.com/$repository/releases/download/$tag/$wheel --hash=sha256:$wheel_sum
\`\`\`

### Kustomize bases

\`https://github.com/$repository//overlays/gate-lifter?ref=$tag\` (and \`overlays/controller\`, \`overlays/crds\`, ...).
EOF
