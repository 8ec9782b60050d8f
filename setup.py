"""Installs the project's code (text, pipelines, tfds_c4, model) with its pinned dependencies.

Dataflow runs `python setup.py sdist` on the launching machine (--setup_file) and pip-installs
the result on every worker; deploy/Dockerfile and deploy/tpu.py install it the same way.
"""
import pathlib
import sys

import setuptools

# deploy.requirements is the single reader of requirements.txt; the sdist carries both files
# (MANIFEST.in), so this import also works when a worker installs the sdist.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from deploy.requirements import pinned_requirements  # noqa: E402

setuptools.setup(
    name="t5-c4",
    version="0.1.0",
    description="C4 corpus pipeline (Apache Beam) and T5 models (Mesh TensorFlow)",
    # 3.10: the TensorFlow 2.15 TPU VM images run Ubuntu 22.04's Python 3.10.
    python_requires=">=3.10",
    packages=setuptools.find_packages(include=["text", "text.*", "pipelines", "pipelines.*", "tfds_c4",
                                               "tfds_c4.*", "model", "model.*"]),
    package_data={"model": ["gin/*.gin", "gin/**/*.gin"]},
    install_requires=pinned_requirements(),
)
