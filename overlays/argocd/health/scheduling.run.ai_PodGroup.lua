-- Argo CD health check: scheduling.run.ai/PodGroup, the KAI Scheduler gang (grove-gitops).
-- Key: resource.customizations.health.scheduling.run.ai_PodGroup (overlays/argocd/argocd-cm-health.yaml).
--
-- The PodGroup sits in sync wave 0 and its Pods in wave 10; KAI only tries to place a gang once
-- enough of its Pods exist and are ungated, so a PodGroup without status must be Healthy or the
-- waves deadlock. KAI reports a failed placement attempt as
-- status.schedulingConditions[type=UnschedulableOnNodePool, status=True] with
-- reasons[{reason, message}] (kai-scheduler pkg/apis/scheduling/v2alpha2/podgroup_types.go).
--
-- Claims (tested by tests/wiring, documented in docs/gitops-wiring.md):
--   Progressing  metadata.deletionTimestamp is set. Message "Pending deletion".
--   Healthy      status.resourcesStatus.allocated or .allocatedNonPreemptible has a non-zero
--                quantity: the gang was placed, so an older UnschedulableOnNodePool entry is
--                stale. Message "KAI PodGroup scheduled".
--   Degraded     the latest scheduling condition (highest numeric transitionID; on a tie, or
--                when an ID is missing or not a number, the later entry) is
--                UnschedulableOnNodePool=True. Message
--                "Unschedulable on node pool <pool>: <reason>: <message>; ..." built from
--                reasons[] (falling back to the condition's message, then its reason); the
--                " on node pool <pool>" part only when nodePool is set.
--   Degraded     a status.conditions entry Unschedulable=True. Message: its message, else its
--                reason, else "Unschedulable".
--   Healthy      everything else, including no status. Message "KAI PodGroup exists".
local function nonzero(resources)
  if resources == nil then
    return false
  end
  for _, quantity in pairs(resources) do
    if quantity ~= 0 and quantity ~= "0" then
      return true
    end
  end
  return false
end

if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  return {status = "Progressing", message = "Pending deletion"}
end

local status = obj.status
if status == nil then
  return {status = "Healthy", message = "KAI PodGroup exists"}
end

local placed = status.resourcesStatus
if placed ~= nil and (nonzero(placed.allocated) or nonzero(placed.allocatedNonPreemptible)) then
  return {status = "Healthy", message = "KAI PodGroup scheduled"}
end

local latest = nil
local latestID = nil
if status.schedulingConditions ~= nil then
  for _, c in ipairs(status.schedulingConditions) do
    local id = tonumber(c.transitionID)
    if latest == nil or id == nil or latestID == nil or id >= latestID then
      latest = c
      latestID = id
    end
  end
end

if latest ~= nil and latest.type == "UnschedulableOnNodePool" and latest.status == "True" then
  local parts = {}
  if latest.reasons ~= nil then
    for _, r in ipairs(latest.reasons) do
      local part = r.reason or ""
      if r.message ~= nil and r.message ~= "" then
        if part ~= "" then
          part = part .. ": " .. r.message
        else
          part = r.message
        end
      end
      if part ~= "" then
        table.insert(parts, part)
      end
    end
  end
  local detail = table.concat(parts, "; ")
  if detail == "" then
    detail = latest.message or ""
  end
  if detail == "" then
    detail = latest.reason or "Unschedulable"
  end
  local where = ""
  if latest.nodePool ~= nil and latest.nodePool ~= "" then
    where = " on node pool " .. latest.nodePool
  end
  return {status = "Degraded", message = "Unschedulable" .. where .. ": " .. detail}
end

if status.conditions ~= nil then
  for _, c in ipairs(status.conditions) do
    if c.type == "Unschedulable" and c.status == "True" then
      local message = c.message
      if message == nil or message == "" then
        message = c.reason
      end
      if message == nil or message == "" then
        message = "Unschedulable"
      end
      return {status = "Degraded", message = message}
    end
  end
end

return {status = "Healthy", message = "KAI PodGroup exists"}
