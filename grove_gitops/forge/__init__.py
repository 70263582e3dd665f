"""Small clients of the forges' REST APIs (GitHub, GitLab), on the standard library.

:mod:`.http` is the one HTTP client they share: the token goes to the API's origin only,
replies are bounded, errors name the call and never the token. :mod:`.gitlab` keeps merge
request notes, :mod:`.statuses` posts commit statuses for the controller.
"""
