"""share.store.collections: where collections and their members are indexed, behind one interface.

A collection is a link that many profiles are added to over time (share.collections owns what
it means). This package only stores it: index.CollectionIndex is the interface (the collection's
record, its members in time order with their labels, kind and totals, and small JSON entries for
pre-merged blocks and resolved selections), with one module per backend as share.store keeps
them: sqlite (a file beside the embedded default's records) and redis (the production store's
server). The profiles themselves are ordinary stored profiles (share.store.blobs/meta). Like
share.store it imports nothing from share but share.errors.
"""
