"""T5 (Raffel et al. 2020): the paper's encoder-decoder, decoder-only and prefix language model
families on Mesh TensorFlow's transformer layers, text-to-text fine-tuning and Hugging Face export.
See README.md here."""
