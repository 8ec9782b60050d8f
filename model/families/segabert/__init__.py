"""SegaBERT (Bai et al. 2021): BERT with segment-aware position embeddings (token in sentence,
sentence in paragraph, paragraph in document), built on model/families/bert. See README.md here."""
