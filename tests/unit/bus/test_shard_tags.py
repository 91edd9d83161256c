"""The shards' hash tags spread over the masters of an evenly split Redis Cluster."""

from __future__ import annotations

import math

import pytest
from redis.crc import key_slot

from bus import keys

SLOTS = 16_384


def split(masters: int) -> list[int]:
    """The first slot of each master after ``redis-cli --cluster create`` (its rounding)."""
    per, firsts, first, cursor = SLOTS / masters, [], 0, 0.0
    for _ in range(masters):
        firsts.append(first)
        first = math.floor(cursor + per - 1 + 0.5) + 1
        cursor += per
    return firsts


def master_of(slot: int, firsts: list[int]) -> int:
    return max(i for i, first in enumerate(firsts) if first <= slot)


@pytest.mark.parametrize("masters", range(1, len(keys.SHARD_TAGS) + 1))
def test_the_first_m_shards_fall_one_on_each_of_m_masters(masters: int) -> None:
    firsts = split(masters)
    owners = [master_of(key_slot(keys.tag(k).encode()), firsts) for k in range(masters)]
    assert sorted(owners) == list(range(masters))
    for shards in range(masters, len(keys.SHARD_TAGS) + 1):  # more shards: every master
        owned = {master_of(key_slot(keys.tag(k).encode()), firsts) for k in range(shards)}
        assert owned == set(range(masters))


def test_tags_are_distinct_for_every_shard_count() -> None:
    tags = [keys.tag(k) for k in range(1024)]
    assert len(set(tags)) == 1024
    assert keys.tag(0) == "{0}"  # one shard (single Redis): the keys it always had
