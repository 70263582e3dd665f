-- Argo CD health check: gitops.grove.io/PodCliqueSet, grove-gitops' record of one workload.
-- Key: resource.customizations.health.gitops.grove.io_PodCliqueSet (overlays/argocd/argocd-cm-health.yaml).
--
-- Rendered into Git for every workload (docs/autoscaling.md); the grove-gitops agent writes its
-- status: observedGeneration, replicas, availableReplicas, updatedReplicas and the conditions
-- Ready and ScaleBlocked. It must sit in the LAST sync wave of its shard (with or after the Pods,
-- wave 10): it turns Healthy only once the Pods run, so an earlier wave would wait forever.
--
-- Claims (tested by tests/wiring, documented in docs/gitops-wiring.md):
--   Progressing  metadata.deletionTimestamp is set. Message "Pending deletion".
--   Progressing  no status.observedGeneration. Message "Waiting for the grove-gitops agent".
--   Progressing  status.observedGeneration < metadata.generation. Message
--                "Waiting for the grove-gitops agent to observe generation <generation>".
--   Degraded     condition ScaleBlocked is True (a ResourceQuota refused a pod of a scaled gang).
--                Message: its message, else its reason, else "ScaleBlocked".
--   Degraded     condition Ready is False with reason InvalidWorkload (the agent cannot expand
--                the workload from spec.source). Message: its message, else its reason.
--   Progressing  availableReplicas or updatedReplicas (missing = 0) below spec.replicas. Message
--                "<available> of <replicas> replicas available, <updated> updated".
--   Healthy      everything else. Message "<replicas> of <replicas> replicas available and updated".
local degradedReasons = {InvalidWorkload = true}

local function num(v)
  if type(v) == "number" then
    return v
  end
  return 0
end

local function text(c, fallback)
  if c.message ~= nil and c.message ~= "" then
    return c.message
  end
  if c.reason ~= nil and c.reason ~= "" then
    return c.reason
  end
  return fallback
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
      return {status = "Degraded", message = text(c, "ScaleBlocked")}
    end
    if c.type == "Ready" and c.status == "False" and c.reason ~= nil and degradedReasons[c.reason] then
      return {status = "Degraded", message = text(c, "Ready False")}
    end
  end
end

local spec = obj.spec or {}
local replicas = num(spec.replicas)
local available = num(status.availableReplicas)
local updated = num(status.updatedReplicas)
if available < replicas or updated < replicas then
  return {
    status = "Progressing",
    message = available .. " of " .. replicas .. " replicas available, " .. updated .. " updated"
  }
end
return {status = "Healthy", message = replicas .. " of " .. replicas .. " replicas available and updated"}
