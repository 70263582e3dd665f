"""``operator.config.grove.io/v1alpha1`` OperatorConfiguration: Grove's configuration file.

Every field of Grove's type (``operator/api/config/v1alpha1/types.go``) is declared here, at
every nesting level, although a render reads only the scheduler profiles, topology-aware
scheduling and MNNVL: the same file is shared with a real Grove installation (its Helm values),
so a field Grove knows is accepted whether or not rendering uses it.

Grove itself decodes this file non-strictly: a field it does not know is silently dropped. A
typo is therefore invisible there (``defaultProfile:`` for ``defaultProfileName:`` left the
default profile ``default-scheduler`` and rendered a KAI gang without any gang objects), so
here the models keep unknown keys aside (``extra="allow"``) and
:func:`grove_gitops.validation.opcfgkeys.unknown_field_errors` reports each one, with its path
and the field it most likely misspells. ``metadata`` is the one key Grove does not have that
is accepted: it names a fleet's configurations.
"""

from __future__ import annotations

import typing
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

DEFAULT_SCHEDULER = "default-scheduler"


class GroveConfigModel(BaseModel):
    """A level of Grove's configuration: declared fields typed, other keys kept for reporting."""

    model_config = ConfigDict(extra="allow", strict=True)
    #: Keys accepted besides the declared fields (not reported as unknown).
    accepted_extra: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        """Go's decoder leaves a string, boolean, struct or slice untouched on ``null`` (Grove
        accepts ``logLevel: null`` as unset), so such a field given null is as if absent. A field
        that can hold nil (``X | None``) keeps the null: a ``metav1.Duration`` fails on it."""
        if not isinstance(data, dict):
            return data
        fields = cls.model_fields
        return {
            k: v
            for k, v in data.items()
            if v is not None or k not in fields or type(None) in typing.get_args(fields[k].annotation)
        }


class SchedulerProfile(GroveConfigModel):
    name: str = ""
    #: A ``runtime.RawExtension``: each backend reads (and checks) its own keys.
    config: dict[str, Any] | None = None


class SchedulerConfiguration(GroveConfigModel):
    defaultProfileName: str = ""
    profiles: list[SchedulerProfile] = Field(default_factory=list)


class TopologyAwareScheduling(GroveConfigModel):
    enabled: bool = False


class NetworkConfig(GroveConfigModel):
    autoMNNVLEnabled: bool = False


# Fields Grove reads and rendering does not: declared (so they are known, and typed as Grove
# decodes them: a wrong type stops Grove's operator from starting) but never used here. Each
# may be null, which Go's decoder treats as absent.


class ClientConnectionConfiguration(GroveConfigModel):
    qps: float | None = None
    burst: int | None = None
    contentType: str | None = None
    acceptContentTypes: str | None = None


class LeaderElectionConfiguration(GroveConfigModel):
    enabled: bool | None = None
    #: ``metav1.Duration`` values: Go duration strings such as ``15s``.
    leaseDuration: str | None = None
    renewDeadline: str | None = None
    retryPeriod: str | None = None
    resourceLock: str | None = None
    resourceName: str | None = None
    resourceNamespace: str | None = None


class ServerEndpoint(GroveConfigModel):
    bindAddress: str | None = None
    port: int | None = None


class WebhookServer(ServerEndpoint):
    serverCertDir: str | None = None
    secretName: str | None = None
    certProvisionMode: str | None = None


class ServerConfiguration(GroveConfigModel):
    webhooks: WebhookServer | None = None
    healthProbes: ServerEndpoint | None = None
    metrics: ServerEndpoint | None = None


class DebuggingConfiguration(GroveConfigModel):
    enableProfiling: bool | None = None
    pprofBindHost: str | None = None
    pprofBindPort: int | None = None


class ControllerSyncs(GroveConfigModel):
    concurrentSyncs: int | None = None


class ControllerConfiguration(GroveConfigModel):
    podCliqueSet: ControllerSyncs | None = None
    podClique: ControllerSyncs | None = None
    podCliqueScalingGroup: ControllerSyncs | None = None
    podGang: ControllerSyncs | None = None


class AuthorizerConfig(GroveConfigModel):
    enabled: bool | None = None
    exemptServiceAccountUserNames: list[str] | None = None
    #: Not in Grove's type, but Grove's own Helm chart writes it (``_helpers.tpl``), so a
    #: configuration rendered from the chart loads unchanged.
    reconcilerServiceAccountUserName: str | None = None


class OperatorConfiguration(GroveConfigModel):
    apiVersion: Literal["operator.config.grove.io/v1alpha1"] = "operator.config.grove.io/v1alpha1"
    kind: Literal["OperatorConfiguration"] = "OperatorConfiguration"
    accepted_extra: ClassVar[frozenset[str]] = frozenset({"metadata"})
    runtimeClientConnection: ClientConnectionConfiguration | None = None
    leaderElection: LeaderElectionConfiguration | None = None
    server: ServerConfiguration | None = None
    debugging: DebuggingConfiguration | None = None
    controllers: ControllerConfiguration | None = None
    authorizer: AuthorizerConfig | None = None
    scheduler: SchedulerConfiguration = Field(default_factory=SchedulerConfiguration)
    topologyAwareScheduling: TopologyAwareScheduling = Field(default_factory=TopologyAwareScheduling)
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    logLevel: str = ""
    logFormat: str = ""

    def apply_scheduler_defaults(self) -> None:
        """Grove's ``SetDefaults_SchedulerConfiguration`` (``defaults.go L77-101``)."""
        sched = self.scheduler
        if not sched.profiles:
            sched.profiles = [SchedulerProfile(name=DEFAULT_SCHEDULER)]
            sched.defaultProfileName = DEFAULT_SCHEDULER
            return
        if all(p.name != DEFAULT_SCHEDULER for p in sched.profiles):
            sched.profiles.append(SchedulerProfile(name=DEFAULT_SCHEDULER))
        if not sched.defaultProfileName:
            sched.defaultProfileName = DEFAULT_SCHEDULER

    def profile(self, name: str) -> SchedulerProfile | None:
        for p in self.scheduler.profiles:
            if p.name == name:
                return p
        return None
