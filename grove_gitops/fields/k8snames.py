"""Kubernetes' own name, label and annotation rules (``apimachinery/pkg/util/validation``)."""

from __future__ import annotations

import re

from grove_gitops.fields.fielderrors import FieldError, invalid

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_RE = re.compile(rf"^{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*$")
_DNS1123_LABEL_RE = re.compile(rf"^{_DNS1123_LABEL}$")
_QUALIFIED_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_ENV_NAME_RE = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    r"validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
TOTAL_ANNOTATION_BYTES = 256 * 1024


def dns1123_subdomain_problems(value: str) -> list[str]:
    out = []
    if len(value) > 253:
        out.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN_RE.match(value):
        out.append(SUBDOMAIN_MSG)
    return out


def dns1123_label_problems(value: str) -> list[str]:
    out = []
    if len(value) > 63:
        out.append("must be no more than 63 characters")
    if not _DNS1123_LABEL_RE.match(value):
        out.append(LABEL_MSG)
    return out


def is_dns1123_subdomain(value: str) -> bool:
    return not dns1123_subdomain_problems(value)


def qualified_name_problems(key: str) -> list[str]:
    """``IsQualifiedName``: an optional DNS-subdomain prefix, ``/``, and a ≤63 char name."""
    prefix, _, name = key.rpartition("/")
    out: list[str] = []
    if "/" in key and not prefix:
        out.append("prefix part must be non-empty")
    elif prefix:
        out.extend("prefix part " + p for p in dns1123_subdomain_problems(prefix))
    if not name:
        out.append("name part must be non-empty")
    elif len(name) > 63:
        out.append("name part must be no more than 63 characters")
    elif not _QUALIFIED_NAME_RE.match(name):
        out.append(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
            "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        )
    return out


def label_value_problems(value: str) -> list[str]:
    out = []
    if len(value) > 63:
        out.append("must be no more than 63 characters")
    if not _LABEL_VALUE_RE.match(value):
        out.append(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
            "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  "
            "or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        )
    return out


def validate_labels(labels: dict[str, str] | None, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for key, value in (labels or {}).items():
        errs.extend(invalid(path, key, p) for p in qualified_name_problems(key))
        errs.extend(invalid(f"{path}[{key}]", value, p) for p in label_value_problems(value))
    return errs


def validate_annotations(annotations: dict[str, str] | None, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    total = 0
    for key, value in (annotations or {}).items():
        errs.extend(invalid(path, key, p) for p in qualified_name_problems(key.lower()))
        total += len(key) + len(value)
    if total > TOTAL_ANNOTATION_BYTES:
        errs.append(FieldError(path, "Too long", f"may not be more than {TOTAL_ANNOTATION_BYTES} bytes"))
    return errs


def env_var_name_problems(name: str) -> list[str]:
    if not name:
        return ["environment variable name must not be empty"]
    if name in (".", "..") or name.startswith(".."):
        return ["must not be '.' or '..' or start with '..'"]
    if not _ENV_NAME_RE.match(name):
        return [
            "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', "
            "or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or "
            "'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')"
        ]
    return []


_DURATION_RE = re.compile(r"^(?:(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h))+$")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_go_duration(text: str) -> float | None:
    """Seconds of a Go ``time.Duration`` string such as ``1h30m``; None if it does not parse."""
    sign = -1.0 if text.startswith("-") else 1.0
    body = text.lstrip("+-")
    if body == "0":
        return 0.0
    if not _DURATION_RE.match(body):
        return None
    total = 0.0
    for number, unit in re.findall(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)", body):
        total += float(number) * _UNIT_SECONDS[unit]
    return sign * total
