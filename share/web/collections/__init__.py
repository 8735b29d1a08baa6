"""share.web.collections: a collection's routes — create, add, delete, its JSON and its views.

api holds the writes (create, add with every upload idiom of `/`, delete) and the collection's
JSON (record, members, timeline); views answer every view of a selection by resolving it to a
stored profile (share.collections) and serving that profile's view as share.web.reports does;
page renders the collection page (the timeline above the profile viewer). Like the rest of
share.web it calls the core and share.collections, and touches no store.
"""
