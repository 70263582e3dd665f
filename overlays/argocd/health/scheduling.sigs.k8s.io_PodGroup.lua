-- Argo CD health check: scheduling.sigs.k8s.io/PodGroup, the Koordinator gang (grove-gitops).
-- Key: resource.customizations.health.scheduling.sigs.k8s.io_PodGroup (overlays/argocd/argocd-cm-health.yaml).
--
-- Koordinator reuses the scheduler-plugins v1alpha1 PodGroup types (CRD in shared/crds/koordinator):
-- status.phase plus pod counters (scheduled, running, succeeded, failed).
-- The PodGroup sits in sync wave 0 and its Pods in wave 10, so a PodGroup without status, or
-- still Pending because its Pods do not exist yet, must be Healthy or the waves deadlock. Only
-- phase Failed (at least one of the spec.minMember pods failed) is an explicit failure.
--
-- Claims (tested by tests/wiring, documented in docs/gitops-wiring.md):
--   Progressing  metadata.deletionTimestamp is set. Message "Pending deletion".
--   Degraded     status.phase Failed. Message "PodGroup phase Failed (<n> failed pods)" when
--                status.failed is a number, else "PodGroup phase Failed".
--   Healthy      everything else. Message "PodGroup phase <phase>", or "PodGroup exists"
--                without status.phase.
if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  return {status = "Progressing", message = "Pending deletion"}
end

local status = obj.status
if status == nil or status.phase == nil or status.phase == "" then
  return {status = "Healthy", message = "PodGroup exists"}
end

if status.phase == "Failed" then
  if type(status.failed) == "number" then
    return {status = "Degraded", message = "PodGroup phase Failed (" .. status.failed .. " failed pods)"}
  end
  return {status = "Degraded", message = "PodGroup phase Failed"}
end

return {status = "Healthy", message = "PodGroup phase " .. status.phase}
