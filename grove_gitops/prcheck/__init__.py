"""The PR check behind the repository's composite GitHub Action (``action.yml``).

Everything the Action does lives here as ordinary, tested Python, so a workload repository
gets the same behaviour this repository's own workflow gets, and no logic hides in YAML or
JavaScript:

* :mod:`.compose` renders the PR's merge base and head (``diff`` with its rollout ``plan``),
  runs ``validate`` and ``feasibility`` on head and lays the report out as sticky-comment
  parts below GitHub's 65,536-character limit;
* :mod:`.annotations` turns ``validate --output json`` problems into workflow commands on
  the source lines;
* :mod:`.github` and :mod:`.sticky` keep one sticky comment set per key on the PR, and
  :mod:`.gitlab` the same set as notes on a GitLab merge request;
* :mod:`.verdict` applies ``fail-on``;
* :mod:`.cli` is ``grove-gitops pr-check`` (also ``python -m grove_gitops.prcheck``).
"""
