"""Will the gangs schedule? Place every rendered PodGang onto the source's node inventory.

``inventory`` turns NodeInventory pools and ``v1`` Nodes into groups of identical nodes (a
pool is never expanded) and topology levels, ``demand`` computes each pod's requests and the
nodes it may use, ``capacity`` keeps the free room of the groups, ``placement`` packs the
gangs (a deterministic heuristic: first-fit decreasing with a per-domain search), ``check``
wires it to a render, and ``report`` prints the result. See docs/feasibility.md.
"""

HEURISTIC = (
    "heuristic placement (first-fit decreasing, best-fit search per topology domain): a gang reported "
    "as fitting does fit; one reported as not fitting might still fit under a cleverer packing"
)
