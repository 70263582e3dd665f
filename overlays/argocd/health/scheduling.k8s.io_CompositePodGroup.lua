-- Argo CD health check: scheduling.k8s.io/CompositePodGroup, Kubernetes 1.37 v1alpha3 (grove-gitops).
-- Key: resource.customizations.health.scheduling.k8s.io_CompositePodGroup (overlays/argocd/argocd-cm-health.yaml).
--
-- kube-scheduler reports the composite gang in the CompositePodGroupInitiallyScheduled
-- condition, with reasons Unschedulable, SchedulerError and Invalid (a bad runtime layout:
-- cycle, depth > 4, several Workloads) when False. Without that condition the group is simply
-- waiting for its PodGroups and Pods (later objects and waves) and must be Healthy.
--
-- Claims (tested by tests/wiring, documented in docs/gitops-wiring.md):
--   Progressing  metadata.deletionTimestamp is set. Message "Pending deletion".
--   Healthy      CompositePodGroupInitiallyScheduled is True. Message "CompositePodGroup scheduled".
--   Degraded     it is False with reason Unschedulable, SchedulerError or Invalid. Message
--                "<reason>: <message>", or just the reason without a message.
--   Healthy      everything else. Message "CompositePodGroup exists", or
--                "CompositePodGroup not scheduled yet (<reason>)" for a False condition with
--                another reason.
local failures = {Unschedulable = true, SchedulerError = true, Invalid = true}

if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  return {status = "Progressing", message = "Pending deletion"}
end

if obj.status ~= nil and obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    if c.type == "CompositePodGroupInitiallyScheduled" then
      if c.status == "True" then
        return {status = "Healthy", message = "CompositePodGroup scheduled"}
      end
      if c.status == "False" and c.reason ~= nil and failures[c.reason] then
        if c.message ~= nil and c.message ~= "" then
          return {status = "Degraded", message = c.reason .. ": " .. c.message}
        end
        return {status = "Degraded", message = c.reason}
      end
      if c.status == "False" and c.reason ~= nil and c.reason ~= "" then
        return {status = "Healthy", message = "CompositePodGroup not scheduled yet (" .. c.reason .. ")"}
      end
    end
  end
end
return {status = "Healthy", message = "CompositePodGroup exists"}
