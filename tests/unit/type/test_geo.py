"""GEO commands, differentially against redis-server 7.0 (RESP2 and RESP3), byte for byte.

Searches without ASC/DESC reply in the order the geohash cells are walked, so comparing whole
replies checks the cell choice (steps, neighbours, the cells left out) as well as the distances
and their formatting.  The random part places points around centres chosen to hit the hard
places (the antimeridian, the latitude limits, the poles' wider cells) and searches them with
every option.
"""

from __future__ import annotations

import random

import pytest

SICILY = ["13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"]


def test_add_pos_dist_hash(diff):
    diff("GEOADD", "Sicily", *SICILY)
    for unit in ([], ["m"], ["km"], ["mi"], ["ft"], ["KM"], ["xx"]):
        diff("GEODIST", "Sicily", "Palermo", "Catania", *unit)
    diff("GEODIST", "Sicily", "Palermo", "nosuch")
    diff("GEODIST", "nokey", "a", "b")
    diff("GEODIST", "Sicily", "a", "b", "c", "d")
    diff("GEOPOS", "Sicily", "Palermo", "Catania", "nosuch")
    diff("GEOPOS", "nokey", "a")
    diff("GEOHASH", "Sicily", "Palermo", "Catania", "nosuch")
    diff("GEOHASH", "nokey", "a")
    diff("ZRANGE", "Sicily", "0", "-1", "WITHSCORES")
    for args in (["200", "100", "x"], ["-180", "-85.05112878", "edge"], ["180", "85.05112878", "edge2"],
                 ["180.0000001", "0", "x"], ["0", "85.06", "x"], ["abc", "1", "x"], ["1", "nan", "x"],
                 ["NX", "XX", "1", "2", "x"], ["1", "2"], ["1", "2", "x", "3"], ["CH", "13.361389", "38.115556",
                 "Palermo", "1", "1", "new"], ["XX", "CH", "2", "2", "new", "3", "3", "other"],
                 ["NX", "0", "0", "new", "4", "4", "n2"], ["GT", "1", "1", "x"], ["ch", "nx", "5", "5", "n3"]):
        diff("GEOADD", "Sicily", *args)
    diff("ZRANGE", "Sicily", "0", "-1", "WITHSCORES")
    diff("GEOPOS", "Sicily", "edge", "edge2", "new", "n2")
    diff("GEOHASH", "Sicily", "edge", "edge2", "new")
    diff("SET", "str", "x")
    for args in (["GEOADD", "str", "1", "1", "x"], ["GEOPOS", "str", "x"], ["GEODIST", "str", "a", "b"],
                 ["GEOHASH", "str", "x"], ["GEOSEARCH", "str", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"]):
        diff(*args)


SEARCH_ERRORS = [
    ["GEOSEARCH", "Sicily", "BYRADIUS", "300", "km"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "km"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "BYBOX", "1", "1", "km"],
    ["GEOSEARCH", "Sicily", "FROMMEMBER", "nosuch", "BYRADIUS", "300", "km"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "300", "km", "COUNT", "0"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "300", "km", "COUNT", "x"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "300", "km", "ANY"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "-1", "km"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "x", "km"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "parsec"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "-1", "1", "km"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "x", "1", "km"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "1", "y", "km"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "200", "37", "BYRADIUS", "1", "km"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "300", "km", "STORE", "x"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "300", "km", "STOREDIST"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "300"],
    ["GEOSEARCHSTORE", "d", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "300", "km", "WITHDIST"],
    ["GEORADIUS", "Sicily", "15", "37", "300", "km", "WITHDIST", "STORE", "x"],
    ["GEORADIUS", "Sicily", "15", "37", "300", "km", "STORE"],
    ["GEORADIUS_RO", "Sicily", "15", "37", "300", "km", "STORE", "x"],
    ["GEORADIUS", "Sicily", "15", "37", "300", "km", "FROMLONLAT", "1", "1"],
    ["GEORADIUSBYMEMBER", "Sicily", "nosuch", "300", "km"],
    ["GEORADIUSBYMEMBER", "nokey", "nosuch", "x", "y"],
    ["GEORADIUS", "nokey", "15", "37", "300", "km"],
    ["GEORADIUS", "Sicily", "15", "37", "300", "km", "COUNT", "1", "ANY", "DESC", "WITHHASH"],
]


@pytest.mark.parametrize("args", SEARCH_ERRORS, ids=lambda a: " ".join(a[:1] + a[3:]))
def test_search_options_and_errors(diff, args):
    diff("GEOADD", "Sicily", *SICILY)
    diff(*args)


def test_store(diff):
    diff("GEOADD", "Sicily", *SICILY)
    for args in (["GEOSEARCHSTORE", "d", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "300", "km"],
                 ["GEOSEARCHSTORE", "d", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "300", "km", "STOREDIST"],
                 ["GEOSEARCHSTORE", "d", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "400", "400", "km", "COUNT",
                  "1", "DESC"],
                 ["GEORADIUS", "Sicily", "15", "37", "300", "km", "STORE", "d"],
                 ["GEORADIUS", "Sicily", "15", "37", "300", "mi", "STOREDIST", "d"],
                 ["GEORADIUSBYMEMBER", "Sicily", "Palermo", "300", "km", "STORE", "d", "COUNT", "1"],
                 ["GEOSEARCHSTORE", "d", "Sicily", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"],
                 ["GEOSEARCHSTORE", "d", "nokey", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"]):
        diff("SET", "d", "previous", "EX", "100")
        diff(*args)
        diff("ZRANGE", "d", "0", "-1", "WITHSCORES")
        diff("TTL", "d")
        diff("OBJECT", "ENCODING", "d")


def _random_searches(diff, rnd: random.Random) -> None:
    cx = rnd.choice([rnd.uniform(-180, 180), 179.9, -179.9, 0.0])
    cy = rnd.choice([rnd.uniform(-85, 85), 84.9, -84.9, 70.0, -70.0, 0.0])
    spread = rnd.choice([0.01, 0.5, 5, 50, 200])
    n = rnd.choice([5, 50, 200])
    args = []
    for i in range(n):
        x = max(-180.0, min(180.0, cx + rnd.uniform(-spread, spread)))
        y = max(-85.05112878, min(85.05112878, cy + rnd.uniform(-spread, spread)))
        args += ["%.6f" % x, "%.6f" % y, "m%d" % i]
    diff("GEOADD", "k", *args)
    for _ in range(8):
        unit = rnd.choice(["m", "km", "mi", "ft"])
        conv = {"m": 1, "km": 1000, "mi": 1609.34, "ft": 0.3048}[unit]
        r = rnd.choice([0, 1, 100, 10_000, 1_000_000, 5_000_000]) / conv * rnd.uniform(0.5, 2)
        opts = []
        if rnd.random() < 0.5:
            opts.append(rnd.choice(["ASC", "DESC"]))
        if rnd.random() < 0.4:
            opts += ["COUNT", str(rnd.randint(1, 10))]
            if rnd.random() < 0.3:
                opts.append("ANY")
        fx = max(-180.0, min(180.0, cx + rnd.uniform(-spread, spread)))
        fy = max(-85.0, min(85.0, cy + rnd.uniform(-spread, spread)))
        frm = (["FROMLONLAT", "%.6f" % fx, "%.6f" % fy] if rnd.random() < 0.5
               else ["FROMMEMBER", "m%d" % rnd.randrange(n)])
        by = (["BYRADIUS", "%.3f" % r, unit] if rnd.random() < 0.5
              else ["BYBOX", "%.3f" % (r * rnd.uniform(0.5, 2)), "%.3f" % (r * rnd.uniform(0.5, 2)), unit])
        withs = [w for w in ("WITHDIST", "WITHCOORD", "WITHHASH") if rnd.random() < 0.4]
        diff("GEOSEARCH", "k", *frm, *by, *opts, *withs)
        diff("GEORADIUS", "k", "%.6f" % fx, "%.6f" % fy, "%.3f" % r, unit, *opts, *withs)
        diff("GEOSEARCHSTORE", "d", "k", *frm, *by, *opts, *(["STOREDIST"] if rnd.random() < 0.5 else []))
        diff("ZRANGE", "d", "0", "-1", "WITHSCORES")
        diff("GEODIST", "k", "m0", "m%d" % rnd.randrange(n), unit)
        diff("GEOPOS", "k", "m%d" % rnd.randrange(n))
        diff("GEOHASH", "k", "m%d" % rnd.randrange(n))


@pytest.mark.parametrize("seed", range(12))
def test_random_searches(diff, seed):
    _random_searches(diff, random.Random(seed))


def test_grid_searches_with_ties(diff):
    """Two members at each point of a grid: every distance is held twice, so a sorted search with
    COUNT cuts through ties, and which of two tied members comes first is the partial quicksort's
    choice; in a listpack (128 members) and a skiplist (800)."""
    for key, side in (("small", 8), ("big", 20)):
        diff("GEOADD", key, *(x for i in range(side * side) for name in ("p", "q")
                              for x in ("%.4f" % (14 + (i % side - side // 2) * 0.01),
                                        "%.4f" % (37.5 + (i // side - side // 2) * 0.01), "%s%d" % (name, i))))
        diff("OBJECT", "ENCODING", key)
        for by in (["BYRADIUS", "3", "km"], ["BYRADIUS", "30", "km"], ["BYBOX", "4", "4", "km"]):
            for opts in (["ASC", "COUNT", "1"], ["ASC", "COUNT", "5"], ["DESC", "COUNT", "7"], ["COUNT", "12"],
                         ["COUNT", "3", "ANY"], ["DESC"], []):
                diff("GEOSEARCH", key, "FROMLONLAT", "14.003", "37.501", *by, *opts, "WITHDIST")
            diff("GEOSEARCH", key, "FROMMEMBER", "p%d" % (side + 1), *by, "ASC", "COUNT", "4")
