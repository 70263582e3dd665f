-- Argo CD health check: scheduler.grove.io/PodGang (grove-gitops).
-- Key: resource.customizations.health.scheduler.grove.io_PodGang (overlays/argocd/argocd-cm-health.yaml).
--
-- PodGangs sit in sync wave 0 and their Pods in wave 10. Argo CD waits for every object of a wave
-- to be Healthy before it applies the next wave, and a PodGang is only scheduled once its Pods
-- exist, so "exists" must already be Healthy. In GitOps mode no Grove operator runs: the
-- gate-lifter writes Grove's Initialized=True condition and phase Pending once it released the
-- gang, and nothing writes status before that.
--
-- Claims (tested by tests/wiring, documented in docs/gitops-wiring.md):
--   Progressing  metadata.deletionTimestamp is set. Message "Pending deletion" (Argo CD reports
--                the same on its own before it runs any custom check).
--   Degraded     a condition Unhealthy=True or Unschedulable=True (message: the condition's
--                message, else its reason, else its type), or status.phase "Failed"
--                (message "PodGang phase Failed").
--   Healthy      everything else. Message "PodGang exists" without status.phase, else
--                "PodGang phase <phase>", plus " (<message>)" of an Initialized condition.
local function text(c, fallback)
  if c.message ~= nil and c.message ~= "" then
    return c.message
  end
  if c.reason ~= nil and c.reason ~= "" then
    return c.reason
  end
  return fallback
end

if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  return {status = "Progressing", message = "Pending deletion"}
end

local status = obj.status
if status == nil then
  return {status = "Healthy", message = "PodGang exists"}
end

local initialized = nil
if status.conditions ~= nil then
  for _, c in ipairs(status.conditions) do
    if (c.type == "Unhealthy" or c.type == "Unschedulable") and c.status == "True" then
      return {status = "Degraded", message = text(c, c.type)}
    end
    if c.type == "Initialized" then
      initialized = c
    end
  end
end

if status.phase == "Failed" then
  return {status = "Degraded", message = "PodGang phase Failed"}
end

local message = "PodGang exists"
if status.phase ~= nil and status.phase ~= "" then
  message = "PodGang phase " .. status.phase
end
if initialized ~= nil and initialized.message ~= nil and initialized.message ~= "" then
  message = message .. " (" .. initialized.message .. ")"
end
return {status = "Healthy", message = message}
