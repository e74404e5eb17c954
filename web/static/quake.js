// Rendering helpers for the server browser: Quake colour codes, country
// flags, small SVG charts. Everything from the API is hostile input: it is
// only ever put in the page as text (textContent, attribute values set by
// setAttribute), never as HTML.

const SVG = "http://www.w3.org/2000/svg";

// el makes an element with attributes and children (strings become text).
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) e.append(c);
  return e;
}

function svg(tag, attrs = {}) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

// colourName renders a name with colour codes as coloured spans, as the
// games draw it and as the master strips them (package gametext): "^"
// followed by a letter or digit selects Quake III colour (code - '0') & 7
// (classes q0..q7); Quake 4's "^cRGB" (three digits 0-9) and DarkPlaces'
// "^xRGB" (three hex digits) give any colour; "^^" is a literal "^"; any
// other "^" is drawn. The API gives names already in Unicode as the game
// draws them (its font's glyphs for control bytes). The returned node
// holds only spans of text, so hostile names stay text.
export function colourName(name) {
  const out = document.createElement("span");
  out.className = "qname";
  const s = String(name ?? "");
  let cls = "q7", rgb = "", run = "";
  const flush = () => {
    if (run === "") return;
    const span = document.createElement("span");
    span.className = cls;
    if (rgb) span.style.color = rgb;
    span.textContent = run;
    out.append(span);
    run = "";
  };
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c !== "^" || i + 1 === s.length) { run += c; continue; }
    const next = s[i + 1], three = s.slice(i + 2, i + 5);
    if (next === "^") { run += "^"; i++; continue; }
    if (!/^[0-9A-Za-z]$/.test(next)) { run += c; continue; }
    flush();
    if ((next === "c" || next === "C") && /^[0-9]{3}$/.test(three)) {
      cls = "qrgb";
      rgb = "rgb(" + [...three].map(d => Math.round((d.charCodeAt(0) - 48) * 255 / 9)).join(",") + ")";
      i += 4;
    } else if ((next === "x" || next === "X") && /^[0-9a-fA-F]{3}$/.test(three)) {
      cls = "qrgb";
      rgb = "#" + three;
      i += 4;
    } else {
      cls = "q" + ((s.charCodeAt(i + 1) - 48) & 7);
      rgb = "";
      i++;
    }
  }
  flush();
  if (!out.hasChildNodes()) out.append(el("span", { class: "q7 unnamed", text: "(no name)" }));
  return out;
}

// plainName strips colour codes (as colourName reads them), for titles.
export function plainName(name) {
  return [...colourName(name).childNodes].map(n => n.classList?.contains("unnamed") ? "" : n.textContent).join("");
}

const displayNames = (() => {
  try { return new Intl.DisplayNames(["en"], { type: "region" }); } catch { return null; }
})();

// countryName is the English name of an ISO 3166 code, or the code.
export function countryName(cc) {
  if (!cc || cc === "--") return "unknown";
  try { return displayNames?.of(cc) ?? cc; } catch { return cc; }
}

// flag is a country as text: its two-letter code, "" for an unknown
// country. Flag emoji need a colour emoji font, which a stock desktop
// (Debian's, Windows') lacks: they show as empty boxes or letter pairs.
export function flag(cc) {
  return /^[A-Z]{2}$/.test(cc ?? "") ? cc : "";
}

// countryCell is the country's code in a badge, its name in the title.
export function countryCell(cc) {
  const known = /^[A-Z]{2}$/.test(cc ?? "");
  return el("span", { class: "country", title: countryName(cc) },
    el("span", { class: "cc", text: known ? cc : "–" }));
}

// The ISO 3166-1 alpha-2 codes a viewer can say they play from.
export const COUNTRIES = ("AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ " +
  "CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR " +
  "GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP " +
  "KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT " +
  "MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW " +
  "SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG " +
  "UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW").split(" ");

// sparkline draws recent player counts as bars scaled to max (the slots).
export function sparkline(values, max, label) {
  const n = 24, w = 72, h = 18, bw = w / n;
  const s = svg("svg", { viewBox: `0 0 ${w} ${h}`, width: w, height: h, class: "spark", role: "img" });
  const vals = Array.isArray(values) ? values.slice(-n) : [];
  const top = Math.max(1, max || 0, ...vals);
  const t = svg("title");
  t.textContent = label ?? (vals.length ? `recent players: ${vals.join(", ")}` : "no samples yet");
  s.append(t);
  s.append(svg("line", { x1: 0, y1: h - 0.5, x2: w, y2: h - 0.5, class: "base" }));
  vals.forEach((v, i) => {
    const bh = Math.max(v > 0 ? 1.5 : 0, (v / top) * (h - 1));
    const x = (n - vals.length + i) * bw;
    s.append(svg("rect", { x: x + 0.5, y: h - 0.5 - bh, width: Math.max(1, bw - 1), height: bh }));
  });
  return s;
}

// historyChart draws players over time (points {t, players}, each holding
// for resolution seconds, the last one until now) as an SVG step line with
// time and player axes.
export function historyChart(points, maxPlayers, resolution) {
  const W = 380, H = 150, L = 30, R = 8, T = 8, B = 24;
  const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "history", role: "img" });
  const pts = (Array.isArray(points) ? points : [])
    .map(p => ({ t: Date.parse(p.t), v: Number(p.players) }))
    .filter(p => Number.isFinite(p.t) && Number.isFinite(p.v))
    .sort((a, b) => a.t - b.t);
  const title = svg("title");
  s.append(title);
  if (pts.length === 0) {
    title.textContent = "no history yet";
    const tx = svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle", class: "none" });
    tx.textContent = "No history yet: it fills in as the master re-probes the server.";
    s.append(tx);
    return s;
  }
  const res = (resolution > 0 ? resolution : 300) * 1000, tl = pts[pts.length - 1].t;
  const t0 = pts[0].t, t1 = Math.max(tl + Math.min(res, Math.max(0, Date.now() - tl)), t0 + 60e3);
  const top = Math.max(1, maxPlayers || 0, ...pts.map(p => p.v));
  const x = t => L + ((t - t0) / (t1 - t0)) * (W - L - R);
  const y = v => T + (1 - v / top) * (H - T - B);
  const peak = Math.max(...pts.map(p => p.v));
  title.textContent = `players from ${new Date(t0).toLocaleString()} to ${new Date(t1).toLocaleString()}; peak ${peak}`;
  // Axes and grid.
  for (const v of [0, Math.round(top / 2), top]) {
    s.append(svg("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: "grid" }));
    const lab = svg("text", { x: L - 4, y: y(v) + 4, "text-anchor": "end" });
    lab.textContent = String(v);
    s.append(lab);
  }
  const span = t1 - t0;
  const fmt = span > 36 * 3600e3
    ? d => d.toLocaleDateString([], { weekday: "short", day: "numeric" })
    : span > 20 * 60e3
      ? d => d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
      : d => d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  for (let i = 0; i <= 3; i++) {
    const t = t0 + (span * i) / 3;
    const lab = svg("text", { x: x(t), y: H - 6, "text-anchor": i === 0 ? "start" : i === 3 ? "end" : "middle" });
    lab.textContent = fmt(new Date(t));
    s.append(lab);
  }
  // Step line: a count holds until the next sample.
  let d = `M${x(pts[0].t).toFixed(1)},${y(pts[0].v).toFixed(1)}`;
  for (let i = 1; i < pts.length; i++) {
    d += `H${x(pts[i].t).toFixed(1)}V${y(pts[i].v).toFixed(1)}`;
  }
  d += `H${x(t1).toFixed(1)}`;
  const area = d + `V${y(0).toFixed(1)}H${x(pts[0].t).toFixed(1)}Z`;
  s.append(svg("path", { d: area, class: "area" }));
  s.append(svg("path", { d, class: "line" }));
  return s;
}

// ago says how long ago an RFC 3339 time was.
export function ago(rfc) {
  const t = Date.parse(rfc);
  if (!Number.isFinite(t)) return "never";
  const s = Math.max(0, Math.round((Date.now() - t) / 1000));
  if (s < 90) return `${s} s ago`;
  if (s < 5400) return `${Math.round(s / 60)} min ago`;
  if (s < 172800) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} days ago`;
}

// Game titles by the API's game name (the master's catalogue names).
const TITLES = {
  Quake3Arena: "Quake III Arena", et: "Enemy Territory", wolfmp: "RtCW", OpenArena: "OpenArena",
  Xonotic: "Xonotic", Nexuiz: "Nexuiz", Quake4: "Quake 4", Doom3: "Doom 3", ut3: "UT3",
};

// gameTitle is the game's name as players know it.
export function gameTitle(game) { return TITLES[game] ?? String(game ?? ""); }

// Game type names of the Quake III family, by game (the API's game name):
// g_gametype is a number whose meaning is the game's. OpenArena's extra
// modes (5 and up) share Quake III Arena's catalogue entry.
const GAMETYPES = {
  Quake3Arena: ["Free for all", "Tournament", "Single player", "Team DM", "CTF", "One-flag CTF", "Overload",
    "Harvester", "Elimination", "CTF Elimination", "Last man standing", "Double domination", "Domination"],
  et: [null, null, "Objective", "Stopwatch", "Campaign", "Last man standing"],
  wolfmp: [null, null, null, null, null, "Objective", "Stopwatch", "Checkpoint"],
};

// gametypeName is a game type as a player reads it ("CTF" for
// Quake3Arena's 4); anything not in the table is shown as the server sent it.
export function gametypeName(game, gt) {
  const s = String(gt ?? "");
  if (!/^[0-9]{1,2}$/.test(s)) return s;
  return GAMETYPES[game]?.[Number(s)] ?? s;
}
