// The detail panel: one server's facts, its players from the master's last
// re-probe and its player history (GET /api/v1/servers/{address}).

import { el, colourName, plainName, countryName, flag, historyChart, ago, gametypeName, gameTitle } from "./quake.js";

const $ = sel => document.querySelector(sel);
const panel = $("#detail");
let current = "";     // the address shown
let opener = null;    // what had focus before, to return to on close
let ctl = null;

export function detailAddress() { return current; }

export async function openDetail(address, row) {
  if (current !== address) opener = row?.querySelector("a.open") ?? document.activeElement;
  current = address;
  document.querySelectorAll("tr.selected").forEach(r => r.classList.remove("selected"));
  row?.classList.add("selected");
  panel.hidden = false;
  panel.setAttribute("aria-busy", "true");
  $("#detail-name").replaceChildren(address);
  $("#detail-addr").textContent = "Loading…";
  panel.focus();
  await refreshDetail();
}

export async function refreshDetail() {
  const address = current;
  if (!address) return;
  ctl?.abort();
  ctl = new AbortController();
  try {
    const r = await fetch("/api/v1/servers/" + encodeURIComponent(address), { cache: "no-cache", signal: ctl.signal });
    const d = await r.json().catch(() => null);
    if (address !== current) return;
    if (!r.ok) {
      $("#detail-addr").textContent = d?.error?.message ?? `the master answered ${r.status}`;
      return;
    }
    fill(d);
  } catch (e) {
    if (e.name !== "AbortError") $("#detail-addr").textContent = "Could not load: " + e.message;
  } finally {
    if (address === current) panel.removeAttribute("aria-busy");
  }
}

export function closeDetail(fromUser) {
  if (!current) return;
  current = "";
  ctl?.abort();
  panel.hidden = true;
  document.querySelectorAll("tr.selected").forEach(r => r.classList.remove("selected"));
  if (fromUser) {
    history.pushState(null, "", location.pathname + location.search);
    opener?.focus?.();
  }
}

$("#detail-close").addEventListener("click", () => closeDetail(true));
document.addEventListener("keydown", ev => {
  if (ev.key === "Escape" && current) closeDetail(true);
});

function fill(d) {
  $("#detail-name").replaceChildren(colourName(d.name));
  $("#detail-addr").replaceChildren(el("code", { text: d.address }), " · connect with ",
    el("code", { text: `/connect ${d.address}` }));
  const facts = [
    ["Game", `${gameTitle(d.game)}${d.protocol ? ` (protocol ${d.protocol})` : ""}`],
    ["Map", d.map],
    ["Game type", gametypeName(d.game, d.gametype) === (d.gametype ?? "") ? d.gametype : `${gametypeName(d.game, d.gametype)} (${d.gametype})`],
    ["Players", `${d.humans ?? d.players} humans, ${d.bots} bots` + (d.suspected_bots ? `, ${d.suspected_bots} suspected bots` : "") + ` of ${d.max_players} slots`],
    ["Country", `${flag(d.country)} ${countryName(d.country)}`.trim()],
    ["Network", d.asn ? `AS${d.asn} ${d.network ?? ""}`.trim() : d.network],
    ["Also listed as", d.also_listed_as?.join(", ")],
    ["Clone of", d.clone_of],
    ["Ping", !Number.isFinite(d.ping_estimate_ms) ? null : Number.isFinite(d.ping_low_ms)
      ? `${d.ping_low_ms}–${d.ping_estimate_ms} ms (estimate from the landmark masters' measurements)`
      : `~${Math.round(d.ping_estimate_ms)} ms (estimate)`],
    ["First seen", d.first_seen ? `${new Date(d.first_seen).toLocaleString()} (${ago(d.first_seen)})` : null],
    ["Last verified", d.last_verified ? `${new Date(d.last_verified).toLocaleString()} (${ago(d.last_verified)})` : "not yet"],
  ];
  $("#detail-facts").replaceChildren(...facts.filter(f => f[1]).flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: v })]));

  const players = [...(d.player_list ?? [])].sort((a, b) => (b.score ?? 0) - (a.score ?? 0) || plainName(a.name).localeCompare(plainName(b.name)));
  $("#detail-players tbody").replaceChildren(...players.map(p => el("tr", {},
    el("td", {}, p.page ? el("a", { href: p.page, title: "where they played recently" }, colourName(p.name)) : colourName(p.name)),
    el("td", { class: "num", text: p.score ?? "" }),
    el("td", { class: "num", text: p.ping ?? "" }))));
  $("#detail-players").hidden = players.length === 0;
  $("#detail-noplayers").hidden = players.length > 0;
  $("#detail-noplayers").textContent = d.players > 0
    ? "No player list yet: the master reads it at its next re-probe of the server."
    : "Nobody was playing at the last check.";

  const h = d.history ?? {};
  $("#detail-chart").replaceChildren(historyChart(h.points, d.max_players, h.resolution_s));

  const info = Object.entries(d.info ?? {}).sort((a, b) => a[0].localeCompare(b[0]));
  $("#detail-info").replaceChildren(...info.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: v })]));
}
