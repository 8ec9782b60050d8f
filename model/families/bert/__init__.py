"""BERT (Devlin et al. 2019): a bidirectional encoder pre-trained with masked LM and next-sentence
prediction on WordPiece, fine-tuned with classification, regression, multiple-choice and span
heads. See README.md here."""
