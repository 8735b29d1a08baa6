"""/healthz, /readyz, /metrics, request ids and the access log, in process."""

from __future__ import annotations

import logging

from conftest import unique_profile


def test_health_and_readiness(client):
    assert client.get("/healthz").get_data() == b"ok\n"
    ready = client.get("/readyz")
    assert ready.status_code == 200
    lines = ready.get_data(as_text=True).splitlines()
    assert lines[0].startswith("blobs file:") and ": ok (" in lines[0]
    assert lines[1].startswith("records sqlite:") and ": ok (" in lines[1]
    body = client.get("/readyz", headers={"Accept": "application/json"}).get_json()
    assert body["ready"] is True and [s["store"] for s in body["stores"]] == ["blobs", "records"]


def test_readyz_says_what_a_failing_store_said(app, client, monkeypatch):
    def broken() -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(app.extensions["share"].meta.inner, "check", broken)
    reply = client.get("/readyz", headers={"Accept": "application/json"})
    assert reply.status_code == 503
    records = reply.get_json()["stores"][1]
    assert records["ok"] is False and "disk on fire" in records["said"]


def test_metrics_count_requests_uploads_and_cache(client):
    made = client.post("/", data=unique_profile("metrics"), headers={"Accept": "application/json"})
    pid = made.get_json()["id"]
    client.get(f"/{pid}/top")
    client.get(f"/{pid}/top")
    client.get("/no-such-thing-here")
    text = client.get("/metrics").get_data(as_text=True)
    assert 'share_http_requests_total{route="/<pid:pid>/top",status="200"}' in text
    assert 'share_uploads_total{outcome="created"}' in text
    assert "share_upload_bytes_total" in text
    assert 'share_view_cache_total{result="hit"}' in text
    assert 'share_analysis_seconds_bucket{le="+Inf",view="toptext"}' in text


def test_every_reply_carries_a_request_id_and_gets_a_log_line(client, caplog):
    caplog.set_level(logging.INFO, logger="share.access")
    logger = logging.getLogger("share.access")
    logger.addHandler(caplog.handler)
    try:
        missing = client.get("/AAAAAAAAAAAAAAAA", headers={"Accept": "application/json"})
        given = client.get("/healthz", headers={"X-Request-Id": "lb-1234"})
    finally:
        logger.removeHandler(caplog.handler)
    assert missing.status_code == 404
    rid = missing.headers["X-Request-Id"]
    assert missing.get_json()["error"]["request_id"] == rid
    assert given.headers["X-Request-Id"] == "lb-1234"
    lines = [r.getMessage() for r in caplog.records if r.name == "share.access"]
    assert any('"GET /AAAAAAAAAAAAAAAA" 404' in line and f"id={rid}" in line for line in lines)
    assert any("id=lb-1234" in line for line in lines)
