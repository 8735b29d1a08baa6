"""share.compute: the compute tier — every parse and analysis runs here, off the request path.

Each app instance owns a pool of compute processes (pool.ComputePool): SHARE_ANALYSIS_WORKERS for
views, SHARE_INGEST_WORKERS that only validate uploads, so that an upload never waits behind an
analysis, and SHARE_MERGE_WORKERS that only merge, so that a view never waits behind a merge. A job
goes to one process over a socket (protocol) and is answered there (worker): the upload's
validation (ingest), a view of stored profiles (views), or a merge of profiles and files (merges:
stored as a new upload by the core). Each process runs under an address-space limit
(SHARE_ANALYSIS_MEMORY) and each job under a wall time (SHARE_ANALYSIS_SECONDS): past either the
process is killed and replaced, and the caller gets a clear error. Analysis and merge processes
keep recently used profiles decoded (cache, bounded by SHARE_ANALYSIS_CACHE_BYTES), and jobs about
one profile go to the process that has it warm. once.Once makes concurrent requests for one view
wait for a single computation, across threads, workers and (on Redis) instances.

It may import share.analysis, share.pprof and share.store; share.core is its only user.
"""
