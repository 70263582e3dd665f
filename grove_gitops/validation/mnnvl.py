"""MNNVL annotation rules (``mnnvl/webhook.go``), part (C) of the webhook."""

from __future__ import annotations

from grove_gitops.api.podcliqueset import PodCliqueSet
from grove_gitops.fields.fielderrors import FieldError, invalid
from grove_gitops.fields.k8snames import dns1123_label_problems

MNNVL_ANNOTATION = "grove.io/mnnvl-group"
NOT_ENABLED = (
    "MNNVL is not enabled in the operator configuration. Either enable MNNVL globally or remove the "
    "grove.io/mnnvl-group annotation"
)


def validate_mnnvl(pcs: PodCliqueSet, enabled: bool) -> list[FieldError]:
    places: list[tuple[str, dict[str, str] | None]] = [("metadata.annotations", pcs.metadata.annotations)]
    places += [(f"spec.template.cliques[{i}].annotations", c.annotations) for i, c in enumerate(pcs.cliques)]
    places += [
        (f"spec.template.podCliqueScalingGroups[{i}].annotations", g.annotations)
        for i, g in enumerate(pcs.scaling_groups)
    ]
    errs: list[FieldError] = []
    for base, values in places:
        if not values or MNNVL_ANNOTATION not in values:
            continue
        path = f"{base}.{MNNVL_ANNOTATION}"
        value = values[MNNVL_ANNOTATION]
        if value == "none":
            continue
        if not value:
            errs.append(invalid(path, value, "mnnvl-group value must not be empty"))
            continue
        problems = dns1123_label_problems(value)
        if problems:
            errs.append(
                invalid(
                    path, value, f"mnnvl-group value {value!r} is not a valid DNS-1123 label: " + "; ".join(problems)
                )
            )
            continue
        if not enabled:
            errs.append(invalid(path, value, NOT_ENABLED))
    return errs
