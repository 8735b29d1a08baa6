"""ParsedMembers: a collection's members decoded once per process, listed afresh each read."""

from __future__ import annotations

import orjson

from share.store.collections.index import Member
from share.store.collections.parsed import ParsedMembers


def stored(n: int, pod: str = "a") -> dict[bytes, bytes]:
    members = [Member(f"P{i:015d}", 100.0 + i, {"pod": pod}, "cpu", 1.0) for i in range(n)]
    return {m.key.encode(): m.to_json() for m in members}


class Store:
    """What an index holds, and the keys it was asked to fetch."""

    def __init__(self, data: dict[bytes, bytes]) -> None:
        self.data, self.fetched = data, list[bytes]()

    def fetch(self, keys: list[bytes]) -> list[bytes | None]:
        self.fetched.extend(keys)
        return [self.data.get(k) for k in keys]


def test_members_are_decoded_once_and_listed_as_the_keys_say() -> None:
    store, parsed = Store(stored(5)), ParsedMembers()
    keys = sorted(store.data)
    first = parsed.members("c1", keys, store.fetch, whole=True)
    assert [m.key.encode() for m in first] == keys and store.fetched == keys
    store.fetched.clear()
    again = parsed.members("c1", keys[1:3], store.fetch)
    assert again == first[1:3] and store.fetched == []  # nothing decoded again
    more = stored(7)
    store.data.update(more)
    parsed.members("c1", sorted(more), store.fetch, whole=True)
    assert store.fetched == sorted(more)[5:]  # only the two new ones
    # A key listed but gone when fetched (removed meanwhile) is left out.
    assert parsed.members("c2", [b"gone"], store.fetch) == []


def test_a_whole_listing_forgets_removed_members_and_the_cap_drops_the_least_recent() -> None:
    store, parsed = Store({**stored(4, "a"), **stored(4, "b")}), ParsedMembers(most=10)
    a = sorted(k for k in store.data if b'"a"' in k)
    b = sorted(k for k in store.data if b'"b"' in k)
    parsed.members("ca", a, store.fetch, whole=True)
    parsed.members("ca", a[:2], store.fetch, whole=True)  # two removed
    assert parsed._count == 2
    parsed.members("cb", b, store.fetch)
    parsed.members("ca", a, store.fetch)  # ca read last: cb is the least recent
    assert parsed._count == 8
    store.fetched.clear()
    parsed.members("cc", sorted(stored(6, "c")), Store(stored(6, "c")).fetch)
    assert set(parsed._by_cid) == {"ca", "cc"} and parsed._count == 10
    parsed.forget("ca")
    assert set(parsed._by_cid) == {"cc"} and parsed._count == 6


def test_a_members_json_does_not_hold_the_key_it_made_once() -> None:
    m = Member("P", 1.5, {"pod": "a"}, "cpu", 1.0)
    assert m.key == '0000000000001.500000|P|{"pod":"a"}'
    assert "_key" not in orjson.loads(m.to_json()) and Member.from_json(m.to_json()) == m
