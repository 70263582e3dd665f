-- Argo CD health check: grove.io/ClusterTopologyBinding, Grove's topology (grove-gitops).
-- Key: resource.customizations.health.grove.io_ClusterTopologyBinding (overlays/argocd/argocd-cm-health.yaml).
--
-- In GitOps mode nothing writes this status (no Grove operator runs); a Grove operator would
-- report drift between the binding and a scheduler's topology object in the
-- SchedulerTopologyDrift condition (True/Drift) and per scheduler in
-- status.schedulerTopologyStatuses[].inSync (Grove clustertopologybinding reconciler).
--
-- Claims (tested by tests/wiring, documented in docs/gitops-wiring.md):
--   Progressing  metadata.deletionTimestamp is set. Message "Pending deletion".
--   Degraded     SchedulerTopologyDrift is True. Message: its message, else its reason,
--                else "scheduler topology drift".
--   Degraded     an entry of status.schedulerTopologyStatuses has inSync false. Message
--                "<schedulerName> topology <topologyReference> out of sync[: <message>]",
--                entries joined with "; ".
--   Healthy      everything else. Message "ClusterTopologyBinding exists (<n> levels)" with
--                n = #spec.levels, or "ClusterTopologyBinding exists" without spec.levels.
if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  return {status = "Progressing", message = "Pending deletion"}
end

local status = obj.status
if status ~= nil then
  if status.conditions ~= nil then
    for _, c in ipairs(status.conditions) do
      if c.type == "SchedulerTopologyDrift" and c.status == "True" then
        local message = c.message
        if message == nil or message == "" then
          message = c.reason
        end
        if message == nil or message == "" then
          message = "scheduler topology drift"
        end
        return {status = "Degraded", message = message}
      end
    end
  end
  if status.schedulerTopologyStatuses ~= nil then
    local drifted = {}
    for _, s in ipairs(status.schedulerTopologyStatuses) do
      if s.inSync == false then
        local line = (s.schedulerName or "scheduler") .. " topology " .. (s.topologyReference or "?") .. " out of sync"
        if s.message ~= nil and s.message ~= "" then
          line = line .. ": " .. s.message
        end
        table.insert(drifted, line)
      end
    end
    if #drifted > 0 then
      return {status = "Degraded", message = table.concat(drifted, "; ")}
    end
  end
end

if obj.spec ~= nil and obj.spec.levels ~= nil then
  return {status = "Healthy", message = "ClusterTopologyBinding exists (" .. #obj.spec.levels .. " levels)"}
end
return {status = "Healthy", message = "ClusterTopologyBinding exists"}
