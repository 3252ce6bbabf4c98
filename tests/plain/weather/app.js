// The weather world in JavaScript, built by jco or componentize-js with
// their defaults: no toolhost contract, no helper.
export function getWeather(city) {
  if (city === "Paris") return "21";
  throw "unknown city " + city;
}

export function distance(a, b, unit) {
  const d = Math.hypot(a.lat - b.lat, a.lon - b.lon);
  return unit === "m" ? d * 1000 : d;
}

export const convert = {
  cToF(c) {
    return (c * 9) / 5 + 32;
  },
};
