"""The in-cluster agent: gate release and Grove's day-2 behaviour (docs/day2.md).

Pure decisions (:mod:`.snapshot`, :mod:`.order`, :mod:`.release`, :mod:`.rollout`,
:mod:`.healing`, :mod:`.scalein`) return :mod:`.actions`; the loop executes them.
"""
