"""The WET input of a job, planned at launch and listed on the workers.

Inputs are WET files, globs and Common Crawl manifests (`wet.paths.gz`). A file or glob is
resolved at launch and its paths go into the job; a manifest is read at launch only to count
its files (and to digest the whole input list for run_config.json), and its paths are listed
again by the workers. So the job holds one entry per manifest, not 56,000 paths per dump: mC4's
86 dumps, about 4.8 million files, keep the job graph small (Dataflow refuses a job file over
10 MB). Every file keeps its index in the whole input list, which the released rules' "first
seen" reads (Page.input_position), whoever lists it.
"""
import dataclasses
import hashlib
import os
from typing import Iterator, List, Optional, Sequence, Tuple

from pipelines.readers import common_crawl, files

MANIFEST_SUFFIXES = (".paths.gz", ".paths")
# An input that is not local counts as a full-size gzipped WET file in the memory estimate
# (Common Crawl's hold about 40,000 pages; bench/bench_scale.py's 40,000-page files have 66 MB).


def is_manifest(path: str) -> bool:
    return path.endswith(MANIFEST_SUFFIXES)


def manifest_paths(manifest: str, base_url: str) -> Iterator[str]:
    """The WET files a manifest lists, in order, relative ones under `base_url`."""
    for listed in files.read_all(manifest).decode("utf-8").split():
        yield listed if "://" in listed else base_url.rstrip("/") + "/" + listed


@dataclasses.dataclass(frozen=True)
class WetSource:
    """One part of the input list: named paths, or the first `count` files of a manifest."""
    first_index: int  # The index of its first file in the whole input list.
    count: int
    paths: Tuple[str, ...] = ()
    manifest: Optional[str] = None
    base_url: str = common_crawl.BASE_URL

    def indexed_paths(self) -> Iterator[Tuple[int, str]]:
        """(index in the input list, path) of each of its files: the manifest is read again."""
        listed = (manifest_paths(self.manifest, self.base_url) if self.manifest
                  else iter(self.paths))
        for offset, path in zip(range(self.count), listed):
            yield self.first_index + offset, path


@dataclasses.dataclass(frozen=True)
class InputPlan:
    """The whole input list as the job reads it, and what run_config.json records of it."""
    sources: Tuple[WetSource, ...]
    files: int
    first: Optional[str]
    last: Optional[str]
    sha256: str  # Of the paths joined by newlines, each followed by one (provenance.py).
    local_bytes: int  # The named local files' sizes (manifests' files count as remote).
    remote_files: int

    def estimated_bytes(self) -> int:
        """The gzipped input's bytes as the memory estimate counts them."""
        return self.local_bytes + self.remote_files * common_crawl.REMOTE_WET_FILE_BYTES


def plan_inputs(inputs: Sequence[str], max_files: Optional[int], base_url: str) -> InputPlan:
    """The plan of the inputs, at most `max_files` files; a files.InputError if an input names
    nothing or a manifest cannot be read."""
    sources: List[WetSource] = []
    digest = hashlib.sha256()
    first = last = None
    total = local_bytes = remote_files = 0

    def take(path: str) -> None:
        nonlocal first, last, total
        digest.update((path + "\n").encode("utf-8"))
        first = first or path
        last = path
        total += 1

    for pattern in inputs:
        named: List[str] = []
        for path in files.expand(pattern):
            if max_files is not None and total >= max_files:
                break
            if is_manifest(path):
                if named:
                    sources.append(WetSource(total - len(named), len(named), tuple(named)))
                    named = []
                start = total
                for listed in manifest_paths(path, base_url):
                    if max_files is not None and total >= max_files:
                        break
                    take(listed)
                    remote_files += 1
                sources.append(WetSource(start, total - start, manifest=path, base_url=base_url))
            else:
                take(path)
                named.append(path)
                if "://" in path:
                    remote_files += 1
                else:
                    local_bytes += os.path.getsize(path)
        if named:
            sources.append(WetSource(total - len(named), len(named), tuple(named)))
    return InputPlan(tuple(sources), total, first, last, digest.hexdigest(), local_bytes,
                     remote_files)


def is_known_corrupt(path: str) -> bool:
    """Whether `path` is a Common Crawl file the public C4 code skips as corrupt."""
    return path.endswith(common_crawl.KNOWN_CORRUPT_WET_FILES)
