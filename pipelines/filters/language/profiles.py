"""langdetect's 55 profiles, in name order.

The library's `load_profile` numbers languages in os.listdir order, which varies between file
systems, and the order changes the last bits of its floating-point sums: every factory here,
ours and the library's alike, loads the profile files in name order instead.
"""
import functools
import pathlib
from typing import Tuple

from langdetect import detector_factory


@functools.lru_cache(maxsize=None)
def profile_jsons() -> Tuple[str, ...]:
    """The JSON text of each profile file langdetect ships, in file-name order."""
    directory = pathlib.Path(detector_factory.PROFILES_DIRECTORY)
    return tuple(path.read_text(encoding="utf-8") for path in sorted(directory.iterdir())
                 if path.is_file() and not path.name.startswith("."))


def sorted_profiles_factory(factory_class=detector_factory.DetectorFactory):
    """A DetectorFactory (langdetect's by default, or langdetect-rs's) over the profiles in
    name order, unseeded."""
    factory = factory_class()
    factory.load_json_profile(list(profile_jsons()))
    return factory
