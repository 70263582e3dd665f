"""Server-side validation: object metadata, Kubernetes' own schemas, pluggable validators.

Three layers, all reported together in one 422 like the real server does:

1. metadata rules every type shares (name format, label and annotation syntax) — cheap checks
   that catch renderer bugs such as a 64-character label value;
2. the type's schema: built-ins through ``kubernetes_validate`` (Kubernetes' published OpenAPI,
   strict: unknown fields are errors) and custom resources through the CRD schema; both are
   plain callables ``validator(obj) -> list[str]`` so a test suite can plug in its own;
3. type-specific rules that need the previous object (pods: :mod:`pods`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import kubernetes_validate
import kubernetes_validate.utils as kv_utils

from grove_gitops.validation.podspec import builtin_validator
from tests.fakeserver.errors import FieldError
from tests.fakeserver.resources import ResourceType
from tests.fakeserver.schema import field_path, format_schema_error, sorted_errors

JsonObj = dict[str, Any]
Validator = Callable[[JsonObj], list[str]]

DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN = rf"{DNS1123_LABEL}(\.{DNS1123_LABEL})*"
DNS1035_LABEL = r"[a-z]([-a-z0-9]*[a-z0-9])?"
QUALIFIED_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE = r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"

_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    f"for validation is '{DNS1123_SUBDOMAIN}')"
)
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used "
    f"for validation is '{DNS1123_LABEL}')"
)
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    f"'abc-123', regex used for validation is '{DNS1035_LABEL}')"
)
_QUALIFIED_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    f"validation is '{QUALIFIED_NAME}')"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    f"'my_value',  or '12345', regex used for validation is '{LABEL_VALUE}')"
)


def _full(pattern: str, value: str) -> bool:
    return re.fullmatch(pattern, value) is not None


def qualified_name_errors(value: str, field: str) -> list[FieldError]:
    """``[prefix/]name`` as used by label keys, annotation keys and scheduling gate names."""
    prefix, slash, name = value.rpartition("/")
    errors = []
    if slash:
        if not prefix:
            errors.append(FieldError("Invalid", field, "prefix part must be non-empty", value))
        elif len(prefix) > 253 or not _full(DNS1123_SUBDOMAIN, prefix):
            errors.append(FieldError("Invalid", field, f"prefix part {_SUBDOMAIN_MSG}", value))
    if not name:
        errors.append(FieldError("Invalid", field, "name part must be non-empty", value))
    elif len(name) > 63:
        errors.append(FieldError("Invalid", field, "name part must be no more than 63 characters", value))
    elif not _full(QUALIFIED_NAME, name):
        errors.append(FieldError("Invalid", field, _QUALIFIED_MSG, value))
    return errors


def name_errors(rt: ResourceType, name: str, field: str = "metadata.name") -> list[FieldError]:
    """Object names: namespaces are DNS labels, services DNS-1035 labels, RBAC objects path
    segments (``ValidateRBACName``: ``system:controller:x`` is legal), the rest subdomains."""
    if rt.group == "rbac.authorization.k8s.io":
        if name in (".", "..") or "/" in name or "%" in name:
            return [FieldError("Invalid", field, "may not contain '/' or '%' and may not be '.' or '..'", name)]
        return []
    if rt.group == "" and rt.plural == "namespaces":
        ok, message, limit = _full(DNS1123_LABEL, name), _LABEL_MSG, 63
    elif rt.group == "" and rt.plural == "services":
        ok, message, limit = _full(DNS1035_LABEL, name), _DNS1035_MSG, 63
    else:
        ok, message, limit = _full(DNS1123_SUBDOMAIN, name), _SUBDOMAIN_MSG, 253
    if len(name) > limit:
        return [FieldError("Invalid", field, f"must be no more than {limit} characters", name)]
    return [] if ok else [FieldError("Invalid", field, message, name)]


def generate_name_errors(rt: ResourceType, prefix: str) -> list[FieldError]:
    """A ``generateName`` is checked as a name prefix (``ValidateNameFunc(name, prefix=true)``):
    one trailing ``-`` is masked, the rest must be a valid name (``"x."`` is refused: issue 32)."""
    masked = prefix[:-1] + "a" if prefix.endswith("-") else prefix
    return [FieldError(e.type, "metadata.generateName", e.detail, prefix)
            for e in name_errors(rt, masked, "metadata.generateName")]


def metadata_errors(rt: ResourceType, obj: JsonObj) -> list[FieldError]:
    """The ``ValidateObjectMeta`` checks: name, labels, annotations, namespace presence."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return [FieldError("Required", "metadata")]
    errors: list[FieldError] = []
    name = meta.get("name")
    generate = meta.get("generateName")
    if isinstance(generate, str) and generate:
        errors.extend(generate_name_errors(rt, generate))
    if not name:
        errors.append(FieldError("Required", "metadata.name", "name or generateName is required"))
    elif isinstance(name, str):
        errors.extend(name_errors(rt, name))
    labels = meta.get("labels") or {}
    if isinstance(labels, dict):
        for key, value in labels.items():
            errors.extend(qualified_name_errors(key, "metadata.labels"))
            if not isinstance(value, str):
                continue  # the schema validator reports the type
            if len(value) > 63:
                errors.append(
                    FieldError("Invalid", "metadata.labels", "must be no more than 63 characters", value)
                )
            elif not _full(LABEL_VALUE, value):
                errors.append(FieldError("Invalid", "metadata.labels", _LABEL_VALUE_MSG, value))
    annotations = meta.get("annotations") or {}
    if isinstance(annotations, dict):
        total = 0
        for key, value in annotations.items():
            errors.extend(qualified_name_errors(key.lower(), "metadata.annotations"))
            total += len(key) + len(value if isinstance(value, str) else "")
        if total > 256 * 1024:
            errors.append(FieldError("TooLong", "metadata.annotations", "may not be more than 262144 bytes"))
    return errors


def parse_message(message: str) -> FieldError:
    """Turn a validator's ``"path: Kind: detail"`` string back into a :class:`FieldError`."""
    field, sep, body = message.partition(": ")
    if not sep or " " in field or not field:
        return FieldError("Invalid", "", message, None)
    return _RawFieldError(field, body)


class _RawFieldError(FieldError):
    """A message from a pluggable validator, kept verbatim."""

    def __init__(self, field: str, body: str) -> None:
        super().__init__("Invalid", field, body, None)

    def body(self) -> str:
        return self.detail


class KubernetesSchemaValidator:
    """Default built-in validator: Kubernetes' own OpenAPI schemas as shipped by ``kubernetes_validate``.

    Same verdicts as ``kubernetes_validate.validate(obj, kubernetes_version, strict=strict)`` —
    same schema files, same ``Draft202012Validator`` — but each kind's validator is compiled once
    (by the product's own loader, :func:`grove_gitops.validation.podspec.builtin_validator`, so
    there is one implementation of the lookup) and every violation is reported, not just the
    first: ``validate()`` re-reads the 5 MB definitions file on each call (~8 ms), which would
    dominate a controller test's runtime. Falls back to ``kubernetes_validate.validate`` if its
    package layout ever changes, and for ``strict=False``.

    ``strict=True`` rejects unknown fields, like ``fieldValidation=Strict``; the real default
    (``Warn``) silently drops them, which hides typos, so tests are stricter on purpose.
    """

    def __init__(self, kubernetes_version: str = "1.35.0", strict: bool = True) -> None:
        known = [kv_utils.major_minor(v) for v in kv_utils.all_versions()]
        if kv_utils.major_minor(kubernetes_version.lstrip("v")) not in known:
            raise ValueError(
                f"kubernetes_validate {kubernetes_validate.__version__} has no schemas for "
                f"Kubernetes {kubernetes_version}; it ships {known[0]}..{known[-1]}"
            )
        self.kubernetes_version = kubernetes_version
        self.strict = strict
        self._minor = kv_utils.major_minor(kubernetes_version.lstrip("v"))

    def __call__(self, obj: JsonObj) -> list[str]:
        if not self.strict:  # the shared loader compiles strict schemas only; the library has the rest
            return self._slow(obj)
        api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
        try:
            validator = builtin_validator(self._minor, api_version, kind)
        except Exception:  # layout changed or version unsupported: let the library speak for itself
            return self._slow(obj)
        if validator is None:
            return [
                f"kind: Invalid value: {kind!r}: no schema for {kind} {api_version} in Kubernetes "
                f"{self.kubernetes_version} (configure the fake's kubernetes_version or register the type "
                "with a schema)"
            ]
        return sorted_errors(validator, obj)

    def _slow(self, obj: JsonObj) -> list[str]:
        try:
            kubernetes_validate.validate(obj, self.kubernetes_version, strict=self.strict)
        except kubernetes_validate.ValidationError as error:
            return [_format_validation_error(error)]
        except kubernetes_validate.SchemaNotFoundError as error:
            return [
                f"kind: Invalid value: {obj.get('kind')!r}: {error.message} (configure the fake's "
                "kubernetes_version or register the type with a schema)"
            ]
        except kv_utils.VersionNotSupportedError as error:
            return [f"<root>: Invalid value: {self.kubernetes_version!r}: {error.message}"]
        return []


def _format_validation_error(error: Any) -> str:
    try:
        return format_schema_error(error)[0]
    except Exception:  # a shape we do not know how to prettify: keep the library's text
        return f"{field_path(getattr(error, 'absolute_path', []))}: Invalid value: {error.message}"
