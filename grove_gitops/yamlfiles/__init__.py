"""YAML files read safely (:mod:`.yamlio`) and the line a field was written on (:mod:`.positions`).

Below the loader, the render cache and the problem reports, which all read YAML or point into it;
standard library and PyYAML only.
"""
