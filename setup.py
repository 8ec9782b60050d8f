"""Installs the project's code (text, pipelines, tfds_c4, model); what else it installs depends on
the use, named by an extra over the pins of requirements.txt (deploy/requirements.py says which):

    pip install .[pipeline]   # a Dataflow worker of the C4 job: Beam, no TensorFlow or torch
    pip install .[tfds]       # `tfds build t5_c4` with Beam: the pipeline, TensorFlow and TFDS
    pip install .[model]      # training (a TPU host)
    pip install .[export]     # training plus the Hugging Face export (torch, transformers)

`make install` installs every pin for development. Dataflow runs `python setup.py sdist` on the
launching machine (--setup_file) and pip-installs the result on every worker; deploy/Dockerfile
and deploy/tpu/ install it with the extra their job needs.
"""
import pathlib
import sys

import setuptools

# deploy.requirements is the single reader of requirements.txt; the sdist carries both files
# (MANIFEST.in), so this import also works when a worker installs the sdist.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from deploy.requirements import BASE, PACKAGES, extras_require, pins_of  # noqa: E402

setuptools.setup(
    name="t5-c4",
    version="0.1.0",
    description="C4 corpus pipeline (Apache Beam) and T5 models (Mesh TensorFlow)",
    # 3.10: the TensorFlow 2.15 TPU VM images run Ubuntu 22.04's Python 3.10.
    python_requires=">=3.10",
    packages=setuptools.find_packages(
        include=[pattern for package in PACKAGES for pattern in (package, f"{package}.*")]),
    package_data={"model": ["gin/*.gin", "gin/**/*.gin"]},
    install_requires=pins_of(BASE),
    extras_require=extras_require(),
)
