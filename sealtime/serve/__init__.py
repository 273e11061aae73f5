"""The live service (``sealtime serve``)."""
