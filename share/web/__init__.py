"""share.web: the Flask side — pages, the upload API, the view endpoints, error rendering.

app.create_app builds the application; routes.ROUTES lists every route on one screen; api
(uploads, raw download, delete, the record), reports (views of a profile) and pages (HTML) are
thin handlers that call share.core; errors renders every ShareError for curl, JSON or a browser;
limits (rate limits, upload token, trusted proxies, allowed hosts), ops (/healthz, /readyz,
/metrics, request ids, the access log) and serving (gunicorn's settings and gevent worker).
It may import every other package of share; none of them imports it.
"""
