"""Uploaded files: size-limited, kept in the server's own folder under a content hash.

The limits keep a stray upload from filling memory or disk; a file over its limit, or a form
without a file, is an `UploadError` whose message the page shows beside the field.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from starlette.datastructures import UploadFile

MiB = 1024 * 1024
LIMITS = {  # bytes per kind of upload
    "config": 1 * MiB,  # a Hugging Face config.json is a few kB
    "usecase": 1 * MiB,
    "trace": 64 * MiB,  # the Azure conversation trace is 1.6 MB, Mooncake's ~ 10 MB
    "measured": 64 * MiB,  # a bench result with records, or an AIPerf JSONL export
}
WHAT = {
    "config": "config.json",
    "usecase": "use-case YAML",
    "trace": "trace",
    "measured": "result file",
}
CHUNK = 1 * MiB


class UploadError(ValueError):
    """An upload that cannot be used (the message names the file and the rule)."""


class Uploads:
    """Saves uploads under `folder` (created if missing)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self.max_bytes = max(LIMITS.values())

    async def save(self, upload: object, kind: str) -> Path:
        """The saved file of an upload of `kind`, named by its content's hash."""
        if not isinstance(upload, UploadFile) or not upload.filename:
            raise UploadError(f"choose a {WHAT[kind]} file to upload")
        limit = LIMITS[kind]
        digest = hashlib.sha256()
        chunks = []
        size = 0
        while chunk := await upload.read(CHUNK):
            size += len(chunk)
            if size > limit:
                raise UploadError(
                    f"{upload.filename} is over the {limit // MiB} MiB limit for a {WHAT[kind]}"
                )
            digest.update(chunk)
            chunks.append(chunk)
        if size == 0:
            raise UploadError(f"{upload.filename} is empty")
        suffixes = "".join(Path(upload.filename).suffixes[-2:])[:16]
        suffix = "".join(c for c in suffixes if c.isalnum() or c == ".")  # no path parts
        path = self.folder / f"{kind}-{digest.hexdigest()[:16]}{suffix}"
        path.write_bytes(b"".join(chunks))
        return path
