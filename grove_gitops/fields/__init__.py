"""The field-level vocabulary every stage reports bad input in, below the API models.

Kubernetes' ``field.Error`` wording (:mod:`.fielderrors`), its name and label rules
(:mod:`.k8snames`), the quantity grammar (:mod:`.quantity`), "did you mean" suggestions
(:mod:`.suggest`) and the checks of external references (:mod:`.externalrefs`). The API models,
the loader and validation all use them, so they sit below all three and import none.
"""
