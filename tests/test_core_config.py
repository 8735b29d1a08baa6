"""Settings: defaults, SHARE_* environment, and one clear line for what cannot work."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from share import config, create_app
from share.config import ConfigError


def test_defaults_environment_then_overrides():
    settings = config.load({"SHARE_MAX_UPLOAD_BYTES": "1000", "SHARE_PUBLIC_URL": "https://x/"})
    assert settings["MAX_UPLOAD_BYTES"] == 1000
    assert settings["PUBLIC_URL"] == "https://x"
    assert settings["BLOBS"] == "file:./data/blobs"
    assert (
        config.load({"SHARE_MAX_UPLOAD_BYTES": "1000"}, {"MAX_UPLOAD_BYTES": 5})["MAX_UPLOAD_BYTES"]
        == 5
    )


@pytest.mark.parametrize(
    ("env", "names"),
    [
        ({"SHARE_MAX_UPLOAD_BYTES": "lots"}, "SHARE_MAX_UPLOAD_BYTES"),
        ({"SHARE_MAX_PROFILE_BYTES": "-1"}, "SHARE_MAX_PROFILE_BYTES"),
        ({"SHARE_BLOBS": "ftp://host/x"}, "SHARE_BLOBS"),
        ({"SHARE_META": "postgres://x"}, "SHARE_META"),
        ({"SHARE_DEFAULT_EXPIRY": "soon"}, "SHARE_DEFAULT_EXPIRY"),
        ({"SHARE_MAX_EXPIRY": "7 days"}, "SHARE_MAX_EXPIRY"),
    ],
)
def test_bad_setting_names_the_variable(env, names):
    with pytest.raises(ConfigError, match=names):
        config.load(env)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("1h", 3600), ("7d", 7 * 86400), ("2w", 14 * 86400), ("never", None)],
)
def test_durations(text, seconds):
    assert config.parse_duration(text) == seconds


def test_unreachable_redis_stops_startup(tmp_path):
    with pytest.raises(ConfigError, match="SHARE_META=.*redis"):
        create_app({"BLOBS": f"file:{tmp_path}/b", "META": "redis://127.0.0.1:1/0"})


def test_missing_bucket_stops_startup(s3_endpoint, tmp_path):
    with pytest.raises(ConfigError, match="SHARE_BLOBS=.*no such bucket"):
        create_app({"BLOBS": "s3://no-such-bucket-here", "META": f"sqlite:{tmp_path}/m"})


def test_serve_with_a_bad_setting_exits_with_one_line(tmp_path):
    env = dict(os.environ, SHARE_META="redis://127.0.0.1:1/0", SHARE_BLOBS=f"file:{tmp_path}")
    exe = Path(sys.executable).parent / "pprof-share"
    result = subprocess.run(
        [str(exe), "serve", "--port", "0"], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pprof-share: SHARE_META=")
