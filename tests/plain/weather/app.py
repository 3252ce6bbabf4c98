# The weather world in Python, built by componentize-py with its defaults:
# no toolhost contract, no SDK.
import math

import wit_world
from componentize_py_types import Err
from wit_world import exports


class WitWorld(wit_world.WitWorld):
    def get_weather(self, city: str) -> str:
        if city == "Paris":
            return "21"
        raise Err("unknown city " + city)

    def distance(self, a, b, unit):
        d = math.hypot(a.lat - b.lat, a.lon - b.lon)
        return d * 1000 if unit == "m" else d


class Convert(exports.Convert):
    def c_to_f(self, c: float) -> float:
        return c * 9 / 5 + 32
