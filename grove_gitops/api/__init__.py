"""Stage 2: typed models of the input kinds (and of the PodGang we emit).

Models are faithful to the upstream CRDs in ``../shared/crds/grove``: JSON field names are
kept (camelCase) so a field path in an error message is the path the user wrote. Pod
templates stay plain dictionaries: a user's pod fields are never dropped or reshaped.
"""
