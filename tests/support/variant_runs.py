"""The command-line arguments of a C4 variant on the shared samples."""
import pathlib
from typing import Optional


def variant_args(shared_data: pathlib.Path, variant: str, rules: Optional[str] = None) -> list:
    wet = sorted(str(path) for path in (shared_data / "wet").glob("*/*"))
    args = ["--variant", variant, "--input", *wet] + (["--rules", rules] if rules else [])
    if variant == "multilingual":
        return args + ["--badwords_dir", str(shared_data / "badwords")]
    args += ["--badwords", str(shared_data / "badwords/en")]
    if variant == "realnewslike":
        args += ["--realnews_domains",
                 str(shared_data / "realnews/domain_to_allowed_subdomains.json")]
    if variant == "webtextlike":
        args += ["--webtext_urls", str(shared_data / "openwebtext_urls/lsb-webtext/*.gz")]
    return args
