"""The single-process channel layer alone: one group_send to 50 members, 4,000 times, each member reading.

    python bench/channel_layer.py [module:Class ...]   (default: kseek_site.layers:LocalChannelLayer and
                                                        channels.layers:InMemoryChannelLayer)

Prints deliveries per second for each layer (docs/benchmarks.md, "Events", point 3). The layer before issue 18
(`old:LocalChannelLayer` there) is not in the tree; put it on the path first:

    mkdir -p /tmp/old-layer && git show 66c3c15^:kseek_site/layers.py > /tmp/old-layer/old.py
    PYTHONPATH=/tmp/old-layer python bench/channel_layer.py old:LocalChannelLayer kseek_site.layers:LocalChannelLayer
"""

import argparse
import asyncio
import importlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

MEMBERS, MESSAGES = 50, 4000


async def deliveries_per_s(layer_class) -> float:
    layer = layer_class(capacity=5000)
    members = [await layer.new_channel() for _ in range(MEMBERS)]
    for member in members:
        await layer.group_add("run-1", member)

    async def read(channel):
        for _ in range(MESSAGES):
            await layer.receive(channel)

    start = time.perf_counter()
    readers = [asyncio.create_task(read(m)) for m in members]
    for seq in range(MESSAGES):
        await layer.group_send("run-1", {"type": "step.stored", "run_id": 1, "seq": seq, "kind": "note"})
        if seq % 20 == 0:
            await asyncio.sleep(0)  # let the readers drain, as a server's event loop would
    await asyncio.gather(*readers)
    return MEMBERS * MESSAGES / (time.perf_counter() - start)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("layers", nargs="*", metavar="module:Class", help="the layers to time, in turn")
    names = parser.parse_args(argv).layers
    for name in names or ["kseek_site.layers:LocalChannelLayer", "channels.layers:InMemoryChannelLayer"]:
        module, _, cls = name.partition(":")
        rate = asyncio.run(deliveries_per_s(getattr(importlib.import_module(module), cls)))
        print(f"{name:45} {rate:>12,.0f} deliveries/s")


if __name__ == "__main__":
    main(sys.argv[1:])
