-- Argo CD health check: scheduling.volcano.sh/PodGroup, the Volcano gang (grove-gitops).
-- Key: resource.customizations.health.scheduling.volcano.sh_PodGroup (overlays/argocd/argocd-cm-health.yaml).
--
-- The PodGroup sits in sync wave 0 and its Pods in wave 10. Volcano marks a PodGroup
-- Unschedulable=True with reason NotEnoughTasks (or NotEnoughPodsOfTask) as soon as it sees the
-- group with fewer Pods than minMember - i.e. always, before wave 10 is applied - so that reason
-- means "waiting for Pods" and must stay Healthy, or Argo CD fails the sync before it creates the
-- Pods. Phases Pending, Inqueue and Running are all normal; Volcano keeps an old Unschedulable
-- entry after the gang runs (conditions are replaced per type, never removed), so Running and
-- Completed win over conditions (volcano pkg/scheduler/framework/session.go, job_updater.go).
--
-- Claims (tested by tests/wiring, documented in docs/gitops-wiring.md):
--   Progressing  metadata.deletionTimestamp is set. Message "Pending deletion".
--   Healthy      status.phase Running or Completed. Message "PodGroup phase <phase>".
--   Healthy      a condition Unschedulable=True with reason NotEnoughTasks or
--                NotEnoughPodsOfTask. Message "waiting for pods: <message, else reason>".
--   Degraded     any other condition Unschedulable=True. Message: its message, else its reason,
--                else "Unschedulable".
--   Healthy      everything else. Message "PodGroup phase <phase>" (Pending, Inqueue,
--                Unknown, ...), or "PodGroup exists" without status.phase.
local waiting = {NotEnoughTasks = true, NotEnoughPodsOfTask = true}

if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  return {status = "Progressing", message = "Pending deletion"}
end

local status = obj.status
if status == nil then
  return {status = "Healthy", message = "PodGroup exists"}
end

if status.phase == "Running" or status.phase == "Completed" then
  return {status = "Healthy", message = "PodGroup phase " .. status.phase}
end

if status.conditions ~= nil then
  for _, c in ipairs(status.conditions) do
    if c.type == "Unschedulable" and c.status == "True" then
      local message = c.message
      if message == nil or message == "" then
        message = c.reason
      end
      if c.reason ~= nil and waiting[c.reason] then
        return {status = "Healthy", message = "waiting for pods: " .. message}
      end
      if message == nil or message == "" then
        message = "Unschedulable"
      end
      return {status = "Degraded", message = message}
    end
  end
end

if status.phase ~= nil and status.phase ~= "" then
  return {status = "Healthy", message = "PodGroup phase " .. status.phase}
end
return {status = "Healthy", message = "PodGroup exists"}
