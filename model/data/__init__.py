"""Text to model features: SentencePiece vocabulary, pre-training objectives, feature converters
and the pre-training streams (the t5 library's data package and seqio's role)."""
