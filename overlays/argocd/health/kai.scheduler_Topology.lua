-- Argo CD health check: kai.scheduler/Topology, KAI's cluster topology (grove-gitops).
-- Key: resource.customizations.health.kai.scheduler_Topology (overlays/argocd/argocd-cm-health.yaml).
--
-- The Topology has no status (kai-scheduler pkg/apis/kai/v1alpha1/topology_types.go); it sits in
-- the prerequisites wave (-10) and must not hold back the gang and Pod waves.
--
-- Claims (tested by tests/wiring, documented in docs/gitops-wiring.md):
--   Progressing  metadata.deletionTimestamp is set. Message "Pending deletion".
--   Healthy      otherwise. Message "Topology exists (<n> levels)" with n = #spec.levels, or
--                "Topology exists" when spec.levels is absent.
if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  return {status = "Progressing", message = "Pending deletion"}
end
if obj.spec ~= nil and obj.spec.levels ~= nil then
  return {status = "Healthy", message = "Topology exists (" .. #obj.spec.levels .. " levels)"}
end
return {status = "Healthy", message = "Topology exists"}
