-- Argo CD health check: scheduling.koordinator.sh/ClusterNetworkTopology (grove-gitops).
-- Key: resource.customizations.health.scheduling.koordinator.sh_ClusterNetworkTopology
-- (overlays/argocd/argocd-cm-health.yaml).
--
-- Koordinator only fills status.detailStatus (the discovered topology tree) and has no failure
-- signal; the object sits in the prerequisites wave (-10) and must not hold back later waves.
-- koord-scheduler only reads the ClusterNetworkTopology named "default", which the message says.
--
-- Claims (tested by tests/wiring, documented in docs/gitops-wiring.md):
--   Progressing  metadata.deletionTimestamp is set. Message "Pending deletion".
--   Healthy      otherwise. Message "ClusterNetworkTopology exists" for the one named
--                "default", else "ClusterNetworkTopology exists, but koord-scheduler only
--                reads the one named default".
if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  return {status = "Progressing", message = "Pending deletion"}
end
if obj.metadata ~= nil and obj.metadata.name ~= nil and obj.metadata.name ~= "default" then
  return {
    status = "Healthy",
    message = "ClusterNetworkTopology exists, but koord-scheduler only reads the one named default",
  }
end
return {status = "Healthy", message = "ClusterNetworkTopology exists"}
