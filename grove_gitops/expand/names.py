"""Grove's object names (``operator/api/common/namegen.go``, ``spec/grove-desired-state.md`` §3)."""

from __future__ import annotations


def pclq_name(pcs: str, replica: int, clique: str) -> str:
    return f"{pcs}-{replica}-{clique}"


def pcsg_name(pcs: str, replica: int, group: str) -> str:
    return f"{pcs}-{replica}-{group}"


def pcsg_pclq_name(pcs: str, replica: int, group: str, group_replica: int, clique: str) -> str:
    return f"{pcs}-{replica}-{group}-{group_replica}-{clique}"


def base_podgang_name(pcs: str, replica: int) -> str:
    return f"{pcs}-{replica}"


def scaled_podgang_name(pcs: str, replica: int, group: str, scaled_index: int) -> str:
    """Scaled gangs are re-based to 0: PCSG replica ``j`` lives in ``P-i-g-(j - minAvailable)``."""
    return f"{pcs}-{replica}-{group}-{scaled_index}"


def headless_service_name(pcs: str, replica: int) -> str:
    return f"{pcs}-{replica}"


def headless_service_address(pcs: str, replica: int, namespace: str) -> str:
    return f"{pcs}-{replica}.{namespace}.svc.cluster.local"


def service_account_name(pcs: str) -> str:
    return pcs


def role_name(pcs: str) -> str:
    return f"grove.io:pcs:{pcs}"


def role_label_name(pcs: str) -> str:
    """The Role's ``app.kubernetes.io/name`` label: colons are not allowed in label values."""
    return f"grove.io-pcs-{pcs}"


def token_secret_name(pcs: str) -> str:
    return f"{pcs}-ic-sat"


def pod_hostname(pclq: str, index: int) -> str:
    return f"{pclq}-{index}"
