"""share.analysis.views: each view encoded as served, the one entry point of share.analysis.

views.VIEWS names every view and views.render() computes one from parsed profiles and options;
options checks a view's options and makes them canonical (cache keys), docs holds what the
JSON documents share, pprofviews the views that take pprof's options, diffview the diff's
flame graph and top with both sides, preview the link preview PNG. The compute tier and the
CLI call it; it may import every folder of share.analysis below it.
"""
