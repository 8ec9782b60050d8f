"""GPT-1 (Radford et al. 2018): a decoder-only Transformer pre-trained by language modelling and
fine-tuned with task heads on its input transformations. See README.md here."""
