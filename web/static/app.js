// The server browser: reads /api/v1/servers and /api/v1/meta, keeps its
// view in the URL's query string (the API's own parameter names, so a link
// reproduces the view), and refreshes while visible.
//
// The refresh rule: a refresh never moves a row. Cells are updated in
// place, a server that appeared is added at the bottom (marked new), one
// that left is greyed (marked gone), and when the fresh order differs a
// banner offers "Re-sort now". Rows are re-ordered only when the reader
// asks: sorting, filtering, paging, "Re-sort now" or reloading.

import { el, colourName, plainName, countryCell, countryName, flag, COUNTRIES, sparkline, gametypeName, gameTitle } from "./quake.js";
import { openDetail, refreshDetail, closeDetail, detailAddress } from "./detail.js";
import { refreshRanking } from "./ranking.js";

// API parameters the page keeps in its URL; others are dropped.
const PARAMS = ["game", "protocol", "gametype", "country", "map", "empty", "full", "q", "sort", "order", "page", "per_page", "from"];
// Sorts whose default order is descending (the API's defaults).
const DESC_DEFAULT = new Set(["players"]);
// REFRESH_MS is the period of refreshes while the page is visible.
const REFRESH_MS = 30000;
// SEARCH_DELAY_MS is how long typing must pause before a search runs.
const SEARCH_DELAY_MS = 250;

const $ = sel => document.querySelector(sel);
const tbody = $("#servers tbody");
const form = $("#filters");

let params = readURL();
let rows = new Map();   // address -> <tr>, in the order shown
let order = [];         // the API's order of the last response
let last = null;        // the last list response
let timer = 0;
let inflight = null;

function readURL() {
  const src = new URLSearchParams(location.search);
  const p = new URLSearchParams();
  for (const [k, v] of src) if (PARAMS.includes(k) && v !== "") p.append(k, v);
  return p;
}

function writeURL(push) {
  const qs = params.toString();
  const url = (qs ? "?" + qs : location.pathname) + location.hash;
  if (push) history.pushState(null, "", url); else history.replaceState(null, "", url);
  $("#share").href = url;
}

function sortKey() { return params.get("sort") || "players"; }
function sortOrder() {
  return params.get("order") || (DESC_DEFAULT.has(sortKey()) ? "desc" : "asc");
}

// fetchList asks the API for the current view. The browser's cache
// revalidates it (If-None-Match -> 304) instead of taking a full list.
async function fetchList() {
  inflight?.abort();
  const ctl = new AbortController();
  inflight = ctl;
  const r = await fetch("/api/v1/servers?" + params.toString(), { cache: "no-cache", signal: ctl.signal });
  const body = await r.json().catch(() => null);
  if (!r.ok) {
    const e = body?.error;
    throw new Error(e ? `${e.message}` : `the master answered ${r.status}`);
  }
  return body;
}

function showError(msg) {
  const p = $("#error");
  p.textContent = msg || "";
  p.hidden = !msg;
}

// load replaces the table with the API's order: the reader asked for it.
async function load() {
  try {
    const data = await fetchList();
    showError("");
    render(data);
    refreshRanking(params);
  } catch (e) {
    if (e.name !== "AbortError") showError("Could not load the list: " + e.message);
  }
  schedule();
}

// refresh updates the rows in place (see the rule at the top).
async function refresh() {
  try {
    const data = await fetchList();
    showError("");
    if (last && data.version === last.version && sameView(data)) {
      last.generated = data.generated;
      status(data);
    } else {
      update(data);
    }
    if (detailAddress()) refreshDetail();
    refreshRanking(params);
  } catch (e) {
    if (e.name !== "AbortError") showError("Could not refresh: " + e.message);
  }
  schedule();
}

function sameView(d) { return d.page === last.page && d.total === last.total; }

function schedule() {
  clearTimeout(timer);
  if (!document.hidden) timer = setTimeout(refresh, REFRESH_MS);
}

document.addEventListener("visibilitychange", () => {
  if (document.hidden) clearTimeout(timer); else refresh();
});

function render(data) {
  last = data;
  rows = new Map();
  tbody.replaceChildren();
  for (const s of data.servers ?? []) {
    const tr = makeRow(s);
    rows.set(s.address, tr);
    tbody.append(tr);
  }
  order = (data.servers ?? []).map(s => s.address);
  $("#resort").hidden = true;
  chrome(data);
}

function update(data) {
  last = data;
  const seen = new Set();
  for (const s of data.servers ?? []) {
    seen.add(s.address);
    const tr = rows.get(s.address);
    if (tr) {
      fillRow(tr, s);
      tr.classList.remove("gone");
    } else {
      const nr = makeRow(s);
      nr.classList.add("new");
      rows.set(s.address, nr);
      tbody.append(nr);
    }
  }
  for (const [addr, tr] of rows) {
    if (!seen.has(addr) && !tr.classList.contains("gone")) {
      tr.classList.add("gone");
      tr.querySelector(".c-name .state").textContent = "left the list";
    }
  }
  order = (data.servers ?? []).map(s => s.address);
  const shown = [...rows.keys()].filter(a => seen.has(a));
  const moved = shown.length !== order.length || shown.some((a, i) => a !== order[i]) || rows.size !== order.length;
  $("#resort").hidden = !moved;
  chrome(data);
}

function makeRow(s) {
  const tr = el("tr", { "data-address": s.address });
  for (const c of ["country", "name", "game", "map", "players", "gametype", "ping", "recent"]) {
    tr.append(el("td", { class: "c-" + c }));
  }
  fillRow(tr, s);
  return tr;
}

// fillRow writes a server's cells; only changed cells are touched, so a
// refresh does not disturb a reader's selection or focus.
function fillRow(tr, s) {
  const set = (cls, key, make) => {
    const td = tr.querySelector(".c-" + cls);
    if (td.dataset.key === key) return;
    td.dataset.key = key;
    td.replaceChildren(...[].concat(make()));
  };
  set("country", s.country ?? "", () => countryCell(s.country));
  set("name", JSON.stringify([s.name, s.address, s.game, s.map, s.country, s.also_listed_as ?? []]), () => {
    const a = el("a", { href: "#server=" + encodeURIComponent(s.address), class: "open", title: plainName(s.name) },
      colourName(s.name));
    a.addEventListener("click", ev => { ev.preventDefault(); show(s.address, tr); });
    return [a, el("span", { class: "state" }),
      el("span", { class: "sub" }, el("span", { class: "addr", text: s.address }),
        // One game server listed under several addresses: shown once.
        ...(s.also_listed_as?.length ? [el("span", { class: "aka", title: s.also_listed_as.join("\n"),
          text: ` also listed as ${s.also_listed_as.length} more` })] : []),
        el("span", { class: "phone", text: `${flag(s.country)} ${gameTitle(s.game)} · ${s.map}`.trim() }))];
  });
  set("game", s.game ?? "", () => el("span", { title: s.game, text: gameTitle(s.game) }));
  set("map", s.map ?? "", () => s.map ?? "");
  const pk = `${s.players}/${s.max_players}/${s.bots}/${s.suspected_bots}`;
  set("players", pk, () => {
    const full = s.max_players > 0 && s.players >= s.max_players;
    const frac = s.max_players > 0 ? Math.min(1, s.players / s.max_players) : 0;
    const meter = el("span", { class: "meter", "aria-hidden": "true" }, el("span", { style: null }));
    meter.firstChild.style.width = (frac * 100).toFixed(0) + "%";
    // Humans of the slots, the bots (and suspected bots) apart: a server
    // of bots is no game.
    const humans = s.humans ?? Math.max(0, s.players - (s.bots ?? 0));
    const bots = (s.bots ?? 0) + (s.suspected_bots ?? 0);
    const num = el("span", { class: "num" + (full ? " full" : humans === 0 ? " zero" : ""),
      title: `${humans} ${humans === 1 ? "person" : "people"}, ${s.bots ?? 0} bots` +
        (s.suspected_bots ? `, ${s.suspected_bots} suspected bots` : "") + `, ${s.max_players} slots`,
      text: `${humans}/${s.max_players}` });
    return bots ? [num, el("span", { class: "bots", text: `+${bots} bot${bots === 1 ? "" : "s"}` }), meter] : [num, meter];
  });
  set("gametype", `${s.game}/${s.gametype ?? ""}`, () => {
    const name = gametypeName(s.game, s.gametype);
    return name === (s.gametype ?? "") ? name : el("span", { title: `game type ${s.gametype}`, text: name });
  });
  const ping = s.ping_estimate_ms, low = s.ping_low_ms;
  // Where landmark masters measured the server, the estimate is the
  // tightest bound through them and the range shows its uncertainty.
  set("ping", `${ping ?? ""}/${low ?? ""}`, () => !Number.isFinite(ping) ? ""
    : Number.isFinite(low)
      ? el("span", { class: "ping-range", title: `between ${low} and ${ping} ms: the landmark masters' measurements and the latency model`,
          text: `${low}–${ping} ms` })
      : el("span", { title: "estimate from the latency model between countries, not measured", text: `~${Math.round(ping)} ms` }));
  const rk = JSON.stringify(s.recent_players ?? []) + "/" + s.max_players;
  set("recent", rk, () => sparkline(s.recent_players, s.max_players));
}

// chrome updates everything around the rows: headings, pager, status.
function chrome(data) {
  const pingKnown = !!data.from;
  document.querySelectorAll(".c-ping").forEach(c => { c.hidden = !pingKnown; });
  for (const th of document.querySelectorAll("th[data-sort]")) {
    const on = th.dataset.sort === sortKey();
    th.setAttribute("aria-sort", on ? (sortOrder() === "desc" ? "descending" : "ascending") : "none");
  }
  const pages = Math.max(1, Math.ceil((data.total ?? 0) / (data.per_page || 100)));
  $("#pageinfo").textContent = `Page ${data.page ?? 1} of ${pages}`;
  $("#prev").disabled = (data.page ?? 1) <= 1;
  $("#next").disabled = (data.page ?? 1) >= pages;
  $("#pager").hidden = pages <= 1;
  $("#empty-list").hidden = (data.servers ?? []).length > 0;
  status(data);
}

function status(data) {
  const when = new Date(data.generated || Date.now()).toLocaleTimeString();
  let s = `${data.total ?? 0} server${data.total === 1 ? "" : "s"} · updated ${when} · refreshes every ${REFRESH_MS / 1000} s`;
  if (data.from) s += ` · ping estimated from ${countryName(data.from)}${params.get("from") ? "" : " (your address)"}`;
  $("#status").textContent = s;
}

// The reader's actions: each re-orders the rows by the API's order.
function change(mutate, keepPage) {
  mutate();
  if (!keepPage) params.delete("page");
  writeURL(true);
  syncForm();
  load();
}

for (const th of document.querySelectorAll("th[data-sort]")) {
  th.querySelector("button").addEventListener("click", () => change(() => {
    const key = th.dataset.sort;
    if (key === sortKey()) {
      params.set("order", sortOrder() === "desc" ? "asc" : "desc");
    } else {
      params.set("sort", key);
      params.delete("order");
    }
    if (params.get("sort") === "players" && params.get("order") === "desc") { params.delete("sort"); params.delete("order"); }
  }, true));
}

let searchTimer = 0;
form.addEventListener("input", ev => {
  const t = ev.target;
  if (t.name === "q") {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => change(() => setParam("q", t.value.trim())), SEARCH_DELAY_MS);
  }
});
form.addEventListener("change", ev => {
  const t = ev.target;
  if (t.name === "q") return;
  change(() => setParam(t.name, t.type === "checkbox" ? (t.checked ? t.value : "") : t.value));
});
form.addEventListener("submit", ev => {
  ev.preventDefault();
  clearTimeout(searchTimer);
  change(() => setParam("q", form.elements.q.value.trim()));
});

function setParam(k, v) { if (v) params.set(k, v); else params.delete(k); }

$("#prev").addEventListener("click", () => change(() => params.set("page", Math.max(1, (last?.page ?? 1) - 1)), true));
$("#next").addEventListener("click", () => change(() => params.set("page", (last?.page ?? 1) + 1), true));
$("#resort-now").addEventListener("click", () => load());
$("#refresh").addEventListener("click", () => refresh());

window.addEventListener("popstate", () => { params = readURL(); syncForm(); load(); route(); });
window.addEventListener("hashchange", route);

// labelGametypes names the game type choices after the chosen game's
// meaning of them (g_gametype 4 is CTF in Quake III, Campaign in ET).
function labelGametypes() {
  const game = params.get("game") ?? "";
  for (const o of form.elements.gametype.options) {
    if (!o.value) continue;
    const name = gametypeName(game, o.value);
    o.textContent = name === o.value ? o.value : `${name} (${o.value})`;
  }
}

function syncForm() {
  for (const f of form.elements) {
    if (!f.name) continue;
    if (f.type === "checkbox") f.checked = params.get(f.name) === f.value;
    else if (f.tagName === "SELECT") {
      const v = params.get(f.name) ?? "";
      if (v && ![...f.options].some(o => o.value === v)) f.append(el("option", { value: v, text: v }));
      f.value = v;
    } else f.value = params.get(f.name) ?? "";
  }
  labelGametypes();
}

function fillSelect(name, values, label) {
  const sel = form.elements[name];
  const keep = sel.value;
  for (const v of values ?? []) {
    if ([...sel.options].some(o => o.value === v)) continue;
    sel.append(el("option", { value: v, text: label ? label(v) : v }));
  }
  sel.value = keep;
}

async function loadMeta() {
  try {
    const r = await fetch("/api/v1/meta", { cache: "no-cache" });
    if (!r.ok) return;
    const m = await r.json();
    fillSelect("game", m.games, gameTitle);
    fillSelect("gametype", m.gametypes);
    labelGametypes();
    fillSelect("map", m.maps);
    fillSelect("country", m.countries, cc => `${flag(cc)} ${countryName(cc)}`.trim());
  } catch { /* the filters still work with what the URL gave */ }
}

fillSelect("from", COUNTRIES.map(cc => [countryName(cc), cc]).sort().map(x => x[1]), cc => `${flag(cc)} ${countryName(cc)}`);

// The detail panel follows the URL's fragment (#server=ADDRESS).
function route() {
  const m = /^#server=(.+)$/.exec(location.hash);
  if (m) openDetail(decodeURIComponent(m[1]), rows.get(decodeURIComponent(m[1])));
  else closeDetail(false);
}

function show(address, tr) {
  history.pushState(null, "", "#server=" + encodeURIComponent(address));
  openDetail(address, tr);
}

tbody.addEventListener("click", ev => {
  if (ev.target.closest("a")) return;
  const tr = ev.target.closest("tr[data-address]");
  if (tr) show(tr.dataset.address, tr);
});

// A shared #server=ADDRESS link goes to the server's own page, which the
// master renders with its title and description (link previews); the
// panel opened from the list keeps the fragment.
{
  const m = /^#server=(.+)$/.exec(location.hash);
  if (m) location.replace("/servers/" + decodeURIComponent(m[1]));
}

syncForm();
writeURL(false);
loadMeta();
load().then(route);
