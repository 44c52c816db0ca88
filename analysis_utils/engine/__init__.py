"""The attention engine: model loading (``models``), batched extraction into a
content-addressed on-disk store (``attention``), token -> word conversion (``wordmaps``)."""
