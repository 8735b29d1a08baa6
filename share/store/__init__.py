"""share.store: where profiles and their records live, behind two interfaces.

blobs.BlobStore holds the profile bytes (gzip, keyed by id) and meta.MetaStore the records,
expiry, leases and cached views. One module per backend, as cachelib keeps them: local (a
directory) and sqlite (one file) are the embedded default, s3 and redis the production pair;
`blobs.from_url` and `meta.from_url` pick one from a setting. Backends import their client
library (boto3, redis) only when constructed. The package imports nothing else from share.
"""
