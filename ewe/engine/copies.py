"""What the batch operations copy of the KV cache and the working memory, counted (`ewe bench batch`)."""


class CacheCopies:
    """Bytes of KV cache the batch operations copy (`ewe bench batch` reports them), counted where
    the copy is made. `other_rows`: every copy of a row other than the one joining, leaving or
    written back, on either path: session.py's batches (a branch's candidates that stopped leave,
    the rows that stay are selected anew) and the slots' `grown` and `moved` below. `own_rows`: a
    joining row's own cache, copied into its slot (engine/slots.py). The slots' two copies of other rows, also counted on their own: `grown`, every
    row copied when the slot buffers are outgrown (rare: they double); `moved`, a row moved down
    into a slot left free that no joining row took (once, instead of attending over the hole at
    every step)."""

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.other_rows = self.own_rows = self.grown = self.moved = self.branched = 0


COPIES = CacheCopies()


def cache_bytes(cache) -> int:
    return sum(t.numel() * t.element_size() for layer in cache.layers for t in (layer.keys, layer.values))
