-- Argo CD health check: gitops.grove.io/PodClique, the scale target of an autoscaled standalone clique (grove-gitops).
-- Key: resource.customizations.health.gitops.grove.io_PodClique (overlays/argocd/argocd-cm-health.yaml).
--
-- Created by the grove-gitops agent, never in Git (docs/autoscaling.md): Argo CD shows it in the
-- resource tree under its gitops.grove.io PodCliqueSet (ownerReference) but it does not count in
-- the Application's health or sync. spec.replicas is written by scalers (/scale); every /scale
-- write bumps metadata.generation. The agent writes status: replicas, readyReplicas,
-- updatedReplicas, availableReplicas, selector, observedGeneration and the condition ScaleBlocked.
-- Healthy uses readyReplicas: replicas (pods) that are Ready.
--
-- Claims (tested by tests/wiring, documented in docs/gitops-wiring.md):
--   Progressing  metadata.deletionTimestamp is set. Message "Pending deletion".
--   Progressing  no status.observedGeneration. Message "Waiting for the grove-gitops agent".
--   Progressing  status.observedGeneration < metadata.generation. Message
--                "Waiting for the grove-gitops agent to observe generation <generation>".
--   Degraded     condition ScaleBlocked is True (a ResourceQuota refused a pod of a new gang: the
--                agent created no part of it). Message: its message, else its reason, else
--                "ScaleBlocked".
--   Progressing  status.replicas above spec.replicas. Message "Scaling in: <current> replicas,
--                <desired> desired".
--   Progressing  readyReplicas or updatedReplicas (missing = 0) below spec.replicas. Message
--                "<readyReplicas> of <desired> replicas ready, <updated> updated".
--   Healthy      everything else. Message "<desired> of <desired> replicas ready and updated".
local function num(v)
  if type(v) == "number" then
    return v
  end
  return 0
end

local meta = obj.metadata or {}
if meta.deletionTimestamp ~= nil then
  return {status = "Progressing", message = "Pending deletion"}
end

local status = obj.status
if status == nil or type(status.observedGeneration) ~= "number" then
  return {status = "Progressing", message = "Waiting for the grove-gitops agent"}
end
if type(meta.generation) == "number" and status.observedGeneration < meta.generation then
  return {status = "Progressing", message = "Waiting for the grove-gitops agent to observe generation " .. meta.generation}
end

if status.conditions ~= nil then
  for _, c in ipairs(status.conditions) do
    if c.type == "ScaleBlocked" and c.status == "True" then
      local message = c.message
      if message == nil or message == "" then
        message = c.reason
      end
      if message == nil or message == "" then
        message = "ScaleBlocked"
      end
      return {status = "Degraded", message = message}
    end
  end
end

local spec = obj.spec or {}
local desired = num(spec.replicas)
local current = num(status.replicas)
if current > desired then
  return {status = "Progressing", message = "Scaling in: " .. current .. " replicas, " .. desired .. " desired"}
end
local ready = num(status.readyReplicas)
local updated = num(status.updatedReplicas)
if ready < desired or updated < desired then
  return {
    status = "Progressing",
    message = ready .. " of " .. desired .. " replicas ready, " .. updated .. " updated"
  }
end
return {status = "Healthy", message = desired .. " of " .. desired .. " replicas ready and updated"}
