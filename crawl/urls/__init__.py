"""URLs: normalisation, the stateless policy (scope and traps), URL shapes, priority scores,
and the fetch key of a URL's host.

``normalize`` (:class:`~crawl.urls.normalize.UrlNormalizer`, ``host_of``, ``vnode_of``),
``scope`` (:class:`~crawl.urls.scope.UrlPolicy`, ``registered_domain``), ``shapes`` (the shape
of a URL within its host, which the crawl DB's budgets count by), ``priority`` (what a
discovery adds to a URL's score, and its rank), ``routing`` (the fetch stage's key of a host).
"""
