"""URLs: normalisation, the stateless policy (scope and traps), admission budgets, priority
scores, and the fetch key of a URL's host.

``normalize`` (:class:`~crawl.urls.normalize.UrlNormalizer`, ``host_of``, ``vnode_of``),
``scope`` (:class:`~crawl.urls.scope.UrlPolicy`, ``registered_domain``), ``admission``
(per-domain and per-shape budgets kept by the crawl DB), ``priority`` (what a discovery adds to
a URL's score, and its rank), ``routing`` (the fetch stage's key of a host).
"""
