"""The external lists the variants use, pinned by URL and checksum, and their provenance.

The one owner of the pins: the CLI's defaults (pipelines.c4) and the TFDS builder's downloads
(tfds_c4) come from here. A list read from a pinned URL must have the pinned sha256 (a changed
or truncated download is an error, not a silently different corpus); a list read from anywhere
else is hashed and the hash recorded in run_config.json, not checked.
"""
import dataclasses
import hashlib
from typing import Dict, Tuple

from pipelines.readers import files

_HASH_BLOCK = 1 << 20


@dataclasses.dataclass(frozen=True)
class PinnedList:
    url: str
    size: int  # Bytes, as stored.
    sha256: str


_LDNOOBW = ("https://raw.githubusercontent.com/LDNOOBW/"
            "List-of-Dirty-Naughty-Obscene-and-Otherwise-Bad-Words/")
# The LDNOOBW English list and Grover's RealNews domains at the commits the public TFDS C4 pins.
LDNOOBW_EN = PinnedList(
    url=_LDNOOBW + "25e679f03d96baa721cde20db9944649e8d0a844/en",
    size=3566,
    sha256="a506cbcf8a31935b122299f3bb1d32be6db3d0ad498765d28f365dfc4f4d7b8c")
REALNEWS_DOMAINS = PinnedList(
    url="https://raw.githubusercontent.com/rowanz/grover/"
        "38f7184bd87237ae2d3bc330b99f1e2e246f6d51/realnews/domain_to_allowed_subdomains.json",
    size=141626,
    sha256="75681899371acbf57b502ca8be48b3ca2d3339a276c396f3001b6a14da691ff3")
# mC4's lists (pipelines/filters/mc4.py BADWORDS_FILES): every language at the commit the public
# TFDS C4 pins for them, but English, which stays at the English C4's commit (as TFDS keeps it).
_LDNOOBW_MC4_COMMIT = "5faf2ba42d7b1c0977169ec3611df25a3c08eb13"
_LDNOOBW_MC4_FILES = {  # File name -> (bytes, sha256) at that commit.
    "ar": (331, "23dbd9c55257bf2a4965f46664dc7eac04b61ff4eb3571e41f7e964c7c3ed96b"),
    "cs": (302, "90706df86709bade1ca39cf9f9d9836409c674fc3bffcb7525bdd20e59b596bc"),
    "da": (153, "ddb46ab67e955d1a5f49c89c18497d23c3d8d6d2522f3740a5d7583f90e434c6"),
    "de": (534, "ebe44d7772897390e27f7bec412fdcdf0efc294e4db157f8487c4cd8d4fabd55"),
    "eo": (278, "0374d76be1dbc77c61362d6e51305e1e4c546b7f734eb96e0bdbad7fd2a6ace1"),
    "es": (617, "073334261cc2e7c08339faefd2f19f9623e8240a0ac18fe2a26c368b897496ce"),
    "fa": (452, "85828629b90fd18a3f6f6efb1934c1294103c33d1c28c0653970adfa179169e9"),
    "fi": (1219, "3e0b35b2533ba22fb526d882bea250ddfad907ee7548aacbe15db17e21034c62"),
    "fil": (105, "fb4b43691b1249fee2eca1e66795daedda8e7366d42abcde6553dce611d23d99"),
    "fr": (793, "79763a705e08256b393952852bb63aa903f4485e0ef02f70735f5e50efff213c"),
    "fr-CA-u-sd-caqc": (47, "4a0ef5d55921c91df26676b214d3ac648deef11cfbc4587159ee9aab4085b09a"),
    "hi": (1123, "83636e9b7a5260451e09e9e471f81dad9f082d107a82da77047e57d7856ed0cc"),
    "hu": (780, "a6943a971496f16e9a9d59ba6fde146d229699600e9636828d8d34ed9160aff5"),
    "it": (1451, "d413f41018d58aa79d2c4809d0161f29ffd5652c4dc34c5b7b9ade680ee5599a"),
    "ja": (2339, "f83c4d0843ea6474c17bf171edd72b616b3af403f8613f2cde1bd841faf6f316"),
    "kab": (196, "df7be2ce4a0c80ee717cd7134c90645a8a0f0c0c458a61f927934dbd50eac96d"),
    "ko": (588, "0dd4b74ffea6e3bb35d658e6d8262b53ee99281eaa48ecb515a2065bfcc7f69d"),
    "nl": (1909, "8298ba0cdc3ca9a1989c349b8ad0148e4504c2804f2f2fb6c2f52bfb39c5ae71"),
    "no": (319, "e55b46bcec1ea288256924523a997d8d99e124c9aa3e61cbbbfaeca294f745b4"),
    "pl": (483, "98cf824e3692255645c5a72d5913f26fd4f20930f725683b4c96bb312ca5d9b3"),
    "pt": (629, "05ef524b0bb7f83f87257f6ec4dabf70e16b8bb6930f769fb93deaf608ff196d"),
    "ru": (2223, "2598adabd2b761733d72a68d8ee4fcc1d2c38f2f85b6ff489985c6ce1d93bf75"),
    "sv": (327, "77f3f99a89bd3b2bde6a654741bacfcb3acca3f5c804af4d8d3fea11e09ea562"),
    "th": (493, "835036d87a3a67738e388cd6de92e3c995c186a1427b4e830fe7b85483c257e7"),
    "tlh": (25, "3c19004e338c0d91d19ba419185279145848b75b2327aa0e3a752c604ad9f59d"),
    "tr": (1509, "6c7ae03baee0f3fdc22eed169030567669005dad9a1923e0b571c4bd4f2f2ab5"),
    "zh": (2675, "a1d9aa037c8b039ef3b40148b3364ce2ca62ce4a955b7082a16ad99f6cbd1bc0"),
}
LDNOOBW_MC4: Dict[str, PinnedList] = {
    "en": LDNOOBW_EN,
    **{name: PinnedList(_LDNOOBW + f"{_LDNOOBW_MC4_COMMIT}/{name}", size, sha256)
       for name, (size, sha256) in _LDNOOBW_MC4_FILES.items()}}
PINNED_LISTS: Dict[str, PinnedList] = {
    pinned.url: pinned for pinned in (LDNOOBW_EN, REALNEWS_DOMAINS, *LDNOOBW_MC4.values())}


class ChecksumMismatch(files.InputError):
    """A list read from a pinned URL whose bytes are not the pinned ones."""


def read_list(path: str) -> Tuple[bytes, str]:
    """The decompressed content of a list and the sha256 of its stored bytes.

    Raises ChecksumMismatch if `path` is a pinned URL and the bytes differ from the pin.
    """
    stored = files.read_stored(path)
    digest = hashlib.sha256(stored).hexdigest()
    pinned = PINNED_LISTS.get(path)
    if pinned is not None and digest != pinned.sha256:
        raise ChecksumMismatch(
            f"{path} has sha256 {digest} ({len(stored):,} bytes), but the pinned list has "
            f"{pinned.sha256} ({pinned.size:,} bytes): the file there changed or the download "
            "is incomplete. Pass a copy you have checked as a local path instead.")
    return files.decompress(path, stored), digest


def file_sha256(path: str) -> str:
    """The sha256 of a file's stored bytes, read in blocks (URL lists can be large)."""
    digest = hashlib.sha256()
    try:
        with files.open_raw(path) as stream:
            for block in iter(lambda: stream.read(_HASH_BLOCK), b""):
                digest.update(block)
    except OSError as error:
        raise files.InputError(f"cannot read {path}: {error}") from None
    return digest.hexdigest()
