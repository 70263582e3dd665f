-- Argo CD health check: scheduling.k8s.io/Workload, Kubernetes' Workload API (grove-gitops).
-- Key: resource.customizations.health.scheduling.k8s.io_Workload (overlays/argocd/argocd-cm-health.yaml).
--
-- A Workload is a template holder without status in Kubernetes 1.35-1.37 (v1alpha1, v1alpha2,
-- v1beta1, v1alpha3); PodGroups and Pods that reference it follow in the same or later waves.
--
-- Claims (tested by tests/wiring, documented in docs/gitops-wiring.md):
--   Progressing  metadata.deletionTimestamp is set. Message "Pending deletion".
--   Healthy      otherwise. Message "Workload exists".
if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  return {status = "Progressing", message = "Pending deletion"}
end
return {status = "Healthy", message = "Workload exists"}
