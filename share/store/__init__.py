"""share.store: where profiles and their records live, behind two interfaces.

blobs.BlobStore holds the profile bytes (gzip, keyed by id) and meta.MetaStore the records,
expiry, leases and cached views. One module per backend, as cachelib keeps them: local (a
directory) and sqlite (one file) are the embedded default, s3 and redis the production pair
(redis on a standalone Redis or a Redis Cluster: its keys in redis_keys, its client and durable
writes in redis_client, its view cache in redis_views); `locate.blob_store` and
`locate.meta_store` open one from a setting. Backends import their client library (boto3,
redis) only when constructed. Beside them: guard (a store whose failures are
StoreUnavailable), lease (short leases renewed while held), group (SQLite's group commit) and
locate (a setting as shown to people). The package imports nothing from share but errors.
"""
