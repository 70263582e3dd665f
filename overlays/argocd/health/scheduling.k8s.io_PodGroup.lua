-- Argo CD health check: scheduling.k8s.io/PodGroup, Kubernetes' Workload API gang (grove-gitops).
-- Key: resource.customizations.health.scheduling.k8s.io_PodGroup (overlays/argocd/argocd-cm-health.yaml).
--
-- kube-scheduler reports the gang in one condition: PodGroupScheduled (1.36, v1alpha2) or
-- PodGroupInitiallyScheduled (1.37, v1beta1/v1alpha3; terminal once True), with reasons
-- Unschedulable and SchedulerError when False. Pods wait in PreEnqueue until the PodGroup and
-- minCount Pods exist, so a PodGroup without that condition is the normal state before the Pods
-- (sync wave 10) are applied and must be Healthy.
--
-- Claims (tested by tests/wiring, documented in docs/gitops-wiring.md):
--   Progressing  metadata.deletionTimestamp is set. Message "Pending deletion".
--   Healthy      the scheduling condition is True. Message "PodGroup scheduled".
--   Degraded     the scheduling condition is False with reason Unschedulable or SchedulerError.
--                Message "<reason>: <message>", or just the reason without a message.
--   Healthy      everything else (no status, no scheduling condition, other reasons,
--                DisruptionTarget). Message "PodGroup exists", or "PodGroup not scheduled yet
--                (<reason>)" for a False condition with another reason.
local failures = {Unschedulable = true, SchedulerError = true}

if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  return {status = "Progressing", message = "Pending deletion"}
end

if obj.status ~= nil and obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    if c.type == "PodGroupInitiallyScheduled" or c.type == "PodGroupScheduled" then
      if c.status == "True" then
        return {status = "Healthy", message = "PodGroup scheduled"}
      end
      if c.status == "False" and c.reason ~= nil and failures[c.reason] then
        if c.message ~= nil and c.message ~= "" then
          return {status = "Degraded", message = c.reason .. ": " .. c.message}
        end
        return {status = "Degraded", message = c.reason}
      end
      if c.status == "False" and c.reason ~= nil and c.reason ~= "" then
        return {status = "Healthy", message = "PodGroup not scheduled yet (" .. c.reason .. ")"}
      end
    end
  end
end
return {status = "Healthy", message = "PodGroup exists"}
