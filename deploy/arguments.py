"""Argument types shared by the launchers: each one rejects bad input with a readable message.

They are argparse `type=` callables, so a bad value ends the launcher with
`error: argument --bucket: ...` (SystemExit 2) before any cloud call is made.
"""
import argparse
import pathlib
import re
from typing import Optional

# Cloud Storage bucket names: 3-63 characters, lower-case letters, digits, '-', '_' and '.',
# starting and ending with a letter or digit.
_GCS_PATH = re.compile(r"^gs://([a-z0-9][a-z0-9._-]{1,61}[a-z0-9])(/[^\s]*)?$")
# GCP project ids: 6-30 characters, a lower-case letter first, no trailing hyphen.
_PROJECT_ID = re.compile(r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$")
# Regions such as us-central1, europe-west4, northamerica-northeast1.
_REGION = re.compile(r"^[a-z]+-[a-z]+[0-9]+$")
# Zones are a region plus a letter: us-central1-a, europe-west4-b.
_ZONE = re.compile(r"^[a-z]+-[a-z]+[0-9]+-[a-z]$")
# Compute Engine machine types: n2-standard-4, e2-highmem-8, c3-standard-22, custom-8-32768.
_MACHINE_TYPE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)+$")
# Resource names (TPU names, labels): lower-case letters, digits and hyphens.
_RESOURCE_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")


def _matching(pattern: re.Pattern, what: str, example: str):
    def check(value: str) -> str:
        if not pattern.match(value):
            raise argparse.ArgumentTypeError(
                f"{value!r} is not a valid {what} (example: {example})")
        return value

    return check


project_id = _matching(_PROJECT_ID, "GCP project id", "my-project-123")
region = _matching(_REGION, "region", "us-central1")
zone = _matching(_ZONE, "zone", "europe-west4-a")
machine_type = _matching(_MACHINE_TYPE, "machine type", "n2-standard-4")
resource_name = _matching(_RESOURCE_NAME, "resource name", "t5-small-en")


def gcs_path(value: str) -> str:
    """A gs://bucket[/path] location, returned without a trailing slash."""
    match = _GCS_PATH.match(value)
    if not match or "//" in value[len("gs://"):]:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a Cloud Storage path: expected gs://BUCKET[/PATH] with a valid "
            "bucket name (3-63 characters: lower-case letters, digits, '-', '_', '.')")
    return value.rstrip("/")


def remote_path(value: str) -> str:
    """A file (or glob) that cloud workers read: gs:// or http(s)://, never a local path."""
    if value.startswith(("http://", "https://")):
        return value
    if value.startswith("gs://"):
        return gcs_path(value)
    raise argparse.ArgumentTypeError(
        f"{value!r} is a local path, which cloud workers cannot read: copy it to Cloud Storage "
        "(gsutil cp FILE gs://BUCKET/...) and pass the gs:// path")


def _remote(value: str) -> Optional[str]:
    """A URL as given or a checked gs:// path; None for a local path."""
    if value.startswith(("http://", "https://")):
        return value
    if value.startswith("gs://"):
        return gcs_path(value)
    return None


def launcher_readable_path(value: str) -> str:
    """A file the launcher itself reads before submitting: local (must exist), gs:// or URL."""
    remote = _remote(value)
    if remote is None and not pathlib.Path(value).is_file():
        raise argparse.ArgumentTypeError(f"{value!r}: no such file")
    return remote or value


def launcher_readable_folder(value: str) -> str:
    """A folder the launcher reads files from before submitting: local (must exist), gs:// or a
    URL prefix."""
    remote = _remote(value)
    if remote is None and not pathlib.Path(value).is_dir():
        raise argparse.ArgumentTypeError(f"{value!r}: no such folder")
    return remote or value


def positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an integer") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r} must be at least 1")
    return number
