"""Which resourceSharing entries apply to a PodClique, found through an index of the names
their filters list (issue 21 §2: a long filter was scanned once per PodClique). The index
must pick exactly the entries Grove's filter rule picks, in list order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from grove_gitops.api.podcliqueset import CliqueSharingFilter, SharingFilter
from grove_gitops.expand.resourceclaims import _FilterIndex

NAMES = ["a", "b", "c", "g", "h"]
_names = st.none() | st.lists(st.sampled_from(NAMES), max_size=4)
_pcs_filters = st.none() | st.builds(SharingFilter, childCliqueNames=_names, childScalingGroupNames=_names)
_group_filters = st.none() | st.builds(CliqueSharingFilter, childCliqueNames=_names)


def _grove_rule(flt: SharingFilter | CliqueSharingFilter | None, clique: str, group: str | None) -> bool:
    """``filter == nil || clique in childCliqueNames || group in childScalingGroupNames``."""
    if flt is None:
        return True
    if clique in (flt.childCliqueNames or []):
        return True
    groups = flt.childScalingGroupNames if isinstance(flt, SharingFilter) else None
    return group is not None and group in (groups or [])


@given(
    filters=st.lists(_pcs_filters | _group_filters, max_size=8),
    clique=st.sampled_from(NAMES),
    group=st.none() | st.sampled_from(NAMES),
)
def test_the_index_picks_what_the_filter_rule_picks(
    filters: list[SharingFilter | CliqueSharingFilter | None], clique: str, group: str | None
) -> None:
    expected = [i for i, flt in enumerate(filters) if _grove_rule(flt, clique, group)]
    assert _FilterIndex.of(filters).matching(clique, group) == expected
