"""CRD YAML the CEL, defaulting and extra-CRD tests load through ``FakeApiServer(extra_crds=...)``.

``SCALE_TARGET_CRDS`` follows the issue 23 contract (``/work/contract23.md``): the
``gitops.grove.io`` PodCliqueScalingGroup and PodClique scale targets, with the scale subresource
and the three rules on ``spec`` (``optionalOldSelf``: creates judged too), in one multi-document file as ``overlays/crds/``
holds them. ``WIDGET_CRD`` is a test-only kind with rules at every schema level the tests need.
"""

from __future__ import annotations

from pathlib import Path

MIN_AVAILABLE_MESSAGE = "replicas must be greater than or equal to minAvailable"
FLOOR_MESSAGE = (
    "replicas must be greater than or equal to minReplicas (the floor rendered in Git); "
    "lower minReplicas in Git to scale further in"
)
MAX_MESSAGE = "replicas must be less than or equal to maxReplicas"


def _scale_target_crd(kind: str, plural: str, short: str) -> str:
    return f"""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {plural}.gitops.grove.io
spec:
  group: gitops.grove.io
  scope: Namespaced
  names: {{kind: {kind}, listKind: {kind}List, plural: {plural}, singular: {kind.lower()}, shortNames: [{short}]}}
  versions:
    - name: v1alpha1
      served: true
      storage: true
      subresources:
        status: {{}}
        scale:
          specReplicasPath: .spec.replicas
          statusReplicasPath: .status.replicas
          labelSelectorPath: .status.selector
      schema:
        openAPIV3Schema:
          type: object
          properties:
            apiVersion: {{type: string}}
            kind: {{type: string}}
            metadata: {{type: object}}
            spec:
              type: object
              required: [replicas, minAvailable, minReplicas, maxReplicas]
              properties:
                replicas: {{type: integer, format: int32, minimum: 0}}
                minAvailable: {{type: integer, format: int32, minimum: 0}}
                minReplicas: {{type: integer, format: int32, minimum: 0}}
                maxReplicas: {{type: integer, format: int32, minimum: 0}}
              x-kubernetes-validations:
                - rule: (oldSelf.hasValue() && self.replicas == oldSelf.value().replicas) || self.replicas >= self.minAvailable
                  optionalOldSelf: true
                  message: {MIN_AVAILABLE_MESSAGE}
                - rule: (oldSelf.hasValue() && self.replicas == oldSelf.value().replicas) || self.replicas >= self.minReplicas
                  optionalOldSelf: true
                  message: "{FLOOR_MESSAGE}"
                - rule: (oldSelf.hasValue() && self.replicas == oldSelf.value().replicas) || self.replicas <= self.maxReplicas
                  optionalOldSelf: true
                  message: {MAX_MESSAGE}
            status:
              type: object
              properties:
                replicas: {{type: integer, format: int32}}
                readyReplicas: {{type: integer, format: int32}}
                updatedReplicas: {{type: integer, format: int32}}
                availableReplicas: {{type: integer, format: int32}}
                selector: {{type: string}}
                observedGeneration: {{type: integer, format: int64}}
"""


SCALE_TARGET_CRDS = (
    _scale_target_crd("PodCliqueScalingGroup", "podcliquescalinggroups", "gpcsg")
    + "---"
    + _scale_target_crd("PodClique", "podcliques", "gpclq")
)

WIDGET_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.test.grove.io
spec:
  group: test.grove.io
  scope: Namespaced
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-validations:
            - rule: "!has(self.spec.forbiddenName) || self.spec.forbiddenName != self.metadata.name"
              message: spec.forbiddenName may not be the object's name
          properties:
            apiVersion: {type: string}
            kind: {type: string}
            metadata: {type: object}
            spec:
              type: object
              x-kubernetes-validations:
                - rule: self.low <= self.high
                - rule: self.low <= self.high
                  messageExpression: "'low (' + string(self.low) + ') exceeds high (' + string(self.high) + ')'"
                - rule: self.low <= self.high
                  message: bounds are inverted
                  reason: FieldValueForbidden
                  fieldPath: .low
                - rule: self.mode.lowerAscii() == self.mode
                  message: mode must be lower case
                - rule: "!has(self.missing) || self.missing.nope > 0"
                  message: unreachable
              properties:
                low: {type: integer, default: 0}
                high: {type: integer, default: 10}
                mode: {type: string, default: fast}
                forbiddenName: {type: string}
                missing:
                  type: object
                  properties:
                    nope: {type: integer}
                limits:
                  type: object
                  default: {}
                  properties:
                    cpu: {type: string, default: "1"}
                    gpu: {type: integer, nullable: false, default: 0}
                items:
                  type: array
                  items:
                    type: object
                    x-kubernetes-validations:
                      - rule: self.size > 0
                        message: size must be positive
                    properties:
                      name: {type: string}
                      size: {type: integer}
                named:
                  type: array
                  x-kubernetes-list-type: map
                  x-kubernetes-list-map-keys: [name]
                  items:
                    type: object
                    required: [name]
                    x-kubernetes-validations:
                      - rule: self.size >= oldSelf.size
                        message: size may only grow
                    properties:
                      name: {type: string}
                      size: {type: integer}
                labels:
                  type: object
                  additionalProperties:
                    type: string
                    x-kubernetes-validations:
                      - rule: self.size() <= 8
                        message: too long
                matrix:
                  type: array
                  items: {type: integer}
                  x-kubernetes-validations:
                    - rule: self.all(a, self.all(b, self.all(c, a + b + c >= 0)))
                      message: sums must be non-negative
                version:
                  type: integer
                  x-kubernetes-validations:
                    - rule: self >= oldSelf
                      message: version may not go back
            status:
              type: object
              properties:
                phase: {type: string}
"""


def write_crds(directory: Path, *documents: str, name: str = "crds.yaml") -> Path:
    """Write ``documents`` as one multi-document YAML file in ``directory``; returns its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text("\n---\n".join(documents), encoding="utf-8")
    return path
