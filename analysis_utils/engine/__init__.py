"""The attention engine: model loading (``models``), batched extraction into a checksummed,
content-addressed on-disk store (``attention``; ``cache_check`` verifies it), token -> word
conversion (``wordmaps``), interventions on heads (``interventions``) and the weights
fingerprint that cache keys use (``fingerprint``)."""
