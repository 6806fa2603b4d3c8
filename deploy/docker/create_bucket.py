#!/opt/strata/bin/python
"""Create the S3 bucket Strata stores segments in, waiting for the S3 server to come up.

Usage: ``strata-create-bucket BUCKET``. The endpoint and credentials come from
the same ``AWS_*`` variables the roles read (``AWS_ENDPOINT_URL``,
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``). An existing
bucket is fine. Exits 1 if the server did not answer within
``STRATA_CREATE_BUCKET_TIMEOUT`` seconds (default 120).

The compose file runs it once before the roles start, and the Helm chart as a
post-install/post-upgrade Job when the chart deploys MinIO.
"""

from __future__ import annotations

import os
import sys
import time
from urllib.parse import urlsplit

import pyarrow.fs as pafs


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not argv[1]:
        print("usage: strata-create-bucket BUCKET", file=sys.stderr)
        return 2
    bucket = argv[1]
    options: dict[str, object] = {"allow_bucket_creation": True}
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        parts = urlsplit(endpoint)
        options["scheme"] = parts.scheme or "https"
        options["endpoint_override"] = parts.netloc or parts.path
    if os.environ.get("AWS_ACCESS_KEY_ID"):
        options["access_key"] = os.environ["AWS_ACCESS_KEY_ID"]
        options["secret_key"] = os.environ.get("AWS_SECRET_ACCESS_KEY", "")
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        options["region"] = region
    deadline = time.monotonic() + float(os.environ.get("STRATA_CREATE_BUCKET_TIMEOUT", "120"))
    while True:
        try:
            s3 = pafs.S3FileSystem(**options)
            if s3.get_file_info(bucket).type == pafs.FileType.NotFound:
                s3.create_dir(bucket)
                print(f"created bucket {bucket}", flush=True)
            else:
                print(f"bucket {bucket} exists", flush=True)
            return 0
        except OSError as err:
            if time.monotonic() > deadline:
                print(f"cannot create bucket {bucket}: {err}", file=sys.stderr)
                return 1
            print(f"S3 not ready ({err}), retrying", file=sys.stderr, flush=True)
            time.sleep(2)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
